/** Selection helpers: the m largest of n scores without sorting all n. */

/**
 * Writes to `out` the indices (0..n-1) of the `m` largest values[0..n), in no particular order,
 * and returns how many were written (min(m, n)). `work` is caller-owned scratch of length ≥ n.
 * Quickselect finds the m-th largest value, then one pass gathers everything above it and fills
 * the remainder with values equal to it (first come first served on ties).
 */
export function topIndices(values: Float32Array, n: number, m: number, out: Int32Array, work: Float32Array): number {
  if (m >= n) {
    for (let i = 0; i < n; i++) out[i] = i;
    return n;
  }
  if (m <= 0) return 0;
  work.set(values.subarray(0, n));
  const t = kthLargest(work, n, m - 1);
  let c = 0;
  for (let i = 0; i < n; i++) if (values[i] > t) out[c++] = i;
  for (let i = 0; i < n && c < m; i++) if (values[i] === t) out[c++] = i;
  return c;
}

/** The value that would be at index k (0-based) if a[0..n) were sorted descending; reorders a. */
export function kthLargest(a: Float32Array, n: number, k: number): number {
  let lo = 0, hi = n - 1;
  while (hi > lo) {
    // Median of three as pivot: no quadratic case on sorted input.
    const mid = (lo + hi) >>> 1;
    const x = a[lo], y = a[mid], z = a[hi];
    const pivot = x > y ? (y > z ? y : x > z ? z : x) : x > z ? x : y > z ? z : y;
    let i = lo, j = hi;
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

/** The k best of a small list, best first; ties broken by rowId so results are deterministic. */
export function bestK(items: Scored[], k: number): Scored[] {
  items.sort((a, b) => b.score - a.score || a.rowId - b.rowId);
  return items.length > k ? items.slice(0, k) : items;
}
