/**
 * Compaction (src/vector/compact.ts): after a retrain or many removes a segment's live blocks move
 * into a fresh, smaller WebAssembly memory. It must give memory back (the memory's byte length is
 * in memoryBytes), keep every row exactly once with its groups, keep removed rows out, and leave
 * every search answer as it was.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import {
  createMemoryVectorSource,
  createVectorIndex,
  type SearchOptions,
  type VectorIndex,
  type VectorRow,
} from "../../src/vector/index.ts";
import { exactTopK, row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 24_000, dim, kind: "clustered", seed: 91, collections: 4, framesPerVideo: 120 });
const text = generateQueries(ds, 6, "text", 92);
const image = generateQueries(ds, 6, "image", 93);
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);
const videos = [...new Set(ds.video)];
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function rowsOf(ids: Iterable<number>, source: ReturnType<typeof createMemoryVectorSource>): VectorRow[] {
  const rows: VectorRow[] = [];
  for (const i of ids) {
    source.set(1000 + i, row(ds, i));
    rows.push({
      rowId: 1000 + i,
      vector: row(ds, i),
      partition: "acct",
      groupA: ds.collection[i],
      groupB: ds.video[i],
    });
  }
  return rows;
}

function build(opts: { compactFreeShare?: number; segmentBytes?: number } = {}): {
  idx: VectorIndex;
  source: ReturnType<typeof createMemoryVectorSource>;
} {
  const source = createMemoryVectorSource();
  const idx = createVectorIndex({ dim, source, trainAt: 4096, ...opts });
  for (let i = 0; i < ds.n; i += 3000) {
    idx.add(
      rowsOf(
        Array.from({ length: 3000 }, (_, j) => i + j),
        source,
      ),
    );
    idx.flushTraining();
  }
  return { idx, source };
}

/** Every row the index holds, read back video by video (≤ exactBelow rows each: every allowed row is rescored and returned). */
function allRows(idx: VectorIndex): number[] {
  const out: number[] = [];
  for (const v of videos) {
    for (const r of idx.search(q(text, 0), { partition: "acct", k: 1000, allow: { videos: [v] } })) out.push(r.rowId);
  }
  return out.sort((a, b) => a - b);
}

/** Answers to a fixed set of searches: flat, probing, under a collection filter, under a video filter. */
function answers(idx: VectorIndex): unknown[] {
  const variants: Partial<SearchOptions>[] = [
    {},
    { probe: 0.05 },
    { allow: { collections: [2] } },
    { allow: { videos: videos.slice(0, 40) } },
    { k: 100 },
  ];
  const out: unknown[] = [];
  for (const Q of [text, image]) {
    for (let i = 0; i < 6; i++)
      for (const v of variants) out.push(idx.search(q(Q, i), { partition: "acct", k: 10, ...v }));
  }
  return out;
}

const expectedIds = (keep: (i: number) => boolean) =>
  Array.from({ length: ds.n }, (_, i) => i)
    .filter(keep)
    .map((i) => 1000 + i);

