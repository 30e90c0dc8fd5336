/** Selection helpers: the m largest of n scores without sorting all n. */

/**
 * Writes to `out` the indices (0..n-1) of the `m` largest values[0..n), in no particular order,
 * and returns how many were written (min(m, n)). `work` is caller-owned scratch of length ≥ n.
 * Bucket select: a 2 048-bucket histogram over [min, max] finds the bucket holding the m-th
 * largest value; everything above it is taken, and only that bucket's values go through
 * quickselect. Three linear passes (≈ 3× faster than quickselect over all n at n = 50 000).
 */
export function topIndices(values: Float32Array, n: number, m: number, out: Int32Array, work: Float32Array): number {
  if (m >= n) {
    for (let i = 0; i < n; i++) out[i] = i;
    return n;
  }
  if (m <= 0) return 0;
  let lo = Infinity,
    hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) {
    for (let i = 0; i < m; i++) out[i] = i;
    return m;
  }
  const B = BUCKETS,
    scale = (B - 1) / (hi - lo);
  // Shared, zeroed per call: a fresh 8 KiB array three times a query was ~4 % of an image
  // query's CPU at 100 k rows (issue 27's profile), more than the fill.
  const counts = COUNTS.fill(0);
  for (let i = 0; i < n; i++) counts[((values[i] - lo) * scale) | 0]++;
  let cut = B - 1,
    above = 0;
  for (; cut > 0 && above + counts[cut] < m; cut--) above += counts[cut];
  // Values in bucket `cut`: the (m - above) largest of them complete the set.
  let inCut = 0;
  for (let i = 0; i < n; i++) if ((((values[i] - lo) * scale) | 0) === cut) work[inCut++] = values[i];
  const t = kthLargest(work, inCut, m - above - 1);
  let c = 0;
  for (let i = 0; i < n; i++) {
    const b = ((values[i] - lo) * scale) | 0;
    if (b > cut || (b === cut && values[i] > t)) out[c++] = i;
  }
  for (let i = 0; i < n && c < m; i++) if (values[i] === t && (((values[i] - lo) * scale) | 0) === cut) out[c++] = i;
  return c;
}

const BUCKETS = 2048;
const COUNTS = new Int32Array(BUCKETS);

/** The value that would be at index k (0-based) if a[0..n) were sorted descending; reorders a. */
export function kthLargest(a: Float32Array, n: number, k: number): number {
  let lo = 0,
    hi = n - 1;
  while (hi > lo) {
    // Median of three as pivot: no quadratic case on sorted input.
    const mid = (lo + hi) >>> 1;
    const x = a[lo],
      y = a[mid],
      z = a[hi];
    const pivot = x > y ? (y > z ? y : x > z ? z : x) : x > z ? x : y > z ? z : y;
    let i = lo,
      j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}

export interface Scored {
  rowId: number;
  score: number;
}

const better = (a: Scored, b: Scored) => b.score - a.score || a.rowId - b.rowId;

/**
 * The k best of a small list, best first; ties broken by rowId so results are deterministic.
 * For k well under the list (an image query rescores 128 rows for k = 10) the best k are kept
 * by insertion, then sorted: a comparator sort of all of them was ~5 % of the query's CPU at
 * 100 k rows (issue 27).
 */
export function bestK(items: Scored[], k: number): Scored[] {
  if (k > 32 || items.length <= 2 * k) {
    items.sort(better);
    return items.length > k ? items.slice(0, k) : items;
  }
  const top: Scored[] = [];
  for (const it of items) {
    if (top.length === k && better(it, top[k - 1]) >= 0) continue;
    let i = top.length < k ? top.length : k - 1;
    while (i > 0 && better(it, top[i - 1]) < 0) {
      if (i < k) top[i] = top[i - 1];
      i--;
    }
    top[i] = it;
  }
  return top;
}
