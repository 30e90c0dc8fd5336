/**
 * Inverted lists (IVF) of a partition: trained as it grows, probed when a search passes `probe`,
 * kept consistent through adds, removes and rebuilds. Small `trainAt` so a few thousand rows
 * exercise what a million-row account does.
 */
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

// 24 000 clustered rows, lists trained at 4 096 rows and retrained at 16 384 (4×),
const ds = generateDataset({ n: 24_000, dim, kind: "clustered", seed: 5, collections: 6, framesPerVideo: 120 });
// 96 lists (~250 rows each, as listsFor gives a million-row account: n / 256).
const { index } = indexOf(ds, { trainAt: 4096, lists: 96 }, undefined, true);
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);

describe("inverted lists: training and probing", () => {
  it("a partition is split into lists once it reaches trainAt, and retrained as it grows", () => {
    const small = indexOf(generateDataset({ n: 3000, dim, kind: "clustered", seed: 6 }), { trainAt: 4096 }).index;
    expect(small.listCount("acct")).toBe(1);
    // Default list counts: ~n / 256 at each training (16 at 4 096 rows, 64 at 16 384).
    const grown = indexOf(
      generateDataset({ n: 17_000, dim, kind: "clustered", seed: 7 }),
      { trainAt: 4096 },
      undefined,
      true,
    ).index;
    expect(grown.listCount("acct")).toBeGreaterThanOrEqual(56);
    expect(grown.listCount("acct")).toBeLessThanOrEqual(72);
    // `lists: 96` is a target: each of the 16 coarse groups' share is rounded.
    expect(index.listCount("acct")).toBeGreaterThanOrEqual(88);
    expect(index.listCount("acct")).toBeLessThanOrEqual(104);
    const flat = indexOf(generateDataset({ n: 5000, dim, kind: "clustered", seed: 6 }), { trainAt: Infinity }).index;
    expect(flat.listCount("acct")).toBe(1);
  });

  it("image-like queries: probing a fraction of the rows keeps recall@10 ≥ 0.95 against brute force", () => {
    const Q = generateQueries(ds, 20, "image", 3);
    let sum = 0,
      scanned = 0;
    for (let i = 0; i < 20; i++) {
      const stats = newStats();
      const got = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.2, stats });
      expect(stats.lists).toBeGreaterThan(0);
      scanned += stats.scanned!;
      sum += recallAt(got, exactTopK(ds, q(Q, i), 10));
    }
    expect(sum / 20).toBeGreaterThanOrEqual(0.95);
    // Only part of the partition was read.
    expect(scanned / 20).toBeLessThan(0.5 * ds.n);
  });

  it("inDistribution narrows an image probe's stages, same rows read, same recall", () => {
    const Q = generateQueries(ds, 20, "image", 13);
    let wide = 0,
      narrow = 0;
    for (let i = 0; i < 20; i++) {
      const exact = exactTopK(ds, q(Q, i), 10);
      const sw = newStats(),
        sn = newStats();
      wide += recallAt(index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.2, stats: sw }), exact);
      narrow += recallAt(
        index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.2, inDistribution: true, stats: sn }),
        exact,
      );
      expect(sn.scanned).toBe(sw.scanned);
      // 10 % of the rows read (≥ 1 024, the Hamming sample's estimate) against 20 % (≥ 8 192).
      expect(sn.coarse).toBeLessThan(sw.coarse / 2);
      expect(sn.middle).toBe(256);
      expect(sn.rescored).toBe(64);
      expect(sw.rescored).toBe(128);
    }
    expect(narrow / 20).toBeGreaterThanOrEqual(0.95);
    expect(narrow).toBeGreaterThanOrEqual(wide - 0.2);
    // Without lists probed (no `probe`) it changes nothing: a flat scan keeps its wide stages.
    const flat = newStats();
    index.search(q(Q, 0), { partition: "acct", k: 10, inDistribution: true, stats: flat });
    expect(flat.rescored).toBe(128);
  });

  it("without probe every row is read (text-like queries keep the flat scan's recall)", () => {
    const Q = generateQueries(ds, 15, "text", 4);
    let sum = 0;
    for (let i = 0; i < 15; i++) {
      const stats = newStats();
      const got = index.search(q(Q, i), { partition: "acct", k: 10, stats });
      expect(stats.lists).toBe(0);
      expect(stats.scanned).toBe(ds.n);
      sum += recallAt(got, exactTopK(ds, q(Q, i), 10));
    }
    expect(sum / 15).toBeGreaterThanOrEqual(0.95);
  });

  it("a larger probe never lowers recall on average and reads more rows", () => {
    const Q = generateQueries(ds, 12, "text", 9);
    const run = (probe: number) => {
      let r = 0,
        rows = 0;
      for (let i = 0; i < 12; i++) {
        const stats = newStats();
        r += recallAt(index.search(q(Q, i), { partition: "acct", k: 10, probe, stats }), exactTopK(ds, q(Q, i), 10));
        rows += stats.scanned!;
      }
      return { r, rows };
    };
    const lo = run(0.05),
      hi = run(0.4);
    expect(hi.rows).toBeGreaterThan(lo.rows);
    expect(hi.r).toBeGreaterThanOrEqual(lo.r);
  });

  it("probeAt makes the rows read grow as √n: probe 0.4 at 6 000 rows reads what probe 0.2 reads", () => {
    const Q = generateQueries(ds, 12, "image", 11);
    // probe·√(probeAt·n) rows: 0.4 × √(6 000 × 24 000) = 4 800 rows, what probe 0.2 reads.
    for (let i = 0; i < 12; i++) {
      const sqrt = newStats(),
        share = newStats(),
        open = newStats();
      const a = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.4, probeAt: 6000, stats: sqrt });
      const b = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.2, stats: share });
      index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.4, stats: open });
      expect(a).toEqual(b);
      expect(sqrt.scanned).toBe(share.scanned);
      expect(sqrt.lists).toBe(share.lists);
      expect(open.scanned!).toBeGreaterThan(sqrt.scanned!);
    }
    // A partition smaller than probeAt reads a larger share: 0.2 × √(4 n · n) = 0.4 n.
    const under = newStats(),
      plain = newStats();
    index.search(q(Q, 1), { partition: "acct", k: 10, probe: 0.2, probeAt: 4 * ds.n, stats: under });
    index.search(q(Q, 1), { partition: "acct", k: 10, probe: 0.4, stats: plain });
    expect(under.scanned).toBe(plain.scanned);
    // The floor of 4 096 rows holds when the formula asks for fewer (0.4 × √(100 × 24 000) ≈ 620).
    const tiny = newStats();
    index.search(q(Q, 0), { partition: "acct", k: 10, probe: 0.4, probeAt: 100, stats: tiny });
    expect(tiny.scanned!).toBeGreaterThanOrEqual(4096);
    expect(tiny.scanned!).toBeLessThan(0.3 * ds.n);
  });
});

