/**
 * The scan kernels, written with the assembler in ./asm.ts and specialised for one chunk layout
 * (code sizes and column offsets are baked in as constants, loops over the code words are
 * unrolled). All pointers are byte offsets into the one imported memory.
 *
 * Chunk tables are i32 arrays of block offsets indexed by chunk number; a row's slot is
 * chunk * CHUNK_ROWS + row. Per-query arrays (mask, dist) are indexed by slot.
 */
import { CHUNK_ROWS, CHUNK_SHIFT, type Layout } from "../layout.ts";
import { assemble, Fn, Op, Simd } from "./asm.ts";

/**
 * scan(codeTable, first, nChunks, qcode, planes, sumAbs, twoStep, mask, dist, T, outSlots, outEst, cap)
 *   → count.
 * Walks chunks first … first+nChunks−1. For every row: dist = popcount(code ^ qcode) OR-ed with
 * mask[slot] (0 or 0xFFFF; mask and dist are slot-indexed u16 arrays). (A histogram here cost
 * ~25 % of the scan; the threshold comes from a sample instead, see `histogram`.)
 * When T ≥ 0, every row with dist ≤ T is a candidate and gets, while its code is in
 * cache, W = Σ_k 2^k · popcount((code ^ qcode) & planes[k]): the query's |coordinates| quantised
 * to 4 bits (bit-planes k = 0..3) summed over the bits where row and query disagree, and its
 * 1-bit estimate of q·(x − c): factor · (sumAbs − twoStep · W) (factor: the row's u16 after the
 * codes). (slot, estimate) pairs are appended to outSlots/outEst; at most `cap` written, all
 * counted.
 * Four rows per step: per-row byte counts are widened and the four sums transposed into one
 * vector, so there is one narrow, one compare and one 64-bit store per four rows.
 */
