import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { createMemoryVectorSource, createVectorIndex, type SearchStats } from "../../src/vector/index.ts";
import { exactTopK, indexOf, recallAt, row } from "./helpers.ts";

const dim = 512;
const newStats = (): SearchStats => ({
  path: "empty",
  allowed: 0,
  coarse: 0,
  middle: 0,
  rescored: 0,
  ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
});

// 40 000 clustered rows: above the sampling threshold (256 chunks = 32 768 rows), so the whole
// approximate path runs; built once for the read-only tests.
const big = generateDataset({ n: 40_000, dim, kind: "clustered", seed: 11, collections: 8 });
const bigIndex = indexOf(big).index;

describe("recall against an exact scan (clustered set)", () => {
  it.each(["text", "image"] as const)("recall@10 ≥ 0.95 for %s queries with default settings", (kind) => {
    const Q = generateQueries(big, 25, kind, 3);
    let sum = 0;
    const stats = newStats();
    for (let i = 0; i < 25; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      const got = bigIndex.search(q, { partition: "acct", k: 10, stats });
      expect(stats.path).toBe("approx");
      const truth = exactTopK(big, q, 10);
      sum += recallAt(got, truth);
      // Scores are exact cosines, best first.
      for (let j = 1; j < got.length; j++) expect(got[j - 1].score).toBeGreaterThanOrEqual(got[j].score);
      const byId = new Map(truth.map((t) => [t.rowId, t.score]));
      for (const g of got) if (byId.has(g.rowId)) expect(g.score).toBeCloseTo(byId.get(g.rowId)!, 5);
    }
    expect(sum / 25).toBeGreaterThanOrEqual(0.95);
  });

  it("a tiny candidate pool really is approximate (the knob reaches the scan)", () => {
    const Q = generateQueries(big, 10, "text", 5);
    let small = 0,
      large = 0;
    for (let i = 0; i < 10; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      const truth = exactTopK(big, q, 10);
      const stats = newStats();
      small += recallAt(bigIndex.search(q, { partition: "acct", k: 10, candidates: 64, stats }), truth);
      expect(stats.coarse).toBeLessThan(64 * 4);
      large += recallAt(bigIndex.search(q, { partition: "acct", k: 10, candidates: 20_000 }), truth);
    }
    expect(small).toBeLessThan(large);
    expect(large / 10).toBeGreaterThanOrEqual(0.95);
  });
});

describe("raising k for the same query", () => {
  const Q = generateQueries(big, 4, "text", 21);

  it("takes the coarse pass from the earlier search and answers exactly as a fresh search", () => {
    for (let i = 0; i < 4; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      const reuse = {};
      const allow = { collections: [0, 1, 2, 3, 4, 5] };
      const first = newStats();
      bigIndex.search(q, { partition: "acct", k: 128, allow, reuse, stats: first });
      const second = newStats();
      const again = bigIndex.search(q, { partition: "acct", k: 512, allow, reuse, stats: second });
      expect(first.scanReused).toBe(false);
      expect(second.scanReused).toBe(true);
      expect(second.coarse).toBe(first.coarse);
      expect(again).toEqual(bigIndex.search(q, { partition: "acct", k: 512, allow }));
    }
  });

  it("does not reuse across another query, another filter object, or a changed index", () => {
    const ds = generateDataset({ n: 36_000, dim, kind: "clustered", seed: 5 });
    const { index, source } = indexOf(ds);
    const q = Q.subarray(0, dim);
    const reuse = {};
    const allow = {};
    index.search(q, { partition: "acct", k: 64, allow, reuse });
    const other = newStats();
    index.search(Q.subarray(dim, 2 * dim), { partition: "acct", k: 64, allow, reuse, stats: other });
    expect(other.scanReused).toBe(false);
    const otherAllow = newStats();
    index.search(Q.subarray(dim, 2 * dim), { partition: "acct", k: 64, allow: {}, reuse, stats: otherAllow });
    expect(otherAllow.scanReused).toBe(false);
    // The index changes between two searches of one query: scanned again, and the new row is found.
    index.search(q, { partition: "acct", k: 64, allow, reuse });
    source.set(999_999, q);
    index.add([{ rowId: 999_999, vector: q, partition: "acct", groupA: 0, groupB: 0 }]);
    const changed = newStats();
    const got = index.search(q, { partition: "acct", k: 64, allow, reuse, stats: changed });
    expect(changed.scanReused).toBe(false);
    expect(got[0]).toEqual({ rowId: 999_999, score: expect.closeTo(1, 5) });
  });

  it("rescores max(rescoreMin, 4k) rows for small k and k + 256 for large k", () => {
    const q = Q.subarray(0, dim);
    const sizes = (opts: { rescore?: number } = {}) =>
      [10, 128, 512].map((k) => {
        const st = newStats();
        bigIndex.search(q, { partition: "acct", k, stats: st, ...opts });
        return [st.rescored, st.middle];
      });
    const def = sizes();
    // rescoreMin defaults to 128 with the 2-bit middle pass (64 with refineBits 4), and 1/16 of the middle stage (1 024 rows here).
    expect(def.map(([r]) => r)).toEqual([128, 384, 768]);
    expect(def[2][1]).toBeGreaterThanOrEqual(4 * 512); // the middle stage still keeps 4k
    // A caller's `rescore` wins (at least k), and widens the middle stage when it must.
    expect(sizes({ rescore: 3000 }).map(([r]) => r)).toEqual([3000, 3000, 3000]);
    expect(sizes({ rescore: 1 }).map(([r]) => r)).toEqual([10, 128, 512]);
    // A wide middle stage (more candidates): the 2-bit layout rescores 1/16 of it, above the 128 floor.
    const wide = newStats();
    bigIndex.search(q, { partition: "acct", k: 10, candidates: 40_000, stats: wide });
    expect(wide.middle / 16).toBeGreaterThan(128);
    expect(wide.rescored).toBe(Math.ceil(wide.middle / 16));
  });

  it("rescoreMin sets the fewest rows rescored (refineBits 4 keeps 64)", () => {
    const st = newStats();
    const small4k = generateDataset({ n: 4000, dim, kind: "clustered", seed: 12 });
    const four = indexOf(small4k, { refineBits: 4 }).index;
    four.search(Q.subarray(0, dim), { partition: "acct", k: 10, stats: st });
    expect(st.rescored).toBe(64);
    const more = indexOf(small4k, { rescoreMin: 200 }).index;
    more.search(Q.subarray(0, dim), { partition: "acct", k: 10, stats: st });
    expect(st.rescored).toBe(200);
  });
});