describe("inverted lists: filters are applied before ranking", () => {
  it("a collection filter with probing returns only that collection, close to its exact top-k", () => {
    const Q = generateQueries(ds, 12, "image", 12);
    let sum = 0;
    for (let i = 0; i < 12; i++) {
      const c = i % 6;
      const got = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.2, allow: { collections: [c] } });
      expect(got.length).toBe(10);
      for (const g of got) expect(ds.collection[g.rowId - 1000]).toBe(c);
      sum += recallAt(
        got,
        exactTopK(ds, q(Q, i), 10, (j) => ds.collection[j] === c),
      );
    }
    expect(sum / 12).toBeGreaterThanOrEqual(0.9);
  });

  it("a one-video filter is answered exactly even when probing (its rows are read wherever they are)", () => {
    const Q = generateQueries(ds, 6, "text", 13);
    for (let i = 0; i < 6; i++) {
      const v = ds.video[(i * 3001) % ds.n];
      const stats = newStats();
      const got = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.05, allow: { videos: [v] }, stats });
      expect(stats.path).toBe("exact");
      expect(got.map((g) => g.rowId)).toEqual(exactTopK(ds, q(Q, i), 10, (j) => ds.video[j] === v).map((t) => t.rowId));
    }
  });

  it("an explicit row filter reads only its rows' chunks and equals the exact answer over them", () => {
    const Q = generateQueries(ds, 6, "text", 17);
    for (let i = 0; i < 6; i++) {
      // Two videos' rows, plus ids the partition does not hold (ignored).
      const v1 = ds.video[(i * 4001) % ds.n],
        v2 = ds.video[(i * 7001 + 13) % ds.n];
      const ids: number[] = [999_999_000 + i];
      for (let j = 0; j < ds.n; j++) if (ds.video[j] === v1 || ds.video[j] === v2) ids.push(1000 + j);
      const stats = newStats();
      const got = index.search(q(Q, i), { partition: "acct", k: 10, allow: { rowIds: ids }, stats });
      const inSet = new Set(ids);
      expect(got.map((g) => g.rowId)).toEqual(
        exactTopK(ds, q(Q, i), 10, (j) => inSet.has(1000 + j)).map((t) => t.rowId),
      );
      // Far fewer rows read than the partition holds: the chunks of ~240 rows, not 24 000.
      expect(stats.scanned).toBeLessThan(ds.n / 4);
      expect(stats.scanned).toBeGreaterThanOrEqual(ids.length - 1);
      // With a collection filter too, the answer is the exact one over rows passing both.
      const c = ds.collection[ids[1] - 1000];
      const both = index.search(q(Q, i), { partition: "acct", k: 10, allow: { rowIds: ids, collections: [c] } });
      expect(both.map((g) => g.rowId)).toEqual(
        exactTopK(ds, q(Q, i), 10, (j) => inSet.has(1000 + j) && ds.collection[j] === c).map((t) => t.rowId),
      );
    }
  });

  it("an explicit row filter larger than the exact path ranks approximately, only among its rows", () => {
    const Q = generateQueries(ds, 8, "image", 19);
    // Ten videos' rows (~1 250, past exactBelow = 1 024) sit in a few lists' chunks; every third
    // row of the first 9 000 sits in nearly every chunk, so the plain selection reads the table.
    const vids = new Set(Array.from({ length: 10 }, (_, i) => ds.video[(i * 2477) % ds.n]));
    const tenVideos: number[] = [];
    for (let j = 0; j < ds.n; j++) if (vids.has(ds.video[j])) tenVideos.push(1000 + j);
    const spread = Array.from({ length: 3000 }, (_, j) => 1000 + 3 * j);
    for (const [ids, readsAll] of [
      [tenVideos, false],
      [spread, true],
    ] as const) {
      const inSet = new Set(ids);
      let sum = 0;
      for (let i = 0; i < 8; i++) {
        const stats = newStats();
        const got = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.05, allow: { rowIds: ids }, stats });
        expect(stats.path).toBe("approx");
        expect(stats.allowed).toBe(ids.length);
        if (readsAll) expect(stats.scanned).toBe(ds.n);
        else expect(stats.scanned).toBeLessThan(ds.n / 2);
        for (const g of got) expect(inSet.has(g.rowId)).toBe(true);
        sum += recallAt(
          got,
          exactTopK(ds, q(Q, i), 10, (j) => inSet.has(1000 + j)),
        );
      }
      expect(sum / 8).toBeGreaterThanOrEqual(0.95);
    }
    // Ids the partition does not hold allow nothing.
    expect(index.search(q(Q, 0), { partition: "acct", k: 10, allow: { rowIds: [5, 6, 7] } })).toEqual([]);
  });

  it("excluded rows never come back from probed lists", () => {
    const Q = generateQueries(ds, 5, "image", 14);
    for (let i = 0; i < 5; i++) {
      const first = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.1 });
      const excluded = new Set(first.slice(0, 5).map((g) => g.rowId));
      const again = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.1, allow: { excludeRowIds: excluded } });
      expect(again.length).toBe(10);
      for (const g of again) expect(excluded.has(g.rowId)).toBe(false);
      // The rest of the earlier answer is still there (the filter only removed rows).
      for (const g of first.slice(5)) expect(again.some((x) => x.rowId === g.rowId)).toBe(true);
    }
  });
});

