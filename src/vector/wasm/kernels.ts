/**
 * The scan kernels, written with the assembler in ./asm.ts and specialised for one chunk layout
 * (code sizes and column offsets are baked in as constants, loops over the code words are
 * unrolled). All pointers are byte offsets into the one imported memory.
 *
 * Chunk tables are i32 arrays of block offsets indexed by chunk number; a row's slot is
 * chunk * L.chunkRows + row (chunkRows 32, 64 or 128, a constant of the module). Per-query arrays (mask, dist) are indexed by slot.
 *
 * Over the ~450-line guide on purpose: the variants are one assembler program for one layout;
 * apart, they could drift from the constants they must share.
 */
import type { Layout } from "../layout.ts";
import { assemble, Fn, Op, Simd } from "./asm.ts";
import { dots4, refine, refine2 } from "./refine-kernels.ts";

interface ScanVariant {
  name: string;
  /** OR the per-slot mask into the distances (filtered queries; the sample and fallback). */
  masked: boolean;
  /** Store every distance to dist[slot] (for histograms). */
  writeDist: boolean;
  /** Collect rows with dist ≤ T and their 1-bit estimates. */
  candidates: boolean;
}

/** Byte shuffles for i8x16.swizzle that pack the i32 lanes whose bit is set in a 4-bit mask to the front. */
export function compactionTable(): Uint8Array {
  const t = new Uint8Array(16 * 16).fill(0x80);
  for (let bits = 0; bits < 16; bits++) {
    let o = 0;
    for (let lane = 0; lane < 4; lane++) {
      if (bits & (1 << lane)) for (let b = 0; b < 4; b++) t[bits * 16 + o * 4 + b] = lane * 4 + b;
      if (bits & (1 << lane)) o++;
    }
  }
  return t;
}

/**
 * The scan, in three variants:
 *   scanDist(codeTable, first, nChunks, qcode, mask, dist): dist[slot] = popcount(code ^ qcode)
 *     | mask[slot] for every row of chunks first … first+nChunks−1 (mask and dist are
 *     slot-indexed u16 arrays; a masked row reads 0xFFFF);
 *   scanMasked / scanAll(codeTable, first, nChunks, qcode, planes, sumAbs, twoStep, mask, T,
 *     compact, outSlots, outEst, cap) → count: every row with distance ≤ T (scanMasked: after the
 *     mask; scanAll ignores it, for unfiltered queries — the caller drops slots past the
 *     partition's end) is a candidate. Slots go to outSlots (room needed: every scanned row + 4),
 *     estimates to outEst for the first `cap` of them; all are counted.
 *
 * Candidates are appended without branches (a swizzle from the `compact` table packs the slots
 * of the passing rows of each group of four; the count advances by their popcount), and at the
 * end of each chunk — its codes still in cache — each candidate gets W = Σ_k 2^k ·
 * popcount((code ^ qcode) & planes[k]): the query's |coordinates| quantised to 4 bits
 * (bit-planes k = 0..3) summed over the bits where row and query disagree, and its 1-bit
 * estimate of q·(x − c): factor · (sumAbs − twoStep · W), factor being the row's u16 after the
 * codes. (Evaluating candidates inside the row loop cost ~38 ns each, mostly branch misses;
 * this way ~15.)
 * Four rows per step: per-row byte counts are widened and the four sums transposed into one
 * vector, so there is one narrow, one compare and one 64-bit store per four rows. (A histogram
 * inside the full scan cost ~25 % of it; the threshold comes from a sample instead.)
 */
