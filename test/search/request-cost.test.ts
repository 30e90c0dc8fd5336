/**
 * What a text search no longer redoes on every request (issue 27's per-request cost), with the rule
 * that keeps it correct: scene text's per-shot labels and stems are reused only while the shot's
 * text is the one they came from. (The SQLite statement cache: store/conformance/statement-cache.)
 */
import { describe, expect, it } from "vitest";
import { labelsOf } from "../../src/search/store.ts";
import { ShotStems } from "../../src/search/text-match.ts";

const shot = (id: number, labels: string[], caption: string | null) => ({
  id,
  labels: JSON.stringify(labels.map((label) => ({ label, score: 0.9 }))),
  caption,
});

describe("scene text's per-shot stems", () => {
  it("are kept by shot id and never answer for text that changed under the same id", () => {
    const stems = new ShotStems(labelsOf);
    const dog = stems.of(shot(1, ["dogs"], "a man running on the beach"));
    expect(dog.labels).toEqual(["dogs"]);
    expect([...dog.stems].sort()).toEqual(["a", "beach", "dog", "man", "on", "run", "the"]);
    // The same text again (new row objects, as each query reads them): the same entry.
    expect(stems.of(shot(1, ["dogs"], "a man running on the beach"))).toBe(dog);
    // Re-indexed, or the id reused by other content: labels or caption differ, so it is redone.
    const cat = stems.of(shot(1, ["cats"], "a man running on the beach"));
    expect(cat.labels).toEqual(["cats"]);
    expect(cat.stems).toContain("cat");
    expect(cat.stems).not.toContain("dog");
    expect(stems.of(shot(1, ["cats"], null)).stems).not.toContain("beach");
  });

  it("keeps at most its bound, the least recently used out first", () => {
    const stems = new ShotStems(labelsOf, 2);
    const a = stems.of(shot(1, ["a"], null));
    stems.of(shot(2, ["b"], null));
    expect(stems.of(shot(1, ["a"], null))).toBe(a);
    stems.of(shot(3, ["c"], null));
    expect(stems.size).toBe(2);
    expect(stems.of(shot(1, ["a"], null))).toBe(a);
    // 2 was the least recently used: made again.
    const b = stems.of(shot(2, ["b"], null));
    expect(b.labels).toEqual(["b"]);
    expect(stems.size).toBe(2);
  });
});