function scan(L: Layout): Fn {
  const f = new Fn("scan", ["i32", "i32", "i32", "i32", "i32", "f32", "f32", "i32", "i32", "i32", "i32", "i32", "i32"], ["i32"]);
  const [codeTable, first, nChunks, qcode, planes, sumAbs, twoStep, mask, dist, T, outSlots, outEst, cap] =
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
  const W = L.codeBytes / 16;
  const qw = Array.from({ length: W }, () => f.local("v128"));
  const acc = [0, 1, 2, 3].map(() => f.local("v128"));
  const mm = Array.from({ length: W }, () => f.local("v128"));
  const s01 = f.local("v128"), s23 = f.local("v128"), dv = f.local("v128"), tv = f.local("v128");
  const c = f.local("i32"), base = f.local("i32"), codes = f.local("i32"), mp = f.local("i32"), dp = f.local("i32");
  const row = f.local("i32"), tmp = f.local("i32"), bits = f.local("i32"), rc = f.local("i32"), count = f.local("i32");
  for (let w = 0; w < W; w++) f.get(qcode).vmem(Simd.v128_load, 16 * w).set(qw[w]);
  f.get(T).simd(Simd.i16x8_splat).set(tv);
  f.get(first).set(c);

  f.block().loop();
  f.get(nChunks).op(Op.i32_eqz).brIf(1);
  f.get(codeTable).get(c).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load, 0, 2).tee(base).i32(L.offCodes).op(Op.i32_add).set(codes);
  f.get(mask).get(c).i32(CHUNK_SHIFT + 1).op(Op.i32_shl).op(Op.i32_add).set(mp);
  f.get(dist).get(c).i32(CHUNK_SHIFT + 1).op(Op.i32_shl).op(Op.i32_add).set(dp);
  f.i32(0).set(row);

  f.block().loop();
  f.get(row).i32(CHUNK_ROWS).op(Op.i32_ge_u).brIf(1);
  for (let r = 0; r < 4; r++) {
    for (let w = 0; w < W; w++) {
      f.get(codes).vmem(Simd.v128_load, r * L.codeBytes + 16 * w).get(qw[w]).simd(Simd.v128_xor).simd(Simd.i8x16_popcnt);
      if (w > 0) f.simd(Simd.i8x16_add);
    }
    f.simd(Simd.i16x8_extadd_pairwise_i8x16_u).simd(Simd.i32x4_extadd_pairwise_i16x8_u).set(acc[r]);
  }
  // [a0 a1 a2 a3], each four partial sums → one vector of the four row totals.
  f.get(acc[0]).get(acc[1]).shuffle32(0, 4, 2, 6).get(acc[0]).get(acc[1]).shuffle32(1, 5, 3, 7).simd(Simd.i32x4_add).set(s01);
  f.get(acc[2]).get(acc[3]).shuffle32(0, 4, 2, 6).get(acc[2]).get(acc[3]).shuffle32(1, 5, 3, 7).simd(Simd.i32x4_add).set(s23);
  f.get(s01).get(s23).shuffle32(0, 1, 4, 5).get(s01).get(s23).shuffle32(2, 3, 6, 7).simd(Simd.i32x4_add).tee(dv);
  // Lanes 0–3 of dv = u16 distances | mask (lanes 4–7 are don't-care).
  f.get(dv).simd(Simd.i16x8_narrow_i32x4_u).get(mp).vmem(Simd.v128_load64_zero, 0, 1).simd(Simd.v128_or).set(dv);
  f.get(dp).get(dv).vmemLane(Simd.v128_store64_lane, 0, 0, 1);
  // Candidates among the four rows.
  f.get(T).i32(0).op(Op.i32_ge_s).if();
  f.get(dv).get(tv).simd(Simd.i16x8_le_u).simd(Simd.i16x8_bitmask).i32(15).op(Op.i32_and).set(bits);
  f.block().loop();
  f.get(bits).op(Op.i32_eqz).brIf(1);
  f.get(bits).op(Op.i32_ctz).tee(rc).i32(L.codeBytes).op(Op.i32_mul).get(codes).op(Op.i32_add).set(tmp); // row's code
  for (let w = 0; w < W; w++) f.get(tmp).vmem(Simd.v128_load, 16 * w).get(qw[w]).simd(Simd.v128_xor).set(mm[w]);
  for (let k = 0; k < 4; k++) {
    for (let w = 0; w < W; w++) {
      f.get(mm[w]).get(planes).vmem(Simd.v128_load, k * L.codeBytes + 16 * w).simd(Simd.v128_and).simd(Simd.i8x16_popcnt);
      if (w > 0) f.simd(Simd.i8x16_add);
    }
    // ≤ 8·W per byte lane; widen before weighting so 2048-dim codes cannot overflow.
    f.simd(Simd.i16x8_extadd_pairwise_i8x16_u);
    if (k > 0) f.i32(k).simd(Simd.i16x8_shl).simd(Simd.i16x8_add);
  }
  f.simd(Simd.i32x4_extadd_pairwise_i16x8_u).set(s01);
  f.get(count).get(cap).op(Op.i32_lt_u).if();
  // outSlots[count] = c * ROWS + row + rc
  f.get(outSlots).get(count).i32(2).op(Op.i32_shl).op(Op.i32_add);
  f.get(c).i32(CHUNK_SHIFT).op(Op.i32_shl).get(row).op(Op.i32_add).get(rc).op(Op.i32_add).mem(Op.i32_store, 0, 2);
  // outEst[count] = factor · (sumAbs − twoStep · W), W = Σ lanes
  f.get(outEst).get(count).i32(2).op(Op.i32_shl).op(Op.i32_add);
  f.get(base).get(row).get(rc).op(Op.i32_add).i32(1).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load16_u, L.offFactor, 1);
  f.op(Op.f32_convert_i32_s);
  f.get(sumAbs).get(twoStep);
  f.get(s01).lane(Simd.i32x4_extract_lane, 0).get(s01).lane(Simd.i32x4_extract_lane, 1).op(Op.i32_add);
  f.get(s01).lane(Simd.i32x4_extract_lane, 2).get(s01).lane(Simd.i32x4_extract_lane, 3).op(Op.i32_add).op(Op.i32_add);
  f.op(Op.f32_convert_i32_s).op(Op.f32_mul).op(Op.f32_sub).op(Op.f32_mul);
  f.mem(Op.f32_store, 0, 2);
  f.end();
  f.get(count).i32(1).op(Op.i32_add).set(count);
  f.get(bits).get(bits).i32(1).op(Op.i32_sub).op(Op.i32_and).set(bits);
  f.br(0).end().end();
  f.end();

  f.get(codes).i32(4 * L.codeBytes).op(Op.i32_add).set(codes);
  f.get(mp).i32(8).op(Op.i32_add).set(mp);
  f.get(dp).i32(8).op(Op.i32_add).set(dp);
  f.get(row).i32(4).op(Op.i32_add).set(row);
  f.br(0).end().end();

  f.get(c).i32(1).op(Op.i32_add).set(c);
  f.get(nChunks).i32(1).op(Op.i32_sub).set(nChunks);
  f.br(0).end().end();
  f.get(count);
  return f;
}

