/**
 * The centroid tree of many lists (lists.ts treeShape): past 4 096 lists, groups of ~32 lists
 * under a top level of ~32 groups each, so that assigning a row costs about the same number of dot
 * products at any list count (the build of a multi-million-row partition grew like n·√n).
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import type { SearchStats } from "../../src/vector/index.ts";
import { treeShape } from "../../src/vector/lists.ts";
import { exactTopK, indexOf, recallAt, row } from "./helpers.ts";

const dim = 512;
const newStats = (): SearchStats => ({ path: "empty", allowed: 0, coarse: 0, middle: 0, rescored: 0, ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 } });
/** Dot products to pick a row's list: the tops, the best two tops' groups, the best four groups' lists (two groups' without tops). */
const assignDots = (count: number) => {
  const { groups, tops } = treeShape(count);
  return tops > 1 ? tops + 2 * Math.ceil(groups / tops) + 4 * Math.ceil(count / groups) : groups + 2 * Math.ceil(count / groups);
};

describe("centroid tree", () => {
  it("keeps two levels up to 4 096 lists and bounds a row's assignment cost beyond", () => {
    expect(treeShape(16)).toEqual({ groups: 4, tops: 1 });
    expect(treeShape(1024)).toEqual({ groups: 32, tops: 1 });
    expect(treeShape(2048)).toEqual({ groups: 64, tops: 1 });
    expect(treeShape(4096)).toEqual({ groups: 64, tops: 1 });
    expect(treeShape(8192)).toEqual({ groups: 256, tops: 8 });
    expect(treeShape(16_384)).toEqual({ groups: 512, tops: 16 });
    // √count groups would cost 128 + 2·128 = 384 at 16 384 lists; the tree stays at ~200, only
    // its top level (count / 1 024) grows.
    for (let count = 16; count <= 16_384; count *= 2) expect(assignDots(count)).toBeLessThanOrEqual(208);
    expect(assignDots(16_384) - assignDots(8192)).toBeLessThanOrEqual(12);
  });

  it("a partition with a top level assigns rows where its own vector's probe finds them", () => {
    // 4 352 lists on 70 000 rows (the most n / 16 allows): 136 groups under 5 top-level groups.
    const ds = generateDataset({ n: 70_000, dim, kind: "clustered", seed: 91, collections: 4, framesPerVideo: 120 });
    expect(treeShape(4352)).toEqual({ groups: 136, tops: 5 });
    const { index } = indexOf(ds, { trainAt: Infinity, lists: 4352 });
    index.rebuild("acct");
    const lists = index.listCount("acct");
    expect(lists).toBeGreaterThanOrEqual(4352 - 150);
    expect(lists).toBeLessThanOrEqual(4352 + 150);
    // Rows spread over the lists as their centroids were trained: a probe for 4 096 rows (the
    // least a probe reads) reads about that many rows' worth of average lists. (A tree that sent
    // rows down the wrong top-level group piled them into a fifth of the lists: ~1/5 as many read.)
    let probed = 0, searches = 0;
    for (let i = 0; i < ds.n; i += 397, searches++) {
      const stats = newStats();
      expect(index.search(row(ds, i), { partition: "acct", k: 1, probe: 0.05, stats })[0].rowId).toBe(1000 + i);
      probed += stats.lists!;
    }
    expect(probed / searches).toBeGreaterThan((0.6 * 4096) / (ds.n / lists));
    const Q = generateQueries(ds, 20, "image", 92);
    let sum = 0;
    for (let i = 0; i < 20; i++) {
      const q = Q.subarray(i * dim, (i + 1) * dim);
      sum += recallAt(index.search(q, { partition: "acct", k: 10, probe: 0.1 }), exactTopK(ds, q, 10));
    }
    expect(sum / 20).toBeGreaterThanOrEqual(0.9);
  }, 120_000);
});
