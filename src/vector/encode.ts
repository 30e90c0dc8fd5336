/**
 * Row encoding and query preparation (plain TypeScript; per-row cost is a few microseconds).
 *
 * A row x (normalised) becomes r = R·x − R·c: rotated (see rotation.ts) and centred on `c`, the
 * mean of the data. Centring matters because CLIP vectors share a large common component that
 * would otherwise bias every sign bit the same way. Ranking by q·(x − c) equals ranking by q·x
 * (q·c is the same for every row), so the query is rotated but not centred.
 *
 * Per row we store:
 *  - sign bits of r (Hamming coarse pass; 1-bit asymmetric estimate, RaBitQ-style:
 *    q·(x − c) ≈ factor · Σ_j q_r,j·sign(r_j), factor = |r|² / Σ|r_j|);
 *  - for the middle pass (layout.refineBits):
 *    2: one extra bit per dim beside the sign (RaBitQ's "extended bits"): u_j = 2·sign_j + extra_j,
 *       levels (u_j − 1.5) on a grid whose threshold t is picked per row (of ~30 candidates, the
 *       one whose levels point closest to r); q·(x − c) ≈ scale · Σ q_r,j·(u_j − 1.5) with
 *       scale = |r|² / Σ r_j·(u_j − 1.5), as for the 1-bit factor;
 *    4: 4-bit uniform codes of r with a per-row step (q·(x − c) ≈ step·Σ q_r,j·(u_j − 7.5)).
 */
import { FACTOR_SCALE, type Layout } from "./layout.ts";
import type { Rotation } from "./rotation.ts";

/** Clip range of the 4-bit codes in units of the row's coordinate RMS (≈ Lloyd–Max for 16 levels). */
const REFINE_CLIP = 2.7;

export interface RowViews {
  u8: Uint8Array;
  u16: Uint16Array;
  f32: Float32Array;
}

export interface PreparedQuery {
  /** Rotated, normalised query (padDim). */
  rotated: Float32Array;
  /** Sign bits (codeBytes). */
  code: Uint8Array;
  /**
   * |coordinates| quantised to 4 bits (m_j = round(|q_j| / step)), as 4 bit-planes of codeBytes
   * each: the 1-bit estimate is step · (Σ m_j − 2 · Σ_{j: bits differ} m_j).
   */
  planes: Uint8Array;
  /** step · Σ m_j and 2 · step, both divided by FACTOR_SCALE (the kernel multiplies by the raw u16 factor). */
  sumAbs: number;
  twoStep: number;
  /**
   * Query quantised for the middle pass, with its inverse scale and offset: refineBits 4, i16 per
   * dim (offset 7.5·Σq); refineBits 2, i8 in the order refine2 reads it (qvecOrder2; offset 1.5·Σq).
   */
  q16: Int16Array;
  q8: Int8Array;
  invScale: number;
  offset: number;
}

/** SPREAD[2b], SPREAD[2b + 1]: bits 0–3 and 4–7 of byte b as the bytes (0 or 1) of a little-endian u32. */
const SPREAD = (() => {
  const t = new Uint32Array(512);
  for (let b = 0; b < 256; b++) {
    for (let k = 0; k < 8; k++) if (b & (1 << k)) t[2 * b + (k >> 2)] |= 1 << (8 * (k & 3));
  }
  return t;
})();

/** Threshold candidates of the 2-bit grid, in units of the row's coordinate RMS: bins of BIN_W up to BINS·BIN_W. */
const BINS = 64,
  BIN_W = 0.05,
  T_FIRST = 8,
  T_LAST = 40;

/**
 * Where refine2 reads q8: per 16-byte block of codes (128 dims) and bit k, the 16 dims 128·blk + 8·i + k
 * (i = 0..15) — so one AND + compare of a block's code bytes with bit k masks them all at once.
 */
export function qvecOrder2(j: number): number {
  const blk = j >> 7,
    i = (j & 127) >> 3,
    k = j & 7;
  return blk * 128 + k * 16 + i;
}

export class Encoder {
  private readonly rotatedCenter: Float32Array;
  private readonly tmp: Float32Array;
  /** tmp's f32 bits, for the branch-free sign test (positive). */
  private readonly tmpBits: Int32Array;
  private readonly unit: Float32Array;
  private readonly binCount = new Int32Array(BINS);
  private readonly binSum = new Float64Array(BINS);
  /** Per dim: its |r| bin while encoding a row (2 bits), its 2-bit level ×5 in nibblesOf. */
  private readonly bins: Uint8Array;
  private readonly bins32: Uint32Array;

  constructor(
    readonly layout: Layout,
    readonly rotation: Rotation,
  ) {
    this.rotatedCenter = new Float32Array(layout.padDim);
    this.tmp = new Float32Array(layout.padDim);
    this.tmpBits = new Int32Array(this.tmp.buffer);
    this.unit = new Float32Array(layout.dim);
    this.bins32 = new Uint32Array(layout.padDim / 4);
    this.bins = new Uint8Array(this.bins32.buffer);
  }

