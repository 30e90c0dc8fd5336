/**
 * What a text search no longer redoes on every request (issue 27's per-request cost), each with the
 * rule that keeps it correct: SQLite statements stay compiled across requests, and scene text's
 * per-shot stems are reused only while the shot's text is the one they came from.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { testBackend } from "../pg/backend.ts";
import { labelsOf } from "../../src/search/store.ts";
import { ShotStems } from "../../src/search/text-match.ts";
import { openSqliteStore } from "../../src/store/sqlite/database.ts";
import { tempDir } from "../helpers/temp.ts";

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

// The statement cache is bun:sqlite's; PostgreSQL has no such cache to keep.
describe.skipIf(testBackend() === "postgres")("the SQLite store's compiled statements", () => {
  it("stay compiled across more distinct statements than bun:sqlite's default cache of 20", async () => {
    // A text search at 100 k frames runs ~43 distinct statements over its requests (the id lists
    // padded to a few lengths, the full-text look-ups, auth, credits); with 20 kept, each request
    // compiled again the ones the previous request had evicted.
    const dir = tempDir("vsearch-statements-");
    const store = openSqliteStore(join(dir, "s.db"));
    const query = Database.prototype.query;
    try {
      const compiled = new Map<string, unknown>();
      let recompiled = 0;
      Database.prototype.query = function (this: Database, sql: string) {
        const stmt = query.call(this, sql);
        if (compiled.has(sql) && compiled.get(sql) !== stmt) recompiled++;
        compiled.set(sql, stmt);
        return stmt;
      } as typeof query;
      const texts = Array.from({ length: 60 }, (_, i) => `SELECT ${i} AS n, count(*) AS c FROM schema_migrations`);
      for (let round = 0; round < 3; round++)
        for (const [i, sql] of texts.entries())
          expect(await store.exec.get<{ n: number }>(sql)).toMatchObject({ n: i });
      expect(compiled.size).toBe(60);
      expect(recompiled).toBe(0);
    } finally {
      Database.prototype.query = query;
      store.close();
    }
  });
});