/** histogram(arr, nRows, hist): hist[arr[i]] += 1 for i < nRows (u16 values, u32 bins). */
function histogram(): Fn {
  const f = new Fn("histogram", ["i32", "i32", "i32"], []);
  const [arr, nRows, hist] = [0, 1, 2];
  const bin = f.local("i32");
  f.block().loop();
  f.get(nRows).op(Op.i32_eqz).brIf(1);
  f.get(hist).get(arr).mem(Op.i32_load16_u, 0, 1).i32(2).op(Op.i32_shl).op(Op.i32_add).tee(bin);
  f.get(bin).mem(Op.i32_load, 0, 2).i32(1).op(Op.i32_add).mem(Op.i32_store, 0, 2);
  f.get(arr).i32(2).op(Op.i32_add).set(arr);
  f.get(nRows).i32(1).op(Op.i32_sub).set(nRows);
  f.br(0).end().end();
  return f;
}

/**
 * collect(arr, nRows, lo, span, out, cap) → count: indices i < nRows (a multiple of 8) of the
 * u16 array `arr` with lo ≤ arr[i] ≤ lo + span, ascending. Writes at most `cap`, counts all.
 */
function collect(): Fn {
  const f = new Fn("collect", ["i32", "i32", "i32", "i32", "i32", "i32"], ["i32"]);
  const [arr, nRows, lo, span, out, cap] = [0, 1, 2, 3, 4, 5];
  const lov = f.local("v128"), spv = f.local("v128");
  const i = f.local("i32"), m = f.local("i32"), count = f.local("i32");
  f.get(lo).simd(Simd.i16x8_splat).set(lov);
  f.get(span).simd(Simd.i16x8_splat).set(spv);
  f.block().loop();
  f.get(i).get(nRows).op(Op.i32_ge_u).brIf(1);
  f.get(arr).get(i).i32(1).op(Op.i32_shl).op(Op.i32_add).vmem(Simd.v128_load, 0, 1);
  f.get(lov).simd(Simd.i16x8_sub).get(spv).simd(Simd.i16x8_le_u).simd(Simd.i16x8_bitmask).set(m);
  f.block().loop();
  f.get(m).op(Op.i32_eqz).brIf(1);
  f.get(count).get(cap).op(Op.i32_lt_u).if();
  f.get(out).get(count).i32(2).op(Op.i32_shl).op(Op.i32_add);
  f.get(i).get(m).op(Op.i32_ctz).op(Op.i32_add).mem(Op.i32_store, 0, 2);
  f.end();
  f.get(count).i32(1).op(Op.i32_add).set(count);
  f.get(m).get(m).i32(1).op(Op.i32_sub).op(Op.i32_and).set(m);
  f.br(0).end().end();
  f.get(i).i32(8).op(Op.i32_add).set(i);
  f.br(0).end().end();
  f.get(count);
  return f;
}

/**
 * refine(slots, n, sideTable, q16, invScale, offset, out): out[i] = scale · (Σ_j q16_j·u_j ·
 * invScale − offset) for slot slots[i], u_j its 4-bit code of dim j (0..15, level (u − 7.5)·scale)
 * and q16 the rotated query quantised to i16 (offset = 7.5·Σq). Nibbles are widened to i16 and
 * multiplied with i32x4.dot_i16x8_s; the sum fits i32 for padDim ≤ 2048.
 */