describe("filters are applied before ranking", () => {
  const Q = generateQueries(big, 8, "image", 9);

  it("a collection filter that excludes the global top-k still returns the true top-k of the allowed rows", () => {
    for (let i = 0; i < 8; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      const globalTop = exactTopK(big, q, 10);
      const topCollection = big.collection[globalTop[0].rowId - 1000];
      const others = [0, 1, 2, 3, 4, 5, 6, 7].filter((c) => c !== topCollection);
      const truth = exactTopK(big, q, 10, (r) => others.includes(big.collection[r]));
      const stats = newStats();
      const got = bigIndex.search(q, { partition: "acct", k: 10, allow: { collections: others }, stats });
      expect(stats.path).toBe("approx");
      expect(got.some((g) => g.rowId === globalTop[0].rowId)).toBe(false);
      for (const g of got) expect(others).toContain(big.collection[g.rowId - 1000]);
      expect(recallAt(got, truth)).toBeGreaterThanOrEqual(0.9);
      expect(got).toHaveLength(10);
    }
  });

  it("a video filter (few rows) is answered exactly, with the top-k of that video only", () => {
    const q = Q.subarray(0, dim);
    const video = big.video[exactTopK(big, q, 50)[49].rowId - 1000];
    const truth = exactTopK(big, q, 5, (r) => big.video[r] === video);
    const stats = newStats();
    const got = bigIndex.search(q, { partition: "acct", k: 5, allow: { videos: [video] }, stats });
    expect(stats.path).toBe("exact");
    expect(got.map((g) => g.rowId)).toEqual(truth.map((t) => t.rowId));
  });

  it("collections and videos combine (AND), unknown ids allow nothing", () => {
    const q = Q.subarray(dim, 2 * dim);
    const videos = [big.video[5000], big.video[15000], big.video[25000]];
    const coll = big.collection[15000];
    const truth = exactTopK(big, q, 10, (r) => videos.includes(big.video[r]) && big.collection[r] === coll);
    const got = bigIndex.search(q, { partition: "acct", k: 10, allow: { videos, collections: [coll] } });
    expect(got.map((g) => g.rowId)).toEqual(truth.map((t) => t.rowId));
    expect(bigIndex.search(q, { partition: "acct", k: 10, allow: { collections: [424242] } })).toEqual([]);
    expect(bigIndex.search(q, { partition: "acct", k: 10, allow: { videos: [] } })).toEqual([]);
  });

  it("long id lists (the lookup-table mask) filter the same way", () => {
    const q = Q.subarray(3 * dim, 4 * dim);
    const videos = Array.from({ length: 40 }, (_, i) => big.video[i * 997]);
    const truth = exactTopK(big, q, 10, (r) => videos.includes(big.video[r]));
    const stats = newStats();
    const got = bigIndex.search(q, { partition: "acct", k: 10, allow: { videos }, stats });
    expect(stats.allowed).toBe(big.video.filter((v) => videos.includes(v)).length);
    expect(got.map((g) => g.rowId)).toEqual(truth.map((t) => t.rowId));
  });

  it("excluded rows (hidden segments) never come back and their places are filled from the rest", () => {
    const q = Q.subarray(2 * dim, 3 * dim);
    const top = exactTopK(big, q, 10);
    const hidden = new Set(top.slice(0, 5).map((t) => t.rowId));
    const truth = exactTopK(big, q, 10, (r) => !hidden.has(1000 + r));
    const got = bigIndex.search(q, { partition: "acct", k: 10, allow: { excludeRowIds: hidden } });
    for (const g of got) expect(hidden.has(g.rowId)).toBe(false);
    expect(recallAt(got, truth)).toBeGreaterThanOrEqual(0.9);
  });
});

