/**
 * The vector benches' timed query loop: runs the first `limit` queries of `Q` (rows of `dim`
 * floats) through `search` after `warmup` untimed ones, and returns the per-query latencies (ms,
 * in query order), the mean recall against `truth` (the exact top-k per query, as row
 * indices; `idOffset` is added to them to get the ids `search` returns) and each query's answer
 * (for task recall: bench/lib/synthetic.ts taskHits).
 */
export function runQueries(
  Q: Float32Array,
  dim: number,
  truth: Int32Array[],
  search: (q: Float32Array, i: number) => number[],
  opts: { limit?: number; warmup?: number; idOffset?: number } = {},
): { nq: number; lat: number[]; recall: number; results: number[][] } {
  const { limit = truth.length, warmup = 5, idOffset = 0 } = opts;
  const nq = Math.min(limit, truth.length);
  for (let i = 0; i < Math.min(warmup, nq); i++) search(Q.subarray(i * dim, (i + 1) * dim), i);
  const lat: number[] = [];
  const results: number[][] = [];
  let recall = 0;
  for (let i = 0; i < nq; i++) {
    const q = Q.subarray(i * dim, (i + 1) * dim);
    const t = performance.now();
    const got = search(q, i);
    lat.push(performance.now() - t);
    results.push(got);
    const want = new Set(Array.from(truth[i], (r) => r + idOffset));
    recall += got.filter((id) => want.has(id)).length / Math.max(1, truth[i].length);
  }
  return { nq, lat, recall: recall / nq, results };
}
