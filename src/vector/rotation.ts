/**
 * A fixed random rotation: x ↦ H·D·x / √n (D a ±1 diagonal drawn from a seed, H the Walsh–Hadamard
 * matrix), applied to the vector zero-padded to n = padDim.
 *
 * Why: CLIP dimensions have very uneven variances (a few dominate). Sign bits of raw dimensions
 * then carry little information; after a random orthogonal rotation every coordinate mixes all
 * dimensions and each sign bit is about equally informative. On the clustered bench set this
 * moved coarse recall@10 within 5 000 candidates (of 100 k) from 0.59 to 0.98. Being orthogonal,
 * it preserves dot products, so estimates computed in the rotated space rank like the original.
 * The fast transform is O(n log n): ~2 300 butterflies for 512 dimensions.
 */
/** The rotation's seed unless the index is given one (VectorIndexOptions.seed). */
export const DEFAULT_SEED = 0x2545f491;

export class Rotation {
  readonly signs: Float32Array;

  constructor(
    readonly dim: number,
    readonly padDim: number,
    seed = DEFAULT_SEED,
  ) {
    if (padDim & (padDim - 1) || padDim < dim) throw new RangeError("padDim must be a power of two ≥ dim");
    this.signs = new Float32Array(padDim);
    // xorshift32: deterministic, so codes written by one process are valid for the next.
    let s = seed >>> 0 || 1;
    for (let j = 0; j < padDim; j++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      this.signs[j] = s & 1 ? 1 : -1;
    }
  }

  /** out (length padDim) = rotation of `src` (length ≥ dim) scaled by `scale`. */
  apply(src: ArrayLike<number>, out: Float32Array, scale = 1): void {
    const n = this.padDim,
      d = this.dim,
      signs = this.signs;
    for (let j = 0; j < d; j++) out[j] = src[j] * signs[j];
    for (let j = d; j < n; j++) out[j] = 0;
    for (let h = 1; h < n; h <<= 1) {
      for (let i = 0; i < n; i += h << 1) {
        for (let j = i, e = i + h; j < e; j++) {
          const a = out[j],
            b = out[j + h];
          out[j] = a + b;
          out[j + h] = a - b;
        }
      }
    }
    const s = scale / Math.sqrt(n);
    for (let j = 0; j < n; j++) out[j] *= s;
  }
}
