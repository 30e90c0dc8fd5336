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
 *  - 4-bit uniform codes of r with a per-row step (the middle pass: q·(x − c) ≈ step·Σ q_r,j·(u_j − 7.5)).
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
  /** Query quantised to i16 for the 4-bit pass, with its inverse scale and offset (7.5·Σq). */
  q16: Int16Array;
  invScale: number;
  offset: number;
}

export class Encoder {
  private readonly rotatedCenter: Float32Array;
  private readonly tmp: Float32Array;
  private readonly unit: Float32Array;

  constructor(
    readonly layout: Layout,
    readonly rotation: Rotation,
  ) {
    this.rotatedCenter = new Float32Array(layout.padDim);
    this.tmp = new Float32Array(layout.padDim);
    this.unit = new Float32Array(layout.dim);
  }

  /** Sets the centre (original space, need not be unit length); null = origin. */
  setCenter(center: Float32Array | null): void {
    if (!center) this.rotatedCenter.fill(0);
    else this.rotation.apply(center, this.rotatedCenter);
  }

  /** Encodes `vector` into row `row` of a chunk: codes + factor in its scan block, refine + scale in its side block. */
  encodeRow(vector: Float32Array, views: RowViews, scanBase: number, sideBase: number, row: number): void {
    const L = this.layout, n = L.padDim, r = this.tmp, rc = this.rotatedCenter;
    let s = 0;
    for (let j = 0; j < L.dim; j++) s += vector[j] * vector[j];
    this.rotation.apply(vector, r, s > 0 ? 1 / Math.sqrt(s) : 0);
    let nrm2 = 0, l1 = 0;
    for (let j = 0; j < n; j++) {
      const v = r[j] - rc[j];
      r[j] = v;
      nrm2 += v * v;
      l1 += Math.abs(v);
    }
    const u8 = views.u8;
    const codeAt = scanBase + L.offCodes + row * L.codeBytes;
    for (let b = 0; b < L.codeBytes; b++) {
      let byte = 0;
      for (let k = 0; k < 8; k++) if (r[b * 8 + k] > 0) byte |= 1 << k;
      u8[codeAt + b] = byte;
    }
    const step = (REFINE_CLIP * Math.sqrt(nrm2 / n)) / 8;
    const inv = step > 0 ? 1 / step : 0;
    const refAt = sideBase + L.offRefine + row * L.refineBytes;
    for (let g = 0; g < n; g += 32) {
      const out = refAt + g / 2;
      for (let i = 0; i < 16; i++) {
        u8[out + i] = nibble(r[g + i] * inv) | (nibble(r[g + 16 + i] * inv) << 4);
      }
    }
    views.u16[(scanBase + L.offFactor) / 2 + row] = l1 > 0 ? Math.min(65535, Math.round((nrm2 / l1) * FACTOR_SCALE)) : 0;
    views.f32[(sideBase + L.offScale) / 4 + row] = step;
  }

  /** Normalises and rotates the query and builds everything the kernels read. */
  prepareQuery(query: Float32Array, out: PreparedQuery): void {
    const L = this.layout, n = L.padDim, qr = out.rotated;
    let s = 0;
    for (let j = 0; j < L.dim; j++) s += query[j] * query[j];
    this.rotation.apply(query, qr, s > 0 ? 1 / Math.sqrt(s) : 0);
    let max = 0;
    for (let j = 0; j < n; j++) max = Math.max(max, Math.abs(qr[j]));
    const step = max / 15, inv = step > 0 ? 1 / step : 0;
    const { code, planes } = out;
    code.fill(0);
    planes.fill(0);
    let sumM = 0;
    for (let j = 0; j < n; j++) {
      const byte = j >> 3, bit = 1 << (j & 7);
      if (qr[j] > 0) code[byte] |= bit;
      const m = Math.round(Math.abs(qr[j]) * inv);
      sumM += m;
      for (let k = 0; k < 4; k++) if (m & (1 << k)) planes[k * L.codeBytes + byte] |= bit;
    }
    out.sumAbs = (step * sumM) / FACTOR_SCALE;
    out.twoStep = (2 * step) / FACTOR_SCALE;
    const scale = max > 0 ? 32767 / max : 0;
    let qsum = 0;
    for (let j = 0; j < n; j++) {
      const v = Math.round(qr[j] * scale);
      out.q16[j] = v;
      qsum += v;
    }
    out.invScale = scale > 0 ? 1 / scale : 0;
    out.offset = 7.5 * qsum * out.invScale;
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
      invScale: 0,
      offset: 0,
    };
  }
}

/** 4-bit level: floor(x) clamped to −8..7, stored offset by 8. */
function nibble(x: number): number {
  const k = Math.floor(x);
  return (k < -8 ? -8 : k > 7 ? 7 : k) + 8;
}
