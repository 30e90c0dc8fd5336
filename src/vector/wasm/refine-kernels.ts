/**
 * The middle-pass kernels (issue 14: split out of kernels.ts, which holds the scan, the mask
 * builders and the module assembly): the 4-bit and 2-bit refine estimates of the candidates the
 * scan kept, and dots4, the same 4-bit inner loop used to assign a row to its inverted list.
 * Written with the assembler in ./asm.ts and specialised for one chunk layout, like kernels.ts.
 */
import type { Layout } from "../layout.ts";
import { Fn, Op, Simd } from "./asm.ts";

/**
 * Pushes Σ_j u_j · vec_j (i32) for the padDim 4-bit codes at local `codes` (the side block's
 * nibble layout, u_j = 0..15) and the i16 vector at local `vec`; `nib` holds i8x16.splat(0x0f).
 * Nibbles are widened to i16 and multiplied with i32x4.dot_i16x8_s, fully unrolled over padDim.
 * The inner loop shared by refine and dots4 (each emits it once, so its scratch locals are its own).
 */
function dot4(f: Fn, L: Layout, codes: number, vec: number, nib: number): void {
  const acc = f.local("v128"),
    v = f.local("v128"),
    lo = f.local("v128"),
    hi = f.local("v128");
  f.i32(0).simd(Simd.i32x4_splat).set(acc);
  for (let g = 0; g < L.padDim / 32; g++) {
    f.get(codes)
      .vmem(Simd.v128_load, 16 * g)
      .tee(v)
      .get(nib)
      .simd(Simd.v128_and)
      .set(lo);
    f.get(v).i32(4).simd(Simd.i8x16_shr_u).set(hi);
    const parts: [number, number, number][] = [
      [lo, Simd.i16x8_extend_low_i8x16_u, 0],
      [lo, Simd.i16x8_extend_high_i8x16_u, 8],
      [hi, Simd.i16x8_extend_low_i8x16_u, 16],
      [hi, Simd.i16x8_extend_high_i8x16_u, 24],
    ];
    for (const [src, ext, dimOff] of parts) {
      f.get(src)
        .simd(ext)
        .get(vec)
        .vmem(Simd.v128_load, (32 * g + dimOff) * 2)
        .simd(Simd.i32x4_dot_i16x8_s);
      f.get(acc).simd(Simd.i32x4_add).set(acc);
    }
  }
  f.get(acc).lane(Simd.i32x4_extract_lane, 0).get(acc).lane(Simd.i32x4_extract_lane, 1).op(Op.i32_add);
  f.get(acc).lane(Simd.i32x4_extract_lane, 2).get(acc).lane(Simd.i32x4_extract_lane, 3).op(Op.i32_add).op(Op.i32_add);
}

/**
 * refine(slots, n, codeTable, sideTable, q16, invScale, offset, out) (refineBits 4; codeTable unused): out[i] = scale · (Σ_j q16_j·u_j ·
 * invScale − offset) for slot slots[i], u_j its 4-bit code of dim j (0..15, level (u − 7.5)·scale)
 * and q16 the rotated query quantised to i16 (offset = 7.5·Σq). Nibbles are widened to i16 and
 * multiplied with i32x4.dot_i16x8_s; the sum fits i32 for padDim ≤ 2048.
 */
export function refine(L: Layout): Fn {
  const f = new Fn("refine", ["i32", "i32", "i32", "i32", "i32", "f32", "f32", "i32"], []);
  const [slots, n, , sideTable, q16, invScale, offset, out] = [0, 1, 2, 3, 4, 5, 6, 7];
  const slot = f.local("i32"),
    base = f.local("i32"),
    rp = f.local("i32"),
    row = f.local("i32");
  const nib = f.local("v128");
  f.i32(0x0f).simd(Simd.i8x16_splat).set(nib);
  f.block().loop();
  f.get(n).op(Op.i32_eqz).brIf(1);
  f.get(slots).mem(Op.i32_load, 0, 2).set(slot);
  f.get(sideTable)
    .get(slot)
    .i32(L.chunkShift)
    .op(Op.i32_shr_u)
    .i32(2)
    .op(Op.i32_shl)
    .op(Op.i32_add)
    .mem(Op.i32_load, 0, 2)
    .set(base);
  f.get(slot)
    .i32(L.chunkRows - 1)
    .op(Op.i32_and)
    .set(row);
  f.get(base).get(row).i32(L.refineBytes).op(Op.i32_mul).op(Op.i32_add).i32(L.offRefine).op(Op.i32_add).set(rp);
  f.get(out);
  dot4(f, L, rp, q16, nib);
  f.op(Op.f32_convert_i32_s).get(invScale).op(Op.f32_mul).get(offset).op(Op.f32_sub);
  f.get(base).get(row).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.f32_load, L.offScale, 2).op(Op.f32_mul);
  f.mem(Op.f32_store, 0, 2);
  f.get(slots).i32(4).op(Op.i32_add).set(slots);
  f.get(out).i32(4).op(Op.i32_add).set(out);
  f.get(n).i32(1).op(Op.i32_sub).set(n);
  f.br(0).end().end();
  return f;
}

/**
 * refine (refineBits 2), same call as the 4-bit one: out[i] = scale · (Σ_j q8_j·u_j · invScale −
 * offset) for slot slots[i], u_j = 2·sign_j + extra_j (sign bits from the scan block through
 * codeTable, extra bits from the side block; offset = 1.5·Σq) and q8 the rotated query quantised
 * to i8 in qvecOrder2 order. Per 16 code bytes and bit k, one AND + compare turns the bytes into
 * 0 / −1 lanes for 16 dims, which select those dims' q8 (AND); selections are summed pairwise into
 * i16 lanes (≤ 254 per add, 8·padDim/128 adds per lane: fits for padDim ≤ 2048), sign and extra
 * planes apart, and combined as 2·Σsign + Σextra at the end.
 */
