import {
  createMemoryVectorSource,
  createVectorIndex,
  type VectorIndex,
  type VectorIndexOptions,
} from "../../src/vector/index.ts";
import type { Dataset } from "../../bench/lib/synthetic.ts";

export function row(ds: Dataset, i: number): Float32Array {
  return ds.vectors.subarray(i * ds.dim, (i + 1) * ds.dim);
}

/** An index over a dataset: rowId = 1000 + row, groupA = collection, groupB = video. */
export function indexOf(
  ds: Dataset,
  opts: Partial<VectorIndexOptions> = {},
  partitionOf: (i: number) => string = () => "acct",
  /** Finish background retrains after every batch (as if the event loop turned between them). */
  settleEach = false,
): { index: VectorIndex; source: ReturnType<typeof createMemoryVectorSource> } {
  const source = createMemoryVectorSource();
  const index = createVectorIndex({ dim: ds.dim, source, ...opts });
  const rows = [];
  for (let i = 0; i < ds.n; i++) {
    source.set(1000 + i, row(ds, i));
    rows.push({
      rowId: 1000 + i,
      vector: row(ds, i),
      partition: partitionOf(i),
      groupA: ds.collection[i],
      groupB: ds.video[i],
    });
  }
  for (let i = 0; i < rows.length; i += 2048) {
    index.add(rows.slice(i, i + 2048));
    if (settleEach) index.flushTraining();
  }
  // Growth retrains run in the background (event-loop turns); these tests want the trained state.
  index.flushTraining();
  return { index, source };
}

/** Exact top-k (rowId = 1000 + row) by cosine among rows passing `keep`, best first. */
export function exactTopK(
  ds: Dataset,
  query: Float32Array,
  k: number,
  keep: (i: number) => boolean = () => true,
): { rowId: number; score: number }[] {
  const { dim } = ds;
  let qn = 0;
  for (let j = 0; j < dim; j++) qn += query[j] * query[j];
  qn = Math.sqrt(qn);
  const scored: { rowId: number; score: number }[] = [];
  for (let i = 0; i < ds.n; i++) {
    if (!keep(i)) continue;
    let dot = 0,
      nn = 0;
    for (let j = 0; j < dim; j++) {
      const x = ds.vectors[i * dim + j];
      dot += query[j] * x;
      nn += x * x;
    }
    scored.push({ rowId: 1000 + i, score: dot / (qn * Math.sqrt(nn)) });
  }
  scored.sort((a, b) => b.score - a.score || a.rowId - b.rowId);
  return scored.slice(0, k);
}

export function recallAt(found: { rowId: number }[], truth: { rowId: number }[]): number {
  const t = new Set(truth.map((r) => r.rowId));
  return found.filter((r) => t.has(r.rowId)).length / truth.length;
}
