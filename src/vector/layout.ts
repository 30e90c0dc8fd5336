/**
 * Byte layout of one chunk: chunkRows rows (32, 64 or 128) of one partition, in two blocks of the
 * WebAssembly memory. Rows of a partition are packed densely (slot s lives in chunk s / chunkRows,
 * row s % chunkRows).
 *
 * The scan block holds the sign codes and a 2-byte factor per row, and a partition's scan
 * blocks are allocated in contiguous extents (see RowStore.takeScanBlock), so the full scan
 * streams through long runs; what is read only for a few candidates lives in the side block.
 * Measured on the 1 M-row scan (128-row chunks of 8 KiB codes): codes back to back 4.3 ms, with
 * 256 bytes between chunks 4.3 ms, with 512 bytes 11 ms, interleaved with the side data 6–12 ms —
 * the hardware prefetcher drops the stream at larger gaps. Hence a u16 factor, not an f32 one.
 *
 * Scan block, per row:
 *   codes   padDim/8 bytes   sign bits of the rotated, centred vector
 *   factor  u16              |r|² / Σ|r_j| × FACTOR_SCALE: turns the 1-bit dot product into an
 *                            estimate of q·(x − c)
 * Side block, per row, refineBits = 2 (the default: sign + 1 extra bit, RaBitQ "extended bits"):
 *   refine  padDim/8 bytes   the extra bit of each dim (bit j&7 of byte j>>3, like the codes): the
 *                            2-bit level u_j = 2·sign_j + extra_j (0..3) stands for (u_j − 1.5) — the
 *                            sign half is the scan block's code, so it is not stored twice
 *   scale   f32              |r|² / Σ r_j·(u_j − 1.5): turns Σ q_j·(u_j − 1.5) into an estimate of q·(x − c)
 *   groupA  i32              dense collection id (per partition)
 *   groupB  i32              dense video id (per partition)
 * Side block, per row, refineBits = 4 (the layout before; sign stored again as the nibbles' top bit):
 *   refine  padDim/2 bytes   4-bit codes of the same vector; byte i of 16-byte group g holds
 *                            dim 32g+i in its low nibble and dim 32g+16+i in its high nibble
 *   scale   f32              step of the 4-bit codes
 *   groupA, groupB           as above
 * Either way, list training and assignment (lists.ts) read rows as 4-bit nibbles in the refine
 * layout of refineBits = 4: 2-bit rows are expanded (encode.ts nibblesOf) to 5·u_j.
 */

/**
 * Rows per chunk (Layout.chunkRows). 128 until issue 14's finer lists, where a list of ~120 rows
 * part-filled one 128-row chunk (437 B/row at 16 384 lists of 2 M rows against 293). With 32 a
 * list's tail wastes 16 rows on average; the scan's extra table entry and loop turn per chunk did
 * not show at 1 M (flat scan CPU per query 16–17 ms at 32 rows a chunk, 17–18 ms at 128; same run).
 */
export const CHUNK_ROWS_CHOICES = [32, 64, 128] as const;
export type ChunkRows = (typeof CHUNK_ROWS_CHOICES)[number];
export const DEFAULT_CHUNK_ROWS: ChunkRows = 32;
/** Mask / distance value of an excluded row; above any real distance (padDim ≤ MAX_PAD_DIM). */
export const MASKED = 0xffff;
/** The popcount kernel sums per-byte counts in 8-bit lanes: padDim/128 words × 8 ≤ 255. */
export const MAX_PAD_DIM = 2048;
/**
 * Fixed-point scale of the u16 factor. The factor is ≈ |r|/18 for 512 dims (|r| = |x − c| ≤ 2),
 * so typical values ~0.03–0.1 keep 4+ significant digits; the cap 65535 / 2^18 = 0.25 is only
 * reached by degenerate rows.
 */
export const FACTOR_SCALE = 2 ** 18;

/** Bits per dim of the middle pass's codes: 2 = sign (scan block) + 1 extra bit; 4 = 4-bit nibbles. */
export type RefineBits = 2 | 4;

export interface Layout {
  dim: number;
  /** Rows per chunk (32, 64 or 128), and its log2: slot s is chunk s >> chunkShift, row s & (chunkRows − 1). */
  chunkRows: number;
  chunkShift: number;
  refineBits: RefineBits;
  /** Bytes of a row's codes as 4-bit nibbles (padDim/2): what list training reads (lists.ts). */
  nibbleBytes: number;
  /** dim rounded up to a power of two ≥ 128 (the fast Hadamard transform needs a power of two). */
  padDim: number;
  codeBytes: number;
  refineBytes: number;
  /** Scan block. */
  offCodes: number;
  offFactor: number;
  scanBlockBytes: number;
  /** Side block. */
  offRefine: number;
  offScale: number;
  offGroupA: number;
  offGroupB: number;
  sideBlockBytes: number;
}

export function makeLayout(dim: number, refineBits: RefineBits = 2, chunkRows: number = DEFAULT_CHUNK_ROWS): Layout {
  if (!(CHUNK_ROWS_CHOICES as readonly number[]).includes(chunkRows))
    throw new RangeError(`chunkRows must be 32, 64 or 128, got ${chunkRows}`);
  if (refineBits !== 2 && refineBits !== 4) throw new RangeError(`refineBits must be 2 or 4, got ${refineBits}`);
  if (!Number.isInteger(dim) || dim < 1) throw new RangeError(`dim must be a positive integer, got ${dim}`);
  let padDim = 128;
  while (padDim < dim) padDim *= 2;
  if (padDim > MAX_PAD_DIM) throw new RangeError(`dim ${dim} is above the supported ${MAX_PAD_DIM}`);
  const codeBytes = padDim / 8;
  const nibbleBytes = padDim / 2;
  const refineBytes = refineBits === 4 ? nibbleBytes : padDim / 8;
  const R = chunkRows;
  const offCodes = 0;
  const offFactor = R * codeBytes;
  const scanBlockBytes = offFactor + R * 2;
  const offRefine = 0;
  const offScale = R * refineBytes;
  const offGroupA = offScale + R * 4;
  const offGroupB = offGroupA + R * 4;
  const sideBlockBytes = offGroupB + R * 4;
  return {
    dim,
    chunkRows: R,
    chunkShift: Math.log2(R),
    refineBits,
    nibbleBytes,
    padDim,
    codeBytes,
    refineBytes,
    offCodes,
    offFactor,
    scanBlockBytes,
    offRefine,
    offScale,
    offGroupA,
    offGroupB,
    sideBlockBytes,
  };
}

/**
 * Copies one encoded row between chunk rows: every column of both blocks, as listed above (a
 * column added to the layout is added here too).
 */
export function copyRow(
  L: Layout,
  u8: Uint8Array,
  fromScan: number,
  fromSide: number,
  fr: number,
  toScan: number,
  toSide: number,
  tr: number,
): void {
  const col = (fromBase: number, toBase: number, off: number, bytes: number) => {
    const f = fromBase + off + fr * bytes;
    u8.copyWithin(toBase + off + tr * bytes, f, f + bytes);
  };
  col(fromScan, toScan, L.offCodes, L.codeBytes);
  col(fromScan, toScan, L.offFactor, 2);
  col(fromSide, toSide, L.offRefine, L.refineBytes);
  col(fromSide, toSide, L.offScale, 4);
  col(fromSide, toSide, L.offGroupA, 4);
  col(fromSide, toSide, L.offGroupB, 4);
}