export function refine2(L: Layout): Fn {
  const f = new Fn("refine", ["i32", "i32", "i32", "i32", "i32", "f32", "f32", "i32"], []);
  const [slots, n, codeTable, sideTable, q8, invScale, offset, out] = [0, 1, 2, 3, 4, 5, 6, 7];
  const slot = f.local("i32"),
    base = f.local("i32"),
    sp = f.local("i32"),
    ep = f.local("i32"),
    row = f.local("i32");
  const accS = f.local("v128"),
    accE = f.local("v128"),
    vs = f.local("v128"),
    ve = f.local("v128"),
    qk = f.local("v128");
  const bit = Array.from({ length: 8 }, () => f.local("v128"));
  for (let k = 0; k < 8; k++)
    f.i32(1 << k)
      .simd(Simd.i8x16_splat)
      .set(bit[k]);
  const W = L.codeBytes / 16;
  const hsum = (acc: number) => {
    f.get(acc).simd(Simd.i32x4_extadd_pairwise_i16x8_s).set(acc);
    f.get(acc).lane(Simd.i32x4_extract_lane, 0).get(acc).lane(Simd.i32x4_extract_lane, 1).op(Op.i32_add);
    f.get(acc).lane(Simd.i32x4_extract_lane, 2).get(acc).lane(Simd.i32x4_extract_lane, 3).op(Op.i32_add).op(Op.i32_add);
  };
  f.block().loop();
  f.get(n).op(Op.i32_eqz).brIf(1);
  f.get(slots).mem(Op.i32_load, 0, 2).set(slot);
  f.get(slot)
    .i32(L.chunkRows - 1)
    .op(Op.i32_and)
    .set(row);
  f.get(codeTable)
    .get(slot)
    .i32(L.chunkShift)
    .op(Op.i32_shr_u)
    .i32(2)
    .op(Op.i32_shl)
    .op(Op.i32_add)
    .mem(Op.i32_load, 0, 2);
  f.get(row).i32(L.codeBytes).op(Op.i32_mul).op(Op.i32_add).i32(L.offCodes).op(Op.i32_add).set(sp);
  f.get(sideTable)
    .get(slot)
    .i32(L.chunkShift)
    .op(Op.i32_shr_u)
    .i32(2)
    .op(Op.i32_shl)
    .op(Op.i32_add)
    .mem(Op.i32_load, 0, 2)
    .set(base);
  f.get(base).get(row).i32(L.refineBytes).op(Op.i32_mul).op(Op.i32_add).i32(L.offRefine).op(Op.i32_add).set(ep);
  f.i32(0).simd(Simd.i32x4_splat).tee(accS).set(accE);
  for (let w = 0; w < W; w++) {
    f.get(sp)
      .vmem(Simd.v128_load, 16 * w)
      .set(vs);
    f.get(ep)
      .vmem(Simd.v128_load, 16 * w)
      .set(ve);
    for (let k = 0; k < 8; k++) {
      f.get(q8)
        .vmem(Simd.v128_load, (w * 8 + k) * 16)
        .set(qk);
      for (const [v, acc] of [
        [vs, accS],
        [ve, accE],
      ]) {
        f.get(acc);
        f.get(v).get(bit[k]).simd(Simd.v128_and).get(bit[k]).simd(Simd.i8x16_eq).get(qk).simd(Simd.v128_and);
        f.simd(Simd.i16x8_extadd_pairwise_i8x16_s).simd(Simd.i16x8_add).set(acc);
      }
    }
  }
  f.get(out);
  hsum(accS);
  f.i32(1).op(Op.i32_shl);
  hsum(accE);
  f.op(Op.i32_add);
  f.op(Op.f32_convert_i32_s).get(invScale).op(Op.f32_mul).get(offset).op(Op.f32_sub);
  f.get(base).get(row).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.f32_load, L.offScale, 2).op(Op.f32_mul);
  f.mem(Op.f32_store, 0, 2);
  f.get(slots).i32(4).op(Op.i32_add).set(slots);
  f.get(out).i32(4).op(Op.i32_add).set(out);
  f.get(n).i32(1).op(Op.i32_sub).set(n);
  f.br(0).end().end();
  return f;
}

/**
 * dots4(rp, cents, C, out): out[c] = Σ_j u_j · cents[c][j] (i32) for c < C — one row's 4-bit codes
 * (at rp, the side block's nibble layout, u_j = 0..15) against C i16 vectors of padDim (list
 * centroids). Assigns a row to its inverted list; the caller turns the sums into scores.
 * Same inner loop as refine, with the centroids in the outer loop.
 */
export function dots4(L: Layout): Fn {
  const f = new Fn("dots4", ["i32", "i32", "i32", "i32"], []);
  const [rp, cents, C, out] = [0, 1, 2, 3];
  const nib = f.local("v128");
  f.i32(0x0f).simd(Simd.i8x16_splat).set(nib);
  f.block().loop();
  f.get(C).op(Op.i32_eqz).brIf(1);
  f.get(out);
  dot4(f, L, rp, cents, nib);
  f.mem(Op.i32_store, 0, 2);
  f.get(cents)
    .i32(L.padDim * 2)
    .op(Op.i32_add)
    .set(cents);
  f.get(out).i32(4).op(Op.i32_add).set(out);
  f.get(C).i32(1).op(Op.i32_sub).set(C);
  f.br(0).end().end();
  return f;
}
