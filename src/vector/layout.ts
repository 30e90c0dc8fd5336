/**
 * Byte layout of one chunk: CHUNK_ROWS rows of one partition, in two blocks of the WebAssembly
 * memory. Rows of a partition are packed densely (slot s lives in chunk s / CHUNK_ROWS, row
 * s % CHUNK_ROWS).
 *
 * The scan block holds only the sign codes, and a partition's scan blocks are allocated in
 * contiguous extents (see Arena.allocRun / Partition), so the full scan streams through long
 * unbroken runs; everything read only for candidates lives in the side block. (Measured on the
 * 1 M-row scan: codes contiguous 4.3 ms; the same codes with a 512-byte column between 128-row
 * runs 11 ms — the hardware prefetcher loses the stream at every gap.)
 *
 * Scan block, per row:
 *   codes   padDim/8 bytes   sign bits of the rotated, centred vector
 * Side block, per row:
 *   refine  padDim/2 bytes   4-bit codes of the same vector; byte i of 16-byte group g holds
 *                            dim 32g+i in its low nibble and dim 32g+16+i in its high nibble
 *   factor  f32              |r|² / Σ|r_j|: turns the 1-bit dot product into an estimate of q·(x−c)
 *   scale   f32              step of the 4-bit codes
 *   groupA  i32              dense collection id (per partition)
 *   groupB  i32              dense video id (per partition)
 */

export const CHUNK_ROWS = 128;
export const CHUNK_SHIFT = 7;
/** Mask / distance value of an excluded row; above any real distance (padDim ≤ MAX_PAD_DIM). */
export const MASKED = 0xffff;
/** The popcount kernel sums per-byte counts in 8-bit lanes: padDim/128 words × 8 ≤ 255. */
export const MAX_PAD_DIM = 2048;

export interface Layout {
  dim: number;
  /** dim rounded up to a power of two ≥ 128 (the fast Hadamard transform needs a power of two). */
  padDim: number;
  codeBytes: number;
  refineBytes: number;
  /** Scan block. */
  offCodes: number;
  scanBlockBytes: number;
  /** Side block. */
  offRefine: number;
  offFactor: number;
  offScale: number;
  offGroupA: number;
  offGroupB: number;
  sideBlockBytes: number;
}

export function makeLayout(dim: number): Layout {
  if (!Number.isInteger(dim) || dim < 1) throw new RangeError(`dim must be a positive integer, got ${dim}`);
  let padDim = 128;
  while (padDim < dim) padDim *= 2;
  if (padDim > MAX_PAD_DIM) throw new RangeError(`dim ${dim} is above the supported ${MAX_PAD_DIM}`);
  const codeBytes = padDim / 8;
  const refineBytes = padDim / 2;
  const R = CHUNK_ROWS;
  const offCodes = 0;
  const scanBlockBytes = R * codeBytes;
  const offRefine = 0;
  const offFactor = R * refineBytes;
  const offScale = offFactor + R * 4;
  const offGroupA = offScale + R * 4;
  const offGroupB = offGroupA + R * 4;
  const sideBlockBytes = offGroupB + R * 4;
  return {
    dim, padDim, codeBytes, refineBytes,
    offCodes, scanBlockBytes,
    offRefine, offFactor, offScale, offGroupA, offGroupB, sideBlockBytes,
  };
}
