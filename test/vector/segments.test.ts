/**
 * Growth past one WebAssembly memory: a small `segmentBytes` makes a few thousand rows span
 * several segments (each its own memory), as ~10 M rows would span several 1.5 GiB ones.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { createMemoryVectorSource, createVectorIndex } from "../../src/vector/index.ts";
import { exactTopK, indexOf, recallAt, row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 12_000, dim, kind: "clustered", seed: 51, collections: 4 });
// ~1.5 MB per segment: about 3 000 rows each of the 4-bit layout (segmentBytes has a 1 MiB floor;
// 2-bit rows are ~2.3× smaller, so these few thousand rows would fit in one segment).
const { index } = indexOf(ds, { segmentBytes: 1_500_000, refineBits: 4 });
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);

describe("segments (more than one WebAssembly memory)", () => {
  it("rows spill into new segments once one passes segmentBytes, none is lost", () => {
    expect(index.segments).toBeGreaterThanOrEqual(3);
    expect(index.size).toBe(ds.n);
    expect(index.partitionSize("acct")).toBe(ds.n);
    for (let i = 0; i < ds.n; i += 499) expect(index.has(1000 + i)).toBe(true);
  });

  it("a search merges the segments' answers: recall@10 ≥ 0.95 against brute force, exact scores", () => {
    for (const kind of ["text", "image"] as const) {
      const Q = generateQueries(ds, 15, kind, 52);
      let sum = 0;
      for (let i = 0; i < 15; i++) {
        const got = index.search(q(Q, i), { partition: "acct", k: 10 });
        const truth = exactTopK(ds, q(Q, i), 10);
        sum += recallAt(got, truth);
        for (let j = 1; j < got.length; j++) expect(got[j - 1].score).toBeGreaterThanOrEqual(got[j].score);
      }
      expect(sum / 15).toBeGreaterThanOrEqual(0.95);
    }
  });

  it("filters apply before ranking in every segment", () => {
    const Q = generateQueries(ds, 8, "text", 53);
    for (let i = 0; i < 8; i++) {
      const c = i % 4;
      const got = index.search(q(Q, i), { partition: "acct", k: 10, allow: { collections: [c] } });
      expect(got.length).toBe(10);
      for (const g of got) expect(ds.collection[g.rowId - 1000]).toBe(c);
      expect(
        recallAt(
          got,
          exactTopK(ds, q(Q, i), 10, (j) => ds.collection[j] === c),
        ),
      ).toBeGreaterThanOrEqual(0.8);
      // One video: exact in each segment, so the merged answer is the exact top-k.
      const v = ds.video[(i * 1499) % ds.n];
      const inVideo = index.search(q(Q, i), { partition: "acct", k: 5, allow: { videos: [v] } });
      expect(inVideo.map((g) => g.rowId)).toEqual(
        exactTopK(ds, q(Q, i), 5, (j) => ds.video[j] === v).map((t) => t.rowId),
      );
    }
  });

  it("remove and replace find the row in whichever segment holds it", () => {
    const d2 = generateDataset({ n: 6000, dim, kind: "clustered", seed: 54 });
    const source = createMemoryVectorSource();
    const idx = createVectorIndex({ dim, source, segmentBytes: 1_200_000, refineBits: 4 });
    const rows = Array.from({ length: d2.n }, (_, i) => {
      source.set(i, row(d2, i));
      return { rowId: i, vector: row(d2, i), partition: "p", groupA: 0, groupB: d2.video[i] };
    });
    idx.add(rows);
    expect(idx.segments).toBeGreaterThanOrEqual(2);
    // Row 10 (first segment) gets row 5 000's vector: it moves to the newest segment.
    source.set(10, row(d2, 5000));
    idx.add([{ rowId: 10, vector: row(d2, 5000), partition: "p", groupA: 0, groupB: 1 }]);
    expect(idx.size).toBe(6000);
    const got = idx.search(row(d2, 5000), { partition: "p", k: 2 });
    expect(got.map((g) => g.rowId).sort((a, b) => a - b)).toEqual([10, 5000]);
    // Removal across segments.
    const gone = Array.from({ length: 3000 }, (_, j) => j * 2);
    expect(idx.remove(gone)).toBe(3000);
    expect(idx.size).toBe(3000);
    const goneSet = new Set(gone);
    for (let i = 1; i < 6000; i += 398) {
      // odd rows only: the even ones were removed
      const hits = idx.search(row(d2, i), { partition: "p", k: 10 });
      expect(hits[0].rowId).toBe(i);
      for (const h of hits) expect(goneSet.has(h.rowId)).toBe(false);
    }
  });

  it("raising k with opts.reuse keeps each segment's coarse pass apart", () => {
    const Q = generateQueries(ds, 3, "text", 55);
    for (let i = 0; i < 3; i++) {
      const reuse = {};
      index.search(q(Q, i), { partition: "acct", k: 20, reuse });
      const again = index.search(q(Q, i), { partition: "acct", k: 60, reuse });
      expect(again).toEqual(index.search(q(Q, i), { partition: "acct", k: 60 }));
    }
  });
});