function refine(L: Layout): Fn {
  const f = new Fn("refine", ["i32", "i32", "i32", "i32", "f32", "f32", "i32"], []);
  const [slots, n, sideTable, q16, invScale, offset, out] = [0, 1, 2, 3, 4, 5, 6];
  const slot = f.local("i32"), base = f.local("i32"), rp = f.local("i32"), row = f.local("i32");
  const acc = f.local("v128"), v = f.local("v128"), lo = f.local("v128"), hi = f.local("v128"), nib = f.local("v128");
  f.i32(0x0f).simd(Simd.i8x16_splat).set(nib);
  f.block().loop();
  f.get(n).op(Op.i32_eqz).brIf(1);
  f.get(slots).mem(Op.i32_load, 0, 2).set(slot);
  f.get(sideTable).get(slot).i32(CHUNK_SHIFT).op(Op.i32_shr_u).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load, 0, 2).set(base);
  f.get(slot).i32(CHUNK_ROWS - 1).op(Op.i32_and).set(row);
  f.get(base).get(row).i32(L.refineBytes).op(Op.i32_mul).op(Op.i32_add).i32(L.offRefine).op(Op.i32_add).set(rp);
  f.i32(0).simd(Simd.i32x4_splat).set(acc);
  for (let g = 0; g < L.padDim / 32; g++) {
    f.get(rp).vmem(Simd.v128_load, 16 * g).tee(v).get(nib).simd(Simd.v128_and).set(lo);
    f.get(v).i32(4).simd(Simd.i8x16_shr_u).set(hi);
    const parts: [number, number, number][] = [
      [lo, Simd.i16x8_extend_low_i8x16_u, 0],
      [lo, Simd.i16x8_extend_high_i8x16_u, 8],
      [hi, Simd.i16x8_extend_low_i8x16_u, 16],
      [hi, Simd.i16x8_extend_high_i8x16_u, 24],
    ];
    for (const [src, ext, dimOff] of parts) {
      f.get(src).simd(ext).get(q16).vmem(Simd.v128_load, (32 * g + dimOff) * 2).simd(Simd.i32x4_dot_i16x8_s);
      f.get(acc).simd(Simd.i32x4_add).set(acc);
    }
  }
  f.get(out);
  f.get(acc).lane(Simd.i32x4_extract_lane, 0).get(acc).lane(Simd.i32x4_extract_lane, 1).op(Op.i32_add);
  f.get(acc).lane(Simd.i32x4_extract_lane, 2).get(acc).lane(Simd.i32x4_extract_lane, 3).op(Op.i32_add).op(Op.i32_add);
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
 * buildMask(sideTable, nChunks, tableA, tableB, flags, mask): for every slot of the nChunks
 * chunks, mask[slot] = (flags&1 ? tableA[groupA] : 0) | (flags&2 ? tableB[groupB] : 0), the
 * tables being u16 (0 allowed, 0xFFFF not) indexed by dense group id.
 */
function buildMask(L: Layout): Fn {
  const f = new Fn("buildMask", ["i32", "i32", "i32", "i32", "i32", "i32"], []);
  const [sideTable, nChunks, tA, tB, flags, mask] = [0, 1, 2, 3, 4, 5];
  const base = f.local("i32"), r = f.local("i32"), m = f.local("i32");
  f.block().loop();
  f.get(nChunks).op(Op.i32_eqz).brIf(1);
  f.get(sideTable).mem(Op.i32_load, 0, 2).set(base);
  f.i32(0).set(r);
  f.block().loop();
  f.get(r).i32(CHUNK_ROWS).op(Op.i32_ge_u).brIf(1);
  f.i32(0).set(m);
  f.get(flags).i32(1).op(Op.i32_and).if();
  f.get(tA).get(base).get(r).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load, L.offGroupA, 2);
  f.i32(1).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load16_u, 0, 1).set(m);
  f.end();
  f.get(flags).i32(2).op(Op.i32_and).if();
  f.get(m).get(tB).get(base).get(r).i32(2).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load, L.offGroupB, 2);
  f.i32(1).op(Op.i32_shl).op(Op.i32_add).mem(Op.i32_load16_u, 0, 1).op(Op.i32_or).set(m);
  f.end();
  f.get(mask).get(m).mem(Op.i32_store16, 0, 1);
  f.get(mask).i32(2).op(Op.i32_add).set(mask);
  f.get(r).i32(1).op(Op.i32_add).set(r);
  f.br(0).end().end();
  f.get(sideTable).i32(4).op(Op.i32_add).set(sideTable);
  f.get(nChunks).i32(1).op(Op.i32_sub).set(nChunks);
  f.br(0).end().end();
  return f;
}

export interface Kernels {
  scan(
    codeTable: number, first: number, nChunks: number, qcode: number, planes: number, sumAbs: number, twoStep: number,
    mask: number, dist: number, T: number, outSlots: number, outEst: number, cap: number,
  ): number;
  histogram(arr: number, nRows: number, hist: number): void;
  collect(arr: number, nRows: number, lo: number, span: number, out: number, cap: number): number;
  refine(slots: number, n: number, sideTable: number, q16: number, invScale: number, offset: number, out: number): void;
  buildMask(sideTable: number, nChunks: number, tableA: number, tableB: number, flags: number, mask: number): void;
}

/** The module bytes for a layout (exported for tests that inspect/validate them). */
export function kernelModuleBytes(L: Layout): Uint8Array<ArrayBuffer> {
  return assemble([scan(L), histogram(), collect(), refine(L), buildMask(L)]);
}

/** Compiles and instantiates the kernels against `memory`. Throws if the engine lacks SIMD. */
export function instantiateKernels(L: Layout, memory: WebAssembly.Memory): Kernels {
  const bytes = kernelModuleBytes(L);
  const mod = new WebAssembly.Module(bytes);
  const inst = new WebAssembly.Instance(mod, { env: { memory } });
  return inst.exports as unknown as Kernels;
}

