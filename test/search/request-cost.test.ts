/**
 * What a text search no longer redoes on every request (issue 27's per-request cost), with the rule
 * that keeps it correct: scene text's per-shot labels and stems are reused only while the shot's
 * text is the one they came from; and an unmetered account's charge takes no write transaction, while
 * a metered one is still charged. (The SQLite statement cache: store/conformance/statement-cache.)
 */
import { describe, expect, it } from "vitest";
import { nowIso } from "../../src/core/ids.ts";
import { CreditService } from "../../src/credits/service.ts";
import { labelsOf } from "../../src/search/store.ts";
import { ShotStems } from "../../src/search/text-match.ts";
import { openStores } from "../helpers/stores.ts";
import { tempDir } from "../helpers/temp.ts";
import { testBackend } from "../pg/backend.ts";

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

describe("a search's charge", () => {
  // The embedded store's one writer connection is what a needless transaction held; PostgreSQL's
  // units of work each take a pooled connection, so there is no writer to wait for there.
  it.skipIf(testBackend() === "postgres")(
    "takes no write transaction for an unmetered account, and still charges a metered one",
    async () => {
      const s = openStores(tempDir("vsearch-charge-"));
      try {
        for (const id of ["usr_free", "usr_paid"])
          await s.accounts.insertAccount({ id, name: id, plan: "free", credits_balance: null, created_at: nowIso() });
        const uow = { run: s.transaction } as ConstructorParameters<typeof CreditService>[0];
        const credits = new CreditService(
          uow,
          s.credits,
          s.events,
          { perMinute: 1, perSearch: 0.5, lowThreshold: 0 },
          { publish() {} },
        );
        await credits.grant("usr_paid", 2);
        // Another flow's transaction holds the writer until released.
        let release!: () => void;
        const held = new Promise<void>((r) => {
          release = r;
        });
        const writer = s.transaction(async () => await held);
        const free = credits.chargeSearch("usr_free").then(() => "charged");
        const paid = credits.chargeSearch("usr_paid").then(() => "charged");
        // A timer fires only after every promise already settled has run its callbacks: the
        // unmetered charge (one read) is done by then; the metered one waits for the writer.
        const waited = new Promise((r) => setTimeout(() => r("waiting"), 20));
        expect(await Promise.race([free, waited])).toBe("charged");
        expect(await Promise.race([paid, waited])).toBe("waiting");
        release();
        await writer;
        expect(await paid).toBe("charged");
        expect(await s.credits.balance("usr_paid")).toBe(1.5);
        expect(await s.credits.balance("usr_free")).toBeNull();
      } finally {
        s.close();
      }
    },
  );
});