describe("small partitions, edge cases", () => {
  const small = generateDataset({ n: 3000, dim, kind: "clustered", seed: 21, framesPerVideo: 60 });

  it("partitions are isolated: another account's rows never appear", () => {
    // Even rows in account A, odd rows in account B: every query's true neighbours are split.
    const { index } = indexOf(small, {}, (i) => (i % 2 ? "B" : "A"));
    expect(index.partitionSize("A") + index.partitionSize("B")).toBe(3000);
    const Q = generateQueries(small, 10, "image", 2);
    for (let i = 0; i < 10; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      const got = index.search(q, { partition: "B", k: 20 });
      expect(got).toHaveLength(20);
      for (const g of got) expect((g.rowId - 1000) % 2).toBe(1);
      expect(got.map((g) => g.rowId)).toEqual(exactTopK(small, q, 20, (r) => r % 2 === 1).map((t) => t.rowId));
    }
    expect(index.search(Q.subarray(0, dim), { partition: "C", k: 5 })).toEqual([]);
  });

  it("the approximate path on a small partition finds the exact top-k", () => {
    const { index } = indexOf(small, { exactBelow: 100 });
    const Q = generateQueries(small, 10, "text", 4);
    let sum = 0;
    const stats = newStats();
    for (let i = 0; i < 10; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      sum += recallAt(index.search(q, { partition: "acct", k: 10, stats }), exactTopK(small, q, 10));
      expect(stats.path).toBe("approx");
    }
    expect(sum / 10).toBeGreaterThanOrEqual(0.97);
  });

  it("remove: removed rows are gone, moved rows stay findable, emptied partitions disappear", () => {
    const { index } = indexOf(small, { exactBelow: 100 });
    const q = generateQueries(small, 1, "image", 8);
    const top = exactTopK(small, q, 10);
    // Remove the 5 best and every third row: slots get refilled from the tail.
    const gone = new Set([
      ...top.slice(0, 5).map((t) => t.rowId),
      ...Array.from({ length: 1000 }, (_, i) => 1000 + 3 * i),
    ]);
    expect(index.remove([...gone, 999_999])).toBe(gone.size);
    expect(index.size).toBe(3000 - gone.size);
    for (const id of gone) expect(index.has(id)).toBe(false);
    const truth = exactTopK(small, q, 10, (r) => !gone.has(1000 + r));
    const got = index.search(q, { partition: "acct", k: 10 });
    for (const g of got) expect(gone.has(g.rowId)).toBe(false);
    expect(recallAt(got, truth)).toBeGreaterThanOrEqual(0.9);
    // Every remaining row can still be found as its own nearest neighbour.
    for (let i = 1; i < 3000; i += 97) {
      if (gone.has(1000 + i)) continue;
      expect(index.search(row(small, i), { partition: "acct", k: 1 })[0].rowId).toBe(1000 + i);
    }
    index.remove(Array.from({ length: 3000 }, (_, i) => 1000 + i));
    expect(index.size).toBe(0);
    expect(index.partitionSize("acct")).toBe(0);
    expect(index.search(q, { partition: "acct", k: 10 })).toEqual([]);
    // And the freed space is reused.
    const before = index.memoryBytes;
    index.add([{ rowId: 1, vector: row(small, 7), partition: "acct", groupA: 0, groupB: 0 }]);
    expect(index.memoryBytes).toBeLessThanOrEqual(before + 64 * 1024);
  });

  it("stale codes left past the end of a partition (removed rows) never come back", () => {
    const source = createMemoryVectorSource();
    const index = createVectorIndex({ dim, source, exactBelow: 0 });
    const q = row(small, 1234);
    // Rows 250..299 are near-copies of the query; removing them leaves their codes in the
    // unused tail of the last chunk, where the unmasked scan still sees them.
    const rows = Array.from({ length: 300 }, (_, i) => {
      const v = i >= 250 ? Float32Array.from(q, (x, j) => x + (j === i % dim ? 0.01 : 0)) : row(small, i);
      source.set(i + 1, v);
      return { rowId: i + 1, vector: v, partition: "acct", groupA: 0, groupB: 0 };
    });
    index.add(rows);
    expect(index.search(q, { partition: "acct", k: 1 })[0].rowId).toBeGreaterThan(250);
    index.remove(rows.slice(250).map((r) => r.rowId));
    const got = index.search(q, { partition: "acct", k: 10 });
    for (const g of got) expect(g.rowId).toBeLessThanOrEqual(250);
    expect(got.map((g) => g.rowId)).toEqual(exactTopK(small, q, 10, (i) => i < 250).map((t) => t.rowId - 999));
  });

  it("empty index and k larger than the partition", () => {
    const source = createMemoryVectorSource();
    const index = createVectorIndex({ dim, source });
    const q = row(small, 0);
    expect(index.size).toBe(0);
    expect(index.search(q, { partition: "acct", k: 10 })).toEqual([]);
    const rows = [0, 1, 2, 3, 4].map((i) => ({
      rowId: 50 + i,
      vector: row(small, i * 500),
      partition: "acct",
      groupA: 1,
      groupB: i,
    }));
    for (const r of rows) source.set(r.rowId, r.vector);
    index.add(rows);
    const got = index.search(q, { partition: "acct", k: 100 });
    expect(got.map((g) => g.rowId).sort()).toEqual([50, 51, 52, 53, 54]);
    expect(got[0]).toEqual({ rowId: 50, score: expect.closeTo(1, 5) });
  });

  it("re-adding a rowId replaces it; the source decides the reported score", () => {
    const source = createMemoryVectorSource();
    const index = createVectorIndex({ dim, source });
    source.set(1, row(small, 10));
    index.add([{ rowId: 1, vector: row(small, 10), partition: "acct", groupA: 1, groupB: 1 }]);
    source.set(1, row(small, 2000));
    index.add([{ rowId: 1, vector: row(small, 2000), partition: "acct", groupA: 2, groupB: 2 }]);
    expect(index.size).toBe(1);
    expect(
      index.search(row(small, 2000), { partition: "acct", k: 1, allow: { collections: [2] } })[0].score,
    ).toBeCloseTo(1, 5);
    expect(index.search(row(small, 2000), { partition: "acct", k: 1, allow: { collections: [1] } })).toEqual([]);
  });

  it("learns the centre once the sample is full and re-encodes the rows added before", () => {
    const source = createMemoryVectorSource();
    const learned = createVectorIndex({ dim, source, centerSample: 500, exactBelow: 0 });
    const rows = Array.from({ length: 900 }, (_, i) => ({
      rowId: 5000 + i,
      vector: row(small, i),
      partition: "acct",
      groupA: 0,
      groupB: small.video[i],
    }));
    for (const r of rows) source.set(r.rowId, r.vector);
    learned.add(rows.slice(0, 400));
    expect(learned.center).toBeNull();
    learned.add(rows.slice(400));
    const center = learned.center!;
    expect(center).not.toBeNull();
    // The centre is the mean of the first 500 (normalised) rows.
    const mean = new Float32Array(dim);
    for (let i = 0; i < 500; i++) for (let j = 0; j < dim; j++) mean[j] += row(small, i)[j] / 500;
    for (let j = 0; j < dim; j += 37) expect(center[j]).toBeCloseTo(mean[j], 5);
    // Same codes as an index given that centre from the start: identical answers with a tiny pool.
    const given = createVectorIndex({ dim, source, center, exactBelow: 0 });
    given.add(rows);
    const Q = generateQueries(small, 30, "text", 6);
    for (let i = 0; i < 30; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      expect(learned.search(q, { partition: "acct", k: 5, candidates: 40 })).toEqual(
        given.search(q, { partition: "acct", k: 5, candidates: 40 }),
      );
    }
  });

  it("rejects malformed input", () => {
    const index = createVectorIndex({ dim, source: createMemoryVectorSource() });
    const ok = { rowId: 1, vector: new Float32Array(dim).fill(0.1), partition: "a", groupA: 0, groupB: 0 };
    expect(() => index.add([{ ...ok, vector: new Float32Array(10) }])).toThrow(RangeError);
    expect(() => index.add([{ ...ok, rowId: 1.5 }])).toThrow(RangeError);
    expect(() => index.add([{ ...ok, vector: new Float32Array(dim).fill(Number.NaN) }])).toThrow(RangeError);
    expect(() => index.search(new Float32Array(3), { partition: "a", k: 1 })).toThrow(RangeError);
    expect(() => index.search(new Float32Array(dim), { partition: "a", k: 0 })).toThrow(RangeError);
    expect(() => createVectorIndex({ dim: 4096, source: createMemoryVectorSource() })).toThrow(RangeError);
    expect(index.size).toBe(0);
  });
});