  /** Sets the centre (original space, need not be unit length); null = origin. */
  setCenter(center: Float32Array | null): void {
    if (!center) this.rotatedCenter.fill(0);
    else this.rotation.apply(center, this.rotatedCenter);
  }

  /** Encodes `vector` into row `row` of a chunk: codes + factor in its scan block, refine + scale in its side block. */
  encodeRow(vector: Float32Array, views: RowViews, scanBase: number, sideBase: number, row: number): void {
    const L = this.layout,
      n = L.padDim,
      r = this.tmp,
      rc = this.rotatedCenter;
    let s = 0;
    for (let j = 0; j < L.dim; j++) s += vector[j] * vector[j];
    this.rotation.apply(vector, r, s > 0 ? 1 / Math.sqrt(s) : 0);
    let nrm2 = 0,
      l1 = 0;
    for (let j = 0; j < n; j++) {
      const v = r[j] - rc[j];
      r[j] = v;
      nrm2 += v * v;
      l1 += Math.abs(v);
    }
    // The loops below are branch-free: a row's signs and bins are coin flips, and a mispredicted
    // branch per dimension made encodeRow ~20 µs of a 27 µs add (1 M-row build, 2-bit layout).
    const u8 = views.u8,
      ri = this.tmpBits;
    const codeAt = scanBase + L.offCodes + row * L.codeBytes;
    for (let b = 0; b < L.codeBytes; b++) {
      let byte = 0;
      for (let k = 0; k < 8; k++) byte |= positive(ri[b * 8 + k]) << k;
      u8[codeAt + b] = byte;
    }
    views.u16[(scanBase + L.offFactor) / 2 + row] =
      l1 > 0 ? Math.min(65535, Math.round((nrm2 / l1) * FACTOR_SCALE)) : 0;
    const refAt = sideBase + L.offRefine + row * L.refineBytes;
    if (L.refineBits === 4) {
      views.f32[(sideBase + L.offScale) / 4 + row] = writeNibbles(r, n, nrm2, u8, refAt);
      return;
    }
    // 2 bits: the threshold t (|r_j| ≥ t → outer level ±1.5, else ±0.5) that maximises
    // cos(r, l) = (0.5·Σ|r| + Σ_{|r_j| ≥ t} |r_j|) / |r| / √(0.25·n + 2·#{|r_j| ≥ t}), over bin edges of |r|/rms.
    const rms = Math.sqrt(nrm2 / n),
      binOf = rms > 0 ? 1 / (rms * BIN_W) : 0;
    const cnt = this.binCount,
      sum = this.binSum,
      bins = this.bins;
    cnt.fill(0);
    sum.fill(0);
    for (let j = 0; j < n; j++) {
      const v = Math.abs(r[j]),
        b = Math.min((v * binOf) | 0, BINS - 1);
      bins[j] = b;
      cnt[b]++;
      sum[b] += v;
    }
    let big = 0,
      bigSum = 0,
      bestB = T_LAST,
      bestScore = -1;
    for (let b = BINS - 1; b >= T_FIRST; b--) {
      big += cnt[b];
      bigSum += sum[b];
      if (b > T_LAST) continue;
      const score = (0.5 * l1 + bigSum) / Math.sqrt(0.25 * n + 2 * big);
      if (score > bestScore) {
        bestScore = score;
        bestB = b;
      }
    }
    // The bins computed above, so the chosen edge splits exactly as scored.
    let dot = 0;
    for (let b = 0; b < L.codeBytes; b++) {
      let byte = 0;
      for (let k = 0; k < 8; k++) {
        // u = 2·sign + extra: positive 2 (inner) / 3 (outer), negative 1 (inner) / 0 (outer),
        // so extra = 1 when sign and outer agree. Branch-free: the bits are coin flips.
        const j = b * 8 + k,
          outer = (bestB - 1 - bins[j]) >>> 31; // bins[j] ≥ bestB
        byte |= (1 ^ positive(ri[j]) ^ outer) << k;
        dot += Math.abs(r[j]) * (0.5 + outer);
      }
      u8[refAt + b] = byte;
    }
    views.f32[(sideBase + L.offScale) / 4 + row] = dot > 0 ? nrm2 / dot : 0;
  }

  /**
   * A vector as 4-bit nibbles (refineBits-4 layout) at `at`, however the layout stores rows: the
   * query's side of list scoring (lists.ts listScores), which wants more than 2 bits of the query.
   */
  encodeNibbles(vector: Float32Array, u8: Uint8Array, at: number): void {
    const L = this.layout,
      n = L.padDim,
      r = this.tmp,
      rc = this.rotatedCenter;
    let s = 0;
    for (let j = 0; j < L.dim; j++) s += vector[j] * vector[j];
    this.rotation.apply(vector, r, s > 0 ? 1 / Math.sqrt(s) : 0);
    let nrm2 = 0;
    for (let j = 0; j < n; j++) {
      const v = r[j] - rc[j];
      r[j] = v;
      nrm2 += v * v;
    }
    writeNibbles(r, n, nrm2, u8, at);
  }