describe("inverted lists: writes and rebuilds", () => {
  it("rows added after training go to a list and are found; removed rows never come back", () => {
    const d2 = generateDataset({ n: 9000, dim, kind: "clustered", seed: 21 });
    const source = createMemoryVectorSource();
    const idx = createVectorIndex({ dim, source, trainAt: 4096 });
    const add = (from: number, to: number) => {
      const rows = [];
      for (let i = from; i < to; i++) {
        source.set(i, row(d2, i));
        rows.push({ rowId: i, vector: row(d2, i), partition: "p", groupA: 0, groupB: d2.video[i] });
      }
      idx.add(rows);
    };
    add(0, 5000);
    idx.flushTraining(); // the retrain `add` queued for the event loop
    expect(idx.listCount("p")).toBeGreaterThan(1);
    add(5000, 9000); // after training: each row is assigned to its nearest list
    for (let i = 5000; i < 9000; i += 397) {
      const got = idx.search(row(d2, i), { partition: "p", k: 1, probe: 0.05 });
      expect(got[0].rowId).toBe(i);
    }
    // Remove every third row, including rows that moved inside their list when others left.
    const removed = Array.from({ length: 3000 }, (_, j) => j * 3);
    expect(idx.remove(removed)).toBe(3000);
    expect(idx.size).toBe(6000);
    for (const i of [0, 3, 3000, 8997]) expect(idx.has(i)).toBe(false);
    const gone = new Set(removed);
    for (let i = 1; i < 9000; i += 211) {
      if (gone.has(i)) continue;
      const got = idx.search(row(d2, i), { partition: "p", k: 10, probe: 0.05 });
      expect(got[0].rowId).toBe(i);
      for (const g of got) expect(gone.has(g.rowId)).toBe(false);
    }
    // Emptying the partition frees it.
    idx.remove(Array.from({ length: 9000 }, (_, i) => i));
    expect(idx.partitionSize("p")).toBe(0);
    expect(idx.search(row(d2, 1), { partition: "p", k: 5 })).toEqual([]);
  });

  it("rebuild retrains and reassigns every row; flat answers are unchanged", () => {
    const d3 = generateDataset({ n: 8000, dim, kind: "clustered", seed: 31 });
    const { index: idx } = indexOf(d3, { trainAt: 4096, lists: 8 });
    const Q = generateQueries(d3, 6, "text", 32);
    const before = Array.from({ length: 6 }, (_, i) => idx.search(q(Q, i), { partition: "acct", k: 10 }));
    // `lists` is a target: each coarse group's share is rounded (8 ± the 4 groups).
    const near8 = (c: number) => c >= 4 && c <= 12;
    expect(near8(idx.listCount("acct"))).toBe(true);
    idx.rebuild("acct");
    expect(near8(idx.listCount("acct"))).toBe(true);
    expect(idx.size).toBe(8000);
    for (let i = 0; i < 8000; i += 101) expect(idx.has(1000 + i)).toBe(true);
    for (let i = 0; i < 6; i++) expect(idx.search(q(Q, i), { partition: "acct", k: 10 })).toEqual(before[i]);
    // Earlier layouts are free runs after a few rebuilds and are reused: rebuilding again then
    // does not grow the memory.
    for (let r = 0; r < 3; r++) idx.rebuild("acct");
    const bytes = idx.memoryBytes;
    idx.rebuild("acct");
    idx.rebuild("acct");
    expect(idx.memoryBytes).toBeLessThanOrEqual(bytes * 1.01);
    for (let i = 0; i < 8000; i += 397)
      expect(idx.search(row(d3, i), { partition: "acct", k: 1, probe: 0.1 })[0].rowId).toBe(1000 + i);
  });

  it("partitions keep their own lists (another account's rows never appear)", () => {
    const d4 = generateDataset({ n: 10_000, dim, kind: "clustered", seed: 41 });
    const { index: idx } = indexOf(d4, { trainAt: 2048 }, (i) => (i % 2 ? "odd" : "even"));
    expect(idx.listCount("odd")).toBeGreaterThan(1);
    expect(idx.listCount("even")).toBeGreaterThan(1);
    for (let i = 0; i < 40; i += 3) {
      const got = idx.search(row(d4, i), { partition: i % 2 ? "odd" : "even", k: 10, probe: 0.1 });
      expect(got[0].rowId).toBe(1000 + i);
      for (const g of got) expect((g.rowId - 1000) % 2).toBe(i % 2);
    }
  });
});
