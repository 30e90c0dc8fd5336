/**
 * Score calibration for the vector modes (docs/SEARCH.md). A raw cosine means different things
 * for different queries (some texts sit closer to every image than others), so each query's raw
 * scores are read against a null distribution: the same query vector against a fixed sample of
 * the account's own vectors of that kind (median / MAD, blended with a weak prior). The z-score against that null is mapped to 0–1 with a
 * logistic centred at Z_CENTER, so `score = 0.5` always means "Z_CENTER standard deviations above
 * what this query typically scores on this account's content".
 */

export interface NullStats {
  mean: number;
  std: number;
  /** Sample size the statistics came from (before the prior). */
  n: number;
}

/** z at which the calibrated score is 0.5. */
export const Z_CENTER = 3;
/** Logistic slope: z = 4 → 0.82, z = 5 → 0.95, z = 2 → 0.18. */
export const Z_SLOPE = 1.5;
/**
 * Pseudo-count of the prior null (random directions: mean 0, variance 1/dim). It only matters for
 * accounts with a handful of vectors, where a sample mean/std alone would be noise.
 */
export const PRIOR_WEIGHT = 16;

export function dot(a: Float32Array, b: Float32Array, bOffset = 0): number {
  // Four independent sums: one accumulator makes the loop wait on each addition.
  let s0 = 0,
    s1 = 0,
    s2 = 0,
    s3 = 0;
  const n = a.length;
  let i = 0;
  for (; i + 3 < n; i += 4) {
    s0 += a[i] * b[bOffset + i];
    s1 += a[i + 1] * b[bOffset + i + 1];
    s2 += a[i + 2] * b[bOffset + i + 2];
    s3 += a[i + 3] * b[bOffset + i + 3];
  }
  for (; i < n; i++) s0 += a[i] * b[bOffset + i];
  return s0 + s1 + s2 + s3;
}

/**
 * Null statistics of query `q` against `sample` (n vectors of q.length packed row after row).
 * Robust on purpose — median and MAD (scaled to a normal σ) — so the few sample vectors that
 * really match the query do not drag the null towards them; then blended with the prior.
 */
export function nullStats(q: Float32Array, sample: Float32Array): NullStats {
  const d = q.length;
  const n = d === 0 ? 0 : Math.floor(sample.length / d);
  const sims = new Float64Array(n);
  for (let i = 0; i < n; i++) sims[i] = dot(q, sample, i * d);
  return nullStatsOfSims(sims, d);
}

/**
 * The same statistics from the query's similarities to the sample, computed elsewhere (search
 * takes them from the sample's SIMD dot products: src/vector/wasm/row-dots.ts). Reorders `sims`.
 */
export function nullStatsOfSims(sims: Float64Array, d: number): NullStats {
  const n = sims.length;
  let center = 0;
  let spread2 = 0;
  if (n > 0) {
    center = median(sims);
    for (let i = 0; i < n; i++) sims[i] = Math.abs(sims[i] - center);
    let mad = 1.4826 * median(sims);
    if (!(mad > 0)) {
      // Degenerate (over half the sample identical): fall back to the standard deviation.
      // (sims now holds |s - center|, whose squares are the same.)
      let ss = 0;
      for (const s of sims) ss += s ** 2;
      mad = Math.sqrt(ss / n);
    }
    spread2 = mad * mad;
  }
  const priorVar = d > 0 ? 1 / d : 1;
  const w = PRIOR_WEIGHT;
  const mean = (n * center) / (n + w); // prior mean 0
  const variance = Math.max((n * spread2 + w * priorVar) / (n + w), 1e-8);
  return { mean, std: Math.sqrt(variance), n };
}

/**
 * The median of `xs`, which it reorders: selected in place (Hoare's quickselect), not sorted — the
 * same value as sorting a copy, without the copy and the sort (two per vector mode per search).
 * A NaN among them takes the sort's answer (it sorts NaN last).
 */
export function median(xs: Float64Array): number {
  const n = xs.length;
  if (n === 0) return Number.NaN;
  for (let i = 0; i < n; i++)
    if (Number.isNaN(xs[i])) {
      const s = Float64Array.from(xs).sort();
      const m = n >> 1;
      return n % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
    }
  const m = n >> 1;
  const hi = select(xs, m);
  if (n % 2) return hi;
  // Everything before position m is ≤ xs[m]: the other middle value is the largest of them.
  let lo = xs[0];
  for (let i = 1; i < m; i++) if (xs[i] > lo) lo = xs[i];
  return (lo + hi) / 2;
}

/** Puts the k-th smallest of `a` at a[k], smaller-or-equal values before it, and returns it. */
function select(a: Float64Array, k: number): number {
  let left = 0;
  let right = a.length - 1;
  while (right > left) {
    const pivot = a[(left + right) >> 1];
    let i = left;
    let j = right;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else break;
  }
  return a[k];
}

export const zScore = (raw: number, s: NullStats): number => (raw - s.mean) / s.std;

/** z → (0, 1). Monotonic, so ranking by score or by z is the same within one query. */
export const zToScore = (z: number): number => 1 / (1 + Math.exp(-Z_SLOPE * (z - Z_CENTER)));

/** Inverse of zToScore (for documentation and the CLI: which z a threshold stands for). */
export const scoreToZ = (score: number): number => Z_CENTER + Math.log(score / (1 - score)) / Z_SLOPE;

export const calibrate = (raw: number, s: NullStats): number => zToScore(zScore(raw, s));

/**
 * Up to `max` evenly spaced rows of a packed matrix (deterministic: the same account content
 * always gives the same sample, so scores do not jitter between identical searches).
 */
export function strideSample(vectors: Float32Array, dim: number, max: number): Float32Array {
  const n = Math.floor(vectors.length / dim);
  if (n <= max) return vectors.slice(0, n * dim);
  const out = new Float32Array(max * dim);
  for (let i = 0; i < max; i++) {
    const row = Math.floor((i * n) / max);
    out.set(vectors.subarray(row * dim, (row + 1) * dim), i * dim);
  }
  return out;
}
