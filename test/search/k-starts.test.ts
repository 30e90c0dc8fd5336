/**
 * Where a vector look-up's k starts for a new query (src/search/k-starts.ts): from the bottom until
 * enough look-ups are on record, then at the largest level a third of the recent ones needed — and
 * back down once the account's queries stop needing it.
 */
import { describe, expect, it } from "vitest";
import { KStarts } from "../../src/search/k-starts.ts";

/** A look-up that ended at `ended` and kept `kept` of `returned` answers (max k 1000). */
const end = (s: KStarts, key: string, ended: number, kept: number, returned = ended) =>
  s.noteEnd(key, ended, returned, kept, 1000);

describe("a vector look-up's starting k", () => {
  it("starts at the bottom until eight look-ups are on record", () => {
    const s = new KStarts(128);
    for (let i = 0; i < 7; i++) end(s, "a", 512, 300);
    expect(s.start("a", 1000)).toBe(128);
    end(s, "a", 512, 300);
    expect(s.start("a", 1000)).toBe(512);
    // Another key (account, mode or scope) has its own record.
    expect(s.start("b", 1000)).toBe(128);
  });

  it("starts at the largest level at least a third of the recent look-ups needed, within the request's k", () => {
    const s = new KStarts(128);
    // 20 needed 128, 12 needed 512 (12 of 32 ≥ a third): start at 512; 1000 only once: not there.
    for (let i = 0; i < 20; i++) end(s, "a", 128, 10);
    for (let i = 0; i < 11; i++) end(s, "a", 512, 200);
    end(s, "a", 1000, 900);
    expect(s.start("a", 1000)).toBe(512);
    // A smaller request k caps it (the shots' 300).
    expect(s.start("a", 300)).toBe(300);
    // Fewer than a third at 512: the bottom.
    const t = new KStarts(128);
    for (let i = 0; i < 22; i++) end(t, "a", 128, 10);
    for (let i = 0; i < 10; i++) end(t, "a", 512, 200);
    expect(t.start("a", 1000)).toBe(128);
  });

  it("records what a look-up needed, not where it started, so a high start comes down again", () => {
    const s = new KStarts(128);
    for (let i = 0; i < 32; i++) end(s, "a", 512, 300);
    expect(s.start("a", 1000)).toBe(512);
    // Queries that now start at 512 but keep fewer than 64 answers would have stopped at 128.
    for (let i = 0; i < 22; i++) end(s, "a", 512, 40);
    expect(s.start("a", 1000)).toBe(128);
    // An index with fewer rows than k: 90 answers at 512 means the walk stops at 128 as well.
    const t = new KStarts(128);
    for (let i = 0; i < 32; i++) end(t, "a", 512, 90, 90);
    expect(t.start("a", 1000)).toBe(128);
    // 200 answers, all over the cut: 128 would have asked again, 512 was needed.
    const u = new KStarts(128);
    for (let i = 0; i < 32; i++) end(u, "a", 512, 200, 200);
    expect(u.start("a", 1000)).toBe(512);
  });

  it("keeps a bounded number of keys, the least recently noted out first", () => {
    const s = new KStarts(128, 2);
    for (const key of ["a", "b"]) for (let i = 0; i < 8; i++) end(s, key, 512, 300);
    end(s, "a", 512, 300);
    for (let i = 0; i < 8; i++) end(s, "c", 512, 300);
    expect(s.size).toBe(2);
    expect(s.start("a", 1000)).toBe(512);
    expect(s.start("c", 1000)).toBe(512);
    // b was noted least recently: forgotten.
    expect(s.start("b", 1000)).toBe(128);
  });
});