function scan(L: Layout, v: ScanVariant): Fn {
  const params: ("i32" | "f32")[] = v.candidates
    ? ["i32", "i32", "i32", "i32", "i32", "f32", "f32", "i32", "i32", "i32", "i32", "i32", "i32"]
    : ["i32", "i32", "i32", "i32", "i32", "i32"];
  const f = new Fn(v.name, params, v.candidates ? ["i32"] : []);
  const [codeTable, first, nChunks, qcode] = [0, 1, 2, 3];
  const [planes, sumAbs, twoStep, mask, T, compact, outSlots, outEst, cap] = v.candidates
    ? [4, 5, 6, 7, 8, 9, 10, 11, 12]
    : [-1, -1, -1, 4, -1, -1, -1, -1, -1];
  const dist = v.candidates ? -1 : 5;
  const W = L.codeBytes / 16;
  const qw = Array.from({ length: W }, () => f.local("v128"));
  const acc = [0, 1, 2, 3].map(() => f.local("v128"));
  const s01 = f.local("v128"),
    s23 = f.local("v128"),
    dv = f.local("v128"),
    tv = f.local("v128");
  const slotv = f.local("v128"),
    four = f.local("v128");
  const c = f.local("i32"),
    base = f.local("i32"),
    codes = f.local("i32"),
    mp = f.local("i32"),
    dp = f.local("i32");
  const row = f.local("i32"),
    tmp = f.local("i32"),
    bits = f.local("i32"),
    count = f.local("i32");
  const i = f.local("i32"),
    end = f.local("i32"),
    slot = f.local("i32");
  for (let w = 0; w < W; w++)
    f.get(qcode)
      .vmem(Simd.v128_load, 16 * w)
      .set(qw[w]);
  if (v.candidates) {
    f.get(T).simd(Simd.i16x8_splat).set(tv);
    f.i32(4).simd(Simd.i32x4_splat).set(four);
  }
  f.get(first).set(c);

  f.block().loop();
  f.get(nChunks).op(Op.i32_eqz).brIf(1);
  f.get(codeTable)
    .get(c)
    .i32(2)
    .op(Op.i32_shl)
    .op(Op.i32_add)
    .mem(Op.i32_load, 0, 2)
    .tee(base)
    .i32(L.offCodes)
    .op(Op.i32_add)
    .set(codes);
  if (v.masked)
    f.get(mask)
      .get(c)
      .i32(L.chunkShift + 1)
      .op(Op.i32_shl)
      .op(Op.i32_add)
      .set(mp);
  if (v.writeDist)
    f.get(dist)
      .get(c)
      .i32(L.chunkShift + 1)
      .op(Op.i32_shl)
      .op(Op.i32_add)
      .set(dp);
  if (v.candidates) {
    // slots of the group's four rows, and where this chunk's candidates start
    f.get(c)
      .i32(L.chunkShift)
      .op(Op.i32_shl)
      .simd(Simd.i32x4_splat)
      .v128const([0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0])
      .simd(Simd.i32x4_add)
      .set(slotv);
    f.get(count).set(i);
  }
  f.i32(0).set(row);

  f.block().loop();
  f.get(row).i32(L.chunkRows).op(Op.i32_ge_u).brIf(1);
  for (let r = 0; r < 4; r++) {
    for (let w = 0; w < W; w++) {
      f.get(codes)
        .vmem(Simd.v128_load, r * L.codeBytes + 16 * w)
        .get(qw[w])
        .simd(Simd.v128_xor)
        .simd(Simd.i8x16_popcnt);
      if (w > 0) f.simd(Simd.i8x16_add);
    }
    f.simd(Simd.i16x8_extadd_pairwise_i8x16_u).simd(Simd.i32x4_extadd_pairwise_i16x8_u).set(acc[r]);
  }
  // [a0 a1 a2 a3], each four partial sums → one vector of the four row totals.
  f.get(acc[0])
    .get(acc[1])
    .shuffle32(0, 4, 2, 6)
    .get(acc[0])
    .get(acc[1])
    .shuffle32(1, 5, 3, 7)
    .simd(Simd.i32x4_add)
    .set(s01);
  f.get(acc[2])
    .get(acc[3])
    .shuffle32(0, 4, 2, 6)
    .get(acc[2])
    .get(acc[3])
    .shuffle32(1, 5, 3, 7)
    .simd(Simd.i32x4_add)
    .set(s23);
  f.get(s01).get(s23).shuffle32(0, 1, 4, 5).get(s01).get(s23).shuffle32(2, 3, 6, 7).simd(Simd.i32x4_add).tee(dv);
  // Lanes 0–3 of dv = u16 distances (| mask); lanes 4–7 are don't-care.
  f.get(dv).simd(Simd.i16x8_narrow_i32x4_u);
  if (v.masked) f.get(mp).vmem(Simd.v128_load64_zero, 0, 1).simd(Simd.v128_or);
  f.set(dv);
  if (v.writeDist) f.get(dp).get(dv).vmemLane(Simd.v128_store64_lane, 0, 0, 1);

  if (v.candidates) {
    f.get(dv).get(tv).simd(Simd.i16x8_le_u).simd(Simd.i16x8_bitmask).i32(15).op(Op.i32_and).set(bits);
    // outSlots[count …] = the passing slots, packed; count += how many. outSlots has room for
    // every scanned row + 4, so there is no clamp here (clamping to `cap` cost ~0.9 ms per 1 M
    // rows); `cap` bounds the estimates below.
    f.get(outSlots).get(count).i32(2).op(Op.i32_shl).op(Op.i32_add);
    f.get(slotv)
      .get(compact)
      .get(bits)
      .i32(4)
      .op(Op.i32_shl)
      .op(Op.i32_add)
      .vmem(Simd.v128_load, 0, 0)
      .simd(Simd.i8x16_swizzle);
    f.vmem(Simd.v128_store, 0, 2);
    f.get(count).get(bits).op(Op.i32_popcnt).op(Op.i32_add).set(count);
    f.get(slotv).get(four).simd(Simd.i32x4_add).set(slotv);
  }

  f.get(codes)
    .i32(4 * L.codeBytes)
    .op(Op.i32_add)
    .set(codes);
  if (v.masked) f.get(mp).i32(8).op(Op.i32_add).set(mp);
  if (v.writeDist) f.get(dp).i32(8).op(Op.i32_add).set(dp);
  f.get(row).i32(4).op(Op.i32_add).set(row);
  f.br(0).end().end();

  if (v.candidates) {
    // This chunk's candidates [i, min(count, cap)): their estimates, codes still in cache.
    f.get(count).get(cap).get(count).get(cap).op(Op.i32_lt_u).op(Op.select).set(end);
    f.block().loop();
    f.get(i).get(end).op(Op.i32_ge_u).brIf(1);
    f.get(outSlots)
      .get(i)
      .i32(2)
      .op(Op.i32_shl)
      .op(Op.i32_add)
      .mem(Op.i32_load, 0, 2)
      .i32(L.chunkRows - 1)
      .op(Op.i32_and)
      .set(slot);
    f.get(slot).i32(L.codeBytes).op(Op.i32_mul).get(base).op(Op.i32_add).i32(L.offCodes).op(Op.i32_add).set(tmp);
    for (let k = 0; k < 4; k++) {
      for (let w = 0; w < W; w++) {
        f.get(tmp)
          .vmem(Simd.v128_load, 16 * w)
          .get(qw[w])
          .simd(Simd.v128_xor);
        f.get(planes)
          .vmem(Simd.v128_load, k * L.codeBytes + 16 * w)
          .simd(Simd.v128_and)
          .simd(Simd.i8x16_popcnt);
        if (w > 0) f.simd(Simd.i8x16_add);
      }
      // ≤ 8·W per byte lane; widen before weighting so 2048-dim codes cannot overflow.
      f.simd(Simd.i16x8_extadd_pairwise_i8x16_u);
      if (k > 0) f.i32(k).simd(Simd.i16x8_shl).simd(Simd.i16x8_add);
    }
    f.simd(Simd.i32x4_extadd_pairwise_i16x8_u).set(s01);
    // outEst[i] = factor · (sumAbs − twoStep · W), W = Σ lanes
    f.get(outEst).get(i).i32(2).op(Op.i32_shl).op(Op.i32_add);
    f.get(base)
      .get(slot)
      .i32(1)
      .op(Op.i32_shl)
      .op(Op.i32_add)
      .mem(Op.i32_load16_u, L.offFactor, 1)
      .op(Op.f32_convert_i32_s);
    f.get(sumAbs).get(twoStep);
    f.get(s01).lane(Simd.i32x4_extract_lane, 0).get(s01).lane(Simd.i32x4_extract_lane, 1).op(Op.i32_add);
    f.get(s01).lane(Simd.i32x4_extract_lane, 2).get(s01).lane(Simd.i32x4_extract_lane, 3).op(Op.i32_add).op(Op.i32_add);
    f.op(Op.f32_convert_i32_s).op(Op.f32_mul).op(Op.f32_sub).op(Op.f32_mul);
    f.mem(Op.f32_store, 0, 2);
    f.get(i).i32(1).op(Op.i32_add).set(i);
    f.br(0).end().end();
  }

  f.get(c).i32(1).op(Op.i32_add).set(c);
  f.get(nChunks).i32(1).op(Op.i32_sub).set(nChunks);
  f.br(0).end().end();
  if (v.candidates) f.get(count);
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
  const lov = f.local("v128"),
    spv = f.local("v128");
  const i = f.local("i32"),
    m = f.local("i32"),
    count = f.local("i32");
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
 * The walk both mask builders make: for each of nChunks chunks (sideTable gives the chunk's block
 * `base`), r = 0, step, 2·step … below L.chunkRows, `body` writes the u16 mask of rows r … r+step−1
 * at `mask`, which then moves on by step entries. Emits the same instructions wherever it is used.
 */
function eachChunkRows(
  f: Fn,
  L: Layout,
  locals: { sideTable: number; nChunks: number; mask: number; base: number; r: number },
  step: number,
  body: () => void,
): void {
  const { sideTable, nChunks, mask, base, r } = locals;
  f.block().loop();
  f.get(nChunks).op(Op.i32_eqz).brIf(1);
  f.get(sideTable).mem(Op.i32_load, 0, 2).set(base);
  f.i32(0).set(r);
  f.block().loop();
  f.get(r).i32(L.chunkRows).op(Op.i32_ge_u).brIf(1);
  body();
  f.get(mask)
    .i32(2 * step)
    .op(Op.i32_add)
    .set(mask);
  f.get(r).i32(step).op(Op.i32_add).set(r);
  f.br(0).end().end();
  f.get(sideTable).i32(4).op(Op.i32_add).set(sideTable);
  f.get(nChunks).i32(1).op(Op.i32_sub).set(nChunks);
  f.br(0).end().end();
}

/**
 * buildMask(sideTable, nChunks, tableA, tableB, flags, mask): for every slot of the nChunks
 * chunks, mask[slot] = (flags&1 ? tableA[groupA] : 0) | (flags&2 ? tableB[groupB] : 0), the
 * tables being u16 (0 allowed, 0xFFFF not) indexed by dense group id.
 */
function buildMask(L: Layout): Fn {
  const f = new Fn("buildMask", ["i32", "i32", "i32", "i32", "i32", "i32"], []);
  const [sideTable, nChunks, tA, tB, flags, mask] = [0, 1, 2, 3, 4, 5];
  const base = f.local("i32"),
    r = f.local("i32"),
    m = f.local("i32");
  eachChunkRows(f, L, { sideTable, nChunks, mask, base, r }, 1, () => {
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
  });
  return f;
}

/**
 * buildMaskIds(sideTable, nChunks, idsA, nA, idsB, nB, mask): the same mask as buildMask for
 * short id lists (i32 dense ids; n = 0 means "no filter on that group"): four rows at a time,
 * groupA/groupB compared with each listed id (i32x4.eq), so a one-collection filter over 1 M
 * rows costs a few hundred microseconds instead of ~1.5 ms for the per-row table lookups.
 */
function buildMaskIds(L: Layout): Fn {
  const f = new Fn("buildMaskIds", ["i32", "i32", "i32", "i32", "i32", "i32", "i32"], []);
  const [sideTable, nChunks, idsA, nA, idsB, nB, mask] = [0, 1, 2, 3, 4, 5, 6];
  const base = f.local("i32"),
    r = f.local("i32"),
    j = f.local("i32");
  const ok = f.local("v128"),
    okB = f.local("v128"),
    g = f.local("v128");
  const matchAny = (col: number, ids: number, n: number, out: number) => {
    // out = n == 0 ? all ones : OR_j (group == ids[j])
    f.get(n).op(Op.i32_eqz).if();
    f.v128const(new Array(16).fill(0xff)).set(out);
    f.else();
    f.get(base).get(r).i32(2).op(Op.i32_shl).op(Op.i32_add).vmem(Simd.v128_load, col, 2).set(g);
    f.i32(0).simd(Simd.i32x4_splat).set(out);
    f.i32(0).set(j);
    f.block().loop();
    f.get(j).get(n).op(Op.i32_ge_u).brIf(1);
    f.get(out).get(g).get(ids).get(j).i32(2).op(Op.i32_shl).op(Op.i32_add).vmem(Simd.v128_load32_splat, 0, 2);
    f.simd(Simd.i32x4_eq).simd(Simd.v128_or).set(out);
    f.get(j).i32(1).op(Op.i32_add).set(j);
    f.br(0).end().end();
    f.end();
  };
  eachChunkRows(f, L, { sideTable, nChunks, mask, base, r }, 4, () => {
    matchAny(L.offGroupA, idsA, nA, ok);
    matchAny(L.offGroupB, idsB, nB, okB);
    // mask[4 rows] = ~(okA & okB) narrowed to u16 (−1 → 0xFFFF)
    f.get(mask).get(ok).get(okB).simd(Simd.v128_and).simd(Simd.v128_not).tee(g).get(g).simd(Simd.i16x8_narrow_i32x4_s);
    f.vmemLane(Simd.v128_store64_lane, 0, 0, 1);
  });
  return f;
}

type ScanCandidates = (
  codeTable: number,
  first: number,
  nChunks: number,
  qcode: number,
  planes: number,
  sumAbs: number,
  twoStep: number,
  mask: number,
  T: number,
  compact: number,
  outSlots: number,
  outEst: number,
  cap: number,
) => number;

export interface Kernels {
  scanDist(codeTable: number, first: number, nChunks: number, qcode: number, mask: number, dist: number): void;
  scanMasked: ScanCandidates;
  scanAll: ScanCandidates;
  histogram(arr: number, nRows: number, hist: number): void;
  collect(arr: number, nRows: number, lo: number, span: number, out: number, cap: number): number;
  /** The middle pass for the layout's refineBits (qvec: the query's q16, or q8 for 2 bits). */
  refine(
    slots: number,
    n: number,
    codeTable: number,
    sideTable: number,
    qvec: number,
    invScale: number,
    offset: number,
    out: number,
  ): void;
  buildMask(sideTable: number, nChunks: number, tableA: number, tableB: number, flags: number, mask: number): void;
  buildMaskIds(
    sideTable: number,
    nChunks: number,
    idsA: number,
    nA: number,
    idsB: number,
    nB: number,
    mask: number,
  ): void;
  dots4(rp: number, cents: number, C: number, out: number): void;
}

/** The module bytes for a layout (exported for tests that inspect/validate them). */
export function kernelModuleBytes(L: Layout): Uint8Array<ArrayBuffer> {
  return assemble([
    scan(L, { name: "scanDist", masked: true, writeDist: true, candidates: false }),
    scan(L, { name: "scanMasked", masked: true, writeDist: false, candidates: true }),
    scan(L, { name: "scanAll", masked: false, writeDist: false, candidates: true }),
    histogram(),
    collect(),
    L.refineBits === 4 ? refine(L) : refine2(L),
    buildMask(L),
    buildMaskIds(L),
    dots4(L),
  ]);
}

/** Compiles the kernels for a layout. Throws if the engine lacks SIMD. */
export function compileKernels(L: Layout): WebAssembly.Module {
  return new WebAssembly.Module(kernelModuleBytes(L));
}

/** Instantiates the kernels against `memory` (compiling them unless `mod` is given). */
export function instantiateKernels(
  L: Layout,
  memory: WebAssembly.Memory,
  mod: WebAssembly.Module = compileKernels(L),
): Kernels {
  const inst = new WebAssembly.Instance(mod, { env: { memory } });
  return inst.exports as unknown as Kernels;
}