  /**
   * Row `row`'s codes as 4-bit nibbles (refineBits-4 layout) at `dst`: copied (refineBits 4) or
   * expanded from sign + extra bit to 5·u (0, 5, 10, 15: the 2-bit levels, scaled). List training
   * and assignment read rows this way; only their direction matters there.
   */
  nibblesOf(u8: Uint8Array, scanBase: number, sideBase: number, row: number, dst: number): void {
    const L = this.layout;
    const ref = sideBase + L.offRefine + row * L.refineBytes;
    if (L.refineBits === 4) {
      u8.copyWithin(dst, ref, ref + L.refineBytes);
      return;
    }
    const code = scanBase + L.offCodes + row * L.codeBytes,
      u = this.bins,
      u32 = this.bins32;
    // Per byte: its 8 bits spread to 8 bytes of 0/1 (two u32 words); 5·(2·sign + extra) per byte lane, no carries.
    for (let b = 0; b < L.codeBytes; b++) {
      const sb = u8[code + b] << 1,
        eb = u8[ref + b] << 1;
      u32[2 * b] = (2 * SPREAD[sb] + SPREAD[eb]) * 5;
      u32[2 * b + 1] = (2 * SPREAD[sb + 1] + SPREAD[eb + 1]) * 5;
    }
    for (let g = 0; g < L.padDim; g += 32) {
      const out = dst + g / 2;
      for (let i = 0; i < 16; i++) u8[out + i] = u[g + i] | (u[g + 16 + i] << 4);
    }
  }

  /** Normalises and rotates the query and builds everything the kernels read. */
  prepareQuery(query: Float32Array, out: PreparedQuery): void {
    const L = this.layout,
      n = L.padDim,
      qr = out.rotated;
    let s = 0;
    for (let j = 0; j < L.dim; j++) s += query[j] * query[j];
    this.rotation.apply(query, qr, s > 0 ? 1 / Math.sqrt(s) : 0);
    let max = 0;
    for (let j = 0; j < n; j++) max = Math.max(max, Math.abs(qr[j]));
    const step = max / 15,
      inv = step > 0 ? 1 / step : 0;
    const { code, planes } = out;
    code.fill(0);
    planes.fill(0);
    let sumM = 0;
    for (let j = 0; j < n; j++) {
      const byte = j >> 3,
        bit = 1 << (j & 7);
      if (qr[j] > 0) code[byte] |= bit;
      const m = Math.round(Math.abs(qr[j]) * inv);
      sumM += m;
      for (let k = 0; k < 4; k++) if (m & (1 << k)) planes[k * L.codeBytes + byte] |= bit;
    }
    out.sumAbs = (step * sumM) / FACTOR_SCALE;
    out.twoStep = (2 * step) / FACTOR_SCALE;
    if (L.refineBits === 4) {
      const scale = max > 0 ? 32767 / max : 0;
      let qsum = 0;
      for (let j = 0; j < n; j++) {
        const v = Math.round(qr[j] * scale);
        out.q16[j] = v;
        qsum += v;
      }
      out.invScale = scale > 0 ? 1 / scale : 0;
      out.offset = 7.5 * qsum * out.invScale;
    } else {
      // i8 is plenty beside 2-bit codes (its rounding error is ~1/250 of the largest coordinate).
      const scale = max > 0 ? 127 / max : 0;
      let qsum = 0;
      for (let j = 0; j < n; j++) {
        const v = Math.round(qr[j] * scale);
        out.q8[qvecOrder2(j)] = v;
        qsum += v;
      }
      out.invScale = scale > 0 ? 1 / scale : 0;
      out.offset = 1.5 * qsum * out.invScale;
    }
  }

  newPreparedQuery(): PreparedQuery {
    const L = this.layout;
    return {
      rotated: new Float32Array(L.padDim),
      code: new Uint8Array(L.codeBytes),
      planes: new Uint8Array(4 * L.codeBytes),
      sumAbs: 0,
      twoStep: 0,
      q16: new Int16Array(L.padDim),
      q8: new Int8Array(L.padDim),
      invScale: 0,
      offset: 0,
    };
  }
}

/**
 * 1 if the f32 whose bits are `i` is > 0, else 0, without a branch: a positive f32 has i > 0;
 * +0 is 0 and −0 is i32's minimum, whose negation wraps to itself (hence the `& ~i`).
 */
function positive(i: number): number {
  return ((0 - i) & ~i) >>> 31;
}

/** r (centred, rotated; |r|² = nrm2) as 4-bit nibbles at `at`; returns their step. */
function writeNibbles(r: Float32Array, n: number, nrm2: number, u8: Uint8Array, at: number): number {
  const step = (REFINE_CLIP * Math.sqrt(nrm2 / n)) / 8;
  const inv = step > 0 ? 1 / step : 0;
  for (let g = 0; g < n; g += 32) {
    const out = at + g / 2;
    for (let i = 0; i < 16; i++) {
      u8[out + i] = nibble(r[g + i] * inv) | (nibble(r[g + 16 + i] * inv) << 4);
    }
  }
  return step;
}

/** 4-bit level: floor(x) clamped to −8..7, stored offset by 8. */
function nibble(x: number): number {
  const k = Math.floor(x);
  return (k < -8 ? -8 : k > 7 ? 7 : k) + 8;
}
