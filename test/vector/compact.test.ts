/**
 * Compaction (src/vector/compact.ts): after a retrain or many removes a segment's live blocks move
 * into a fresh, smaller WebAssembly memory. It must give memory back (the memory's byte length is
 * in memoryBytes), keep every row exactly once with its groups, keep removed rows out, and leave
 * every search answer as it was.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { createMemoryVectorSource, createVectorIndex, type SearchOptions, type VectorIndex, type VectorRow } from "../../src/vector/index.ts";
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
    rows.push({ rowId: 1000 + i, vector: row(ds, i), partition: "acct", groupA: ds.collection[i], groupB: ds.video[i] });
  }
  return rows;
}

function build(opts: { compactFreeShare?: number; segmentBytes?: number } = {}): { idx: VectorIndex; source: ReturnType<typeof createMemoryVectorSource> } {
  const source = createMemoryVectorSource();
  const idx = createVectorIndex({ dim, source, trainAt: 4096, ...opts });
  for (let i = 0; i < ds.n; i += 3000) {
    idx.add(rowsOf(Array.from({ length: 3000 }, (_, j) => i + j), source));
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
  const variants: Partial<SearchOptions>[] = [{}, { probe: 0.05 }, { allow: { collections: [2] } }, { allow: { videos: videos.slice(0, 40) } }, { k: 100 }];
  const out: unknown[] = [];
  for (const Q of [text, image]) {
    for (let i = 0; i < 6; i++) for (const v of variants) out.push(idx.search(q(Q, i), { partition: "acct", k: 10, ...v }));
  }
  return out;
}

const expectedIds = (keep: (i: number) => boolean) => Array.from({ length: ds.n }, (_, i) => i).filter(keep).map((i) => 1000 + i);

describe("compaction", () => {
  it("after a rebuild gives memory back, keeps every row once and every answer the same", () => {
    // Small segments: the index has several memories, each compacted on its own.
    const { idx } = build({ compactFreeShare: Infinity, segmentBytes: 1.5 * 2 ** 20 });
    idx.rebuild("acct");
    expect(idx.segments).toBeGreaterThan(1);
    expect(idx.compactions.count).toBe(0);
    const before = answers(idx), rowsBefore = allRows(idx), bytes = idx.memoryBytes;
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

  it("runs by itself after a rebuild and after many removes; removed rows stay out, adds after it land", () => {
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
    const c1 = idx.compactions.count, bytes1 = idx.memoryBytes;
    for (let i = 0; i < ds.n; i += 1000) {
      const ids = Array.from({ length: 1000 }, (_, j) => i + j).filter(gone);
      expect(idx.remove(ids.map((j) => 1000 + j))).toBe(ids.length);
      for (const j of ids) source.delete(1000 + j);
    }
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
    idx.add(rowsOf(Array.from({ length: 8000 }, (_, i) => i), source));
    idx.add(rowsOf(Array.from({ length: 8000 }, (_, i) => 8000 + i), source));
    expect(idx.training.pending).toBe(1);
    let turns = 0, skipped = 0;
    while (idx.training.pending > 0) {
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
    // The end of the retrain freed the old lists' blocks: compacted by itself.
    expect(idx.compactions.count).toBeGreaterThan(0);
    expect(idx.compactions.errors).toBe(0);
    for (let i = 0; i < 6; i++) expect(got(i)).toEqual(exact(i));
    expect(idx.partitionSize("acct")).toBe(n);
  }, 120_000);
});