describe("compaction", () => {
  it("after a rebuild gives memory back, keeps every row once and every answer the same", () => {
    // Small segments: the index has several memories, each compacted on its own.
    const { idx } = build({ compactFreeShare: Infinity, segmentBytes: 1.5 * 2 ** 20 });
    idx.rebuild("acct");
    expect(idx.segments).toBeGreaterThan(1);
    expect(idx.compactions.count).toBe(0);
    const before = answers(idx),
      rowsBefore = allRows(idx),
      bytes = idx.memoryBytes;
    expect(rowsBefore).toEqual(expectedIds(() => true));

    const r = idx.compact();
    expect(idx.compactions.count).toBeGreaterThan(0);
    // The retrain's reserved run is given back: at least a fifth of the memory here.
    expect(r.bytesAfter).toBeLessThan(r.bytesBefore * 0.8);
    expect(bytes - idx.memoryBytes).toBe(r.bytesBefore - r.bytesAfter);
    expect(idx.size).toBe(ds.n);
    expect(allRows(idx)).toEqual(rowsBefore);
    expect(answers(idx)).toEqual(before);
    // Nothing left to give back: a second compaction changes nothing.
    const again = idx.compact();
    expect(again.bytesAfter).toBe(again.bytesBefore);
    expect(answers(idx)).toEqual(before);
  }, 120_000);

  it("runs by itself after a rebuild and after many removes; removed rows stay out, adds after it land", async () => {
    const { idx: plain } = build({ compactFreeShare: Infinity });
    plain.rebuild("acct");
    const { idx, source } = build();
    const c0 = idx.compactions.count;
    idx.rebuild("acct");
    expect(idx.compactions.count).toBeGreaterThan(c0);
    expect(idx.compactions.errors).toBe(0);
    // Same rows, same lists: only the free memory differs.
    expect(idx.memoryBytes).toBeLessThan(plain.memoryBytes * 0.85);
    expect(answers(idx)).toEqual(answers(plain));

    // Remove 40 % of the rows: the freed blocks pass 25 % of the memory and it is compacted (the
    // 64 lists of ~375 rows keep a part-filled last chunk each, so chunks fall by ~1/3 only).
    const gone = (i: number) => i % 5 < 2;
    const c1 = idx.compactions.count,
      bytes1 = idx.memoryBytes;
    for (let i = 0; i < ds.n; i += 1000) {
      const ids = Array.from({ length: 1000 }, (_, j) => i + j).filter(gone);
      expect(idx.remove(ids.map((j) => 1000 + j))).toBe(ids.length);
      for (const j of ids) source.delete(1000 + j);
    }
    // Started by a remove, it copies between event-loop turns.
    expect(idx.compactions.pending).toBe(1);
    while (idx.compactions.pending > 0) await turn();
    expect(idx.compactions.count).toBeGreaterThan(c1);
    expect(idx.memoryBytes).toBeLessThan(bytes1 * 0.9);
    expect(allRows(idx)).toEqual(expectedIds((i) => !gone(i)));
    for (let i = 0; i < ds.n; i += 101) expect(idx.has(1000 + i)).toBe(!gone(i));
    const live = (i: number) => !gone(i);
    for (let i = 0; i < 6; i++) {
      const got = idx.search(q(text, i), { partition: "acct", k: 10 }).map((r) => r.rowId);
      const truth = exactTopK(ds, q(text, i), 10, live).map((r) => r.rowId);
      expect(got.filter((id) => truth.includes(id)).length).toBeGreaterThanOrEqual(8);
      for (const id of got) expect(gone(id - 1000)).toBe(false);
    }

    // Adds after the compaction (into its headroom, then growth) are found.
    const back = Array.from({ length: ds.n }, (_, i) => i).filter((i) => gone(i) && i % 3 === 0);
    idx.add(rowsOf(back, source));
    expect(allRows(idx)).toEqual(expectedIds((i) => !gone(i) || i % 3 === 0));
    for (let j = 0; j < back.length; j += 157) {
      expect(idx.search(row(ds, back[j]), { partition: "acct", k: 1, probe: 0.05 })[0].rowId).toBe(1000 + back[j]);
    }
  }, 120_000);

  it("waits for a background retrain, then compacts; searches stay exact throughout", async () => {
    const source = createMemoryVectorSource();
    // exactBelow above the partition: every search rescores all allowed rows, so a row lost or
    // doubled at any step (retrain or compaction) would show against brute force.
    const idx = createVectorIndex({ dim, source, trainAt: 8192, lists: 64, exactBelow: 1 << 20 });
    const n = 16_000;
    const exact = (i: number) => exactTopK(ds, q(text, i), 10, (j) => j < n).map((r) => r.rowId);
    const got = (i: number) => idx.search(q(text, i), { partition: "acct", k: 10 }).map((r) => r.rowId);
    idx.add(
      rowsOf(
        Array.from({ length: 8000 }, (_, i) => i),
        source,
      ),
    );
    idx.add(
      rowsOf(
        Array.from({ length: 8000 }, (_, i) => 8000 + i),
        source,
      ),
    );
    expect(idx.training.pending).toBe(1);
    let turns = 0,
      skipped = 0,
      compactingTurns = 0;
    while (idx.training.pending > 0 || idx.compactions.pending > 0) {
      if (idx.compactions.pending > 0) compactingTurns++;
      await turn();
      turns++;
      expect(turns).toBeLessThan(100_000);
      if (idx.training.pending > 0 && turns % 7 === 0) {
        // Not while the retrain holds arena offsets: compact() does nothing.
        const r = idx.compact();
        expect(r.bytesAfter).toBe(r.bytesBefore);
        skipped++;
      }
      if (turns % 5 === 0) expect(got(turns % 6)).toEqual(exact(turns % 6));
    }
    expect(skipped).toBeGreaterThan(0);
    // The end of the retrain freed the old lists' blocks: compacted by itself, after it.
    expect(compactingTurns).toBeGreaterThan(0);
    expect(idx.compactions.count).toBeGreaterThan(0);
    expect(idx.compactions.errors).toBe(0);
    for (let i = 0; i < 6; i++) expect(got(i)).toEqual(exact(i));
    expect(idx.partitionSize("acct")).toBe(n);
  }, 120_000);

  it("adds, removes and searches while a compaction copies between turns: every row once, answers as without it", async () => {
    // Twin indexes given the same operations; only `a` compacts. Compaction keeps slots, so their
    // answers must be identical, approximate ones included (they read the codes: a chunk written
    // after it was copied and not copied again would answer differently), and video-filtered
    // reads (every row's rowId and group ids) must list exactly the live rows.
    const make = (compactFreeShare?: number) => {
      const source = createMemoryVectorSource();
      const idx = createVectorIndex({ dim, source, trainAt: 4096, ...(compactFreeShare ? { compactFreeShare } : {}) });
      return { idx, source };
    };
    const a = make(),
      b = make(Infinity);
    const both = (f: (x: { idx: VectorIndex; source: ReturnType<typeof createMemoryVectorSource> }) => void) =>
      [a, b].forEach(f);
    const live = new Set<number>();
    const add = (ids: number[]) => {
      both((x) => x.idx.add(rowsOf(ids, x.source)));
      for (const i of ids) live.add(i);
    };
    const remove = (ids: number[]) => {
      both((x) => expect(x.idx.remove(ids.map((i) => 1000 + i))).toBe(ids.filter((i) => live.has(i)).length));
      for (const i of ids) live.delete(i);
    };
    for (let i = 0; i < 20_000; i += 4000) {
      add(Array.from({ length: 4000 }, (_, j) => i + j));
      both((x) => x.idx.flushTraining());
    }
    both((x) => x.idx.rebuild("acct"));
    // Half the rows go: a compaction starts (sliced), and work goes on during it.
    remove(Array.from({ length: 20_000 }, (_, i) => i).filter((i) => i % 2 === 0));
    expect(a.idx.compactions.pending).toBe(1);
    let turns = 0,
      next = 20_000;
    // Searches that depend on the codes: 64 coarse candidates, 8 rescored exactly.
    const strict = { candidates: 64, rescore: 8 };
    while (a.idx.compactions.pending > 0) {
      await turn();
      turns++;
      expect(turns).toBeLessThan(10_000);
      // Rows added (some landing in chunks already copied), re-added, removed, between slices.
      if (next < ds.n) {
        add(Array.from({ length: 40 }, (_, j) => next + j));
        next += 40;
      }
      add([(turns * 2) % 20_000]);
      // Removes fill each hole with their list's last row: chunks written all over the partition.
      remove(Array.from({ length: 30 }, (_, j) => (turns * 331 + j * 661) % 20_000));
      const qi = turns % 6;
      for (const o of [{}, { probe: 0.05 }, { allow: { collections: [turns % 4] } }, strict]) {
        for (const Q of [text, image])
          expect(a.idx.search(q(Q, qi), { partition: "acct", k: 10, ...o })).toEqual(
            b.idx.search(q(Q, qi), { partition: "acct", k: 10, ...o }),
          );
      }
    }
    // Every live row found by its own vector through its code (few candidates, few rescored): a
    // row whose code was left stale in the fresh memory would be missed.
    for (const i of live)
      expect(a.idx.search(row(ds, i), { partition: "acct", k: 1, ...strict })[0]?.rowId).toBe(1000 + i);
    expect(turns).toBeGreaterThan(1);
    expect(a.idx.compactions.count).toBeGreaterThan(0);
    expect(a.idx.compactions.errors).toBe(0);
    expect(a.idx.memoryBytes).toBeLessThan(b.idx.memoryBytes);
    expect(answers(a.idx)).toEqual(answers(b.idx));
    const want = [...live].sort((x, y) => x - y).map((i) => 1000 + i);
    expect(allRows(a.idx)).toEqual(want);
    // And after it, as before: adds and removes land in the fresh memory.
    add(Array.from({ length: 500 }, (_, j) => 23_000 + j));
    remove(Array.from({ length: 500 }, (_, j) => 1 + 2 * j));
    expect(allRows(a.idx)).toEqual([...live].sort((x, y) => x - y).map((i) => 1000 + i));
    expect(answers(a.idx)).toEqual(answers(b.idx));
  }, 120_000);

  it("a rebuild during a compaction: the compaction is given up (the retrain moved every row) and done again after", () => {
    const { idx } = build();
    idx.rebuild("acct");
    const gone = (i: number) => i % 2 === 1;
    idx.remove(
      Array.from({ length: ds.n }, (_, i) => i)
        .filter(gone)
        .map((i) => 1000 + i),
    );
    expect(idx.compactions.pending).toBe(1);
    const c0 = idx.compactions;
    idx.rebuild("acct");
    const c1 = idx.compactions;
    expect(c1.pending).toBe(0);
    expect(c1.abandoned).toBe(c0.abandoned + 1);
    expect(c1.errors).toBe(0);
    expect(allRows(idx)).toEqual(expectedIds((i) => !gone(i)));
    for (let i = 0; i < ds.n; i += 2 * 37)
      expect(idx.search(row(ds, i), { partition: "acct", k: 1, candidates: 64, rescore: 8 })[0].rowId).toBe(1000 + i);
  }, 120_000);
});
