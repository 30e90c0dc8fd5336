/**
 * The layout's rows per chunk (`chunkRows` 32 / 64 / 128): every path that maps a slot to its
 * chunk and row (add, remove's hole filling, a retrain's moves, the scan, masks, list tails) must
 * agree on it. Fine lists (~60 rows, smaller than a 128-row chunk) so every list has a tail.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { probeLists } from "../../src/vector/lists.ts";
import { List, Partition, type Centroids } from "../../src/vector/partition.ts";
import { makeLayout } from "../../src/vector/layout.ts";
import { exactTopK, indexOf, recallAt, row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 12_000, dim, kind: "clustered", seed: 41, collections: 5, framesPerVideo: 100 });
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);
const built = new Map(
  [32, 64, 128].map((c) => [
    c,
    indexOf(ds, { trainAt: 4096, lists: 200, chunkRows: c as 32 | 64 | 128 }, undefined, true).index,
  ]),
);

it("rejects a chunk size the kernels are not built for", () => {
  expect(() => makeLayout(dim, 2, 48)).toThrow(RangeError);
  expect(() => makeLayout(dim, 2, 256)).toThrow(RangeError);
  expect(makeLayout(dim, 2, 32).scanBlockBytes).toBe(32 * 66);
});

describe.each([32, 64])("%i rows a chunk", (chunkRows) => {
  const index = built.get(chunkRows)!;

  it("image-like probes and text-like flat scans keep recall@10 ≥ 0.95", () => {
    expect(index.listCount("acct")).toBeGreaterThan(150);
    const QI = generateQueries(ds, 15, "image", 7),
      QT = generateQueries(ds, 10, "text", 8);
    let image = 0,
      text = 0;
    for (let i = 0; i < 15; i++)
      image += recallAt(index.search(q(QI, i), { partition: "acct", k: 10, probe: 0.2 }), exactTopK(ds, q(QI, i), 10));
    for (let i = 0; i < 10; i++)
      text += recallAt(index.search(q(QT, i), { partition: "acct", k: 10 }), exactTopK(ds, q(QT, i), 10));
    expect(image / 15).toBeGreaterThanOrEqual(0.95);
    expect(text / 10).toBeGreaterThanOrEqual(0.95);
  });

  it("filters and exclusions hold: a collection, a video (exact path), excluded rows", () => {
    const Q = generateQueries(ds, 6, "text", 9);
    for (let i = 0; i < 6; i++) {
      const col = ds.collection[i * 1000];
      const got = index.search(q(Q, i), { partition: "acct", k: 10, allow: { collections: [col] } });
      for (const g of got) expect(ds.collection[g.rowId - 1000]).toBe(col);
      expect(
        recallAt(
          got,
          exactTopK(ds, q(Q, i), 10, (j) => ds.collection[j] === col),
        ),
      ).toBeGreaterThanOrEqual(0.8);
      const vid = ds.video[i * 1000 + 7];
      const inVideo = index.search(q(Q, i), { partition: "acct", k: 5, allow: { videos: [vid] } });
      expect(inVideo.map((r) => r.rowId)).toEqual(
        exactTopK(ds, q(Q, i), 5, (j) => ds.video[j] === vid).map((r) => r.rowId),
      );
      const first = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.3 });
      const excluded = first.slice(0, 3).map((r) => r.rowId);
      const again = index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.3, allow: { excludeRowIds: excluded } });
      for (const g of again) expect(excluded).not.toContain(g.rowId);
    }
  });

  it("removes fill holes and free chunks; a rebuild after them keeps every remaining row findable", () => {
    const { index: idx } = indexOf(ds, { trainAt: 4096, lists: 200, chunkRows: chunkRows as 32 | 64 }, undefined, true);
    const gone = new Set<number>();
    for (let i = 0; i < ds.n; i += 3) gone.add(1000 + i);
    expect(idx.remove(gone)).toBe(gone.size);
    for (let i = 1; i < ds.n; i += 173) {
      if (gone.has(1000 + i)) continue;
      const got = idx.search(row(ds, i), { partition: "acct", k: 10, probe: 0.1 });
      expect(got[0].rowId).toBe(1000 + i);
      for (const g of got) expect(gone.has(g.rowId)).toBe(false);
    }
    idx.rebuild("acct");
    expect(idx.size).toBe(ds.n - gone.size);
    for (let i = 2; i < ds.n; i += 173) {
      if (gone.has(1000 + i)) continue;
      expect(idx.search(row(ds, i), { partition: "acct", k: 1, probe: 0.1 })[0].rowId).toBe(1000 + i);
    }
  });
});

it("with lists of ~60 rows, smaller chunks hold the same rows in less memory", () => {
  const used = (c: number) => built.get(c)!.memoryBytes;
  expect(used(32)).toBeLessThan(used(128));
  expect(used(64)).toBeLessThan(used(128));
});

it("fine lists: a selective filter's probe looks past the best 256 lists for its rows instead of giving up", () => {
  // 2 000 lists of 50 rows; 1 list in 20 holds the filter's rows (a 1-of-20 collection). 4 096
  // of them need ~82 such lists, ~1 640 lists down the score order. Sizing the lists looked at by
  // all rows (4·2 000·4 096 / 100 000 → 328) found too few, and the query read every row.
  const p = new Partition(0, "p", 32);
  for (let k = 0; k < 2000; k++) {
    const l = new List();
    l.n = 50;
    p.lists.push(l);
  }
  p.lists.shift();
  p.n = 100_000;
  p.centroids = { count: 2000 } as Centroids;
  const scores = Float32Array.from({ length: 2000 }, (_, k) => 1 - k / 2000);
  const allowedIn = (k: number) => (k % 20 === 0 ? 50 : 0);
  const got = probeLists(p, scores, 4096, allowedIn, 50_000, 5000);
  expect(got).not.toBeNull();
  expect(got!.allowed).toBeGreaterThanOrEqual(4096);
  expect(got!.lists.every((k) => k % 20 === 0)).toBe(true);
  expect(got!.rows).toBeLessThan(5000);
});
