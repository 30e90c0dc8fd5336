/**
 * The hand-assembled WebAssembly kernels against plain-JS references on random inputs: if an
 * opcode number, lane order or memory offset were wrong, these disagree.
 */
import { describe, expect, it } from "vitest";
import { prng } from "../../bench/lib/synthetic.ts";
import { Arena } from "../../src/vector/arena.ts";
import { qvecOrder2 } from "../../src/vector/encode.ts";
import { makeLayout, MASKED, type Layout } from "../../src/vector/layout.ts";
import { sleb, uleb } from "../../src/vector/wasm/asm.ts";
import { compactionTable, instantiateKernels, kernelModuleBytes, type Kernels } from "../../src/vector/wasm/kernels.ts";

const popcount8 = (x: number) => {
  let c = 0;
  for (; x; x &= x - 1) c++;
  return c;
};

interface Rig {
  L: Layout;
  a: Arena;
  K: Kernels;
  rand: () => number;
  /** Scan blocks in shuffled address order, so the chunk table indirection is exercised. */
  scanBlocks: number[];
  sideBlocks: number[];
  scratch: number;
}

/** Every kernel is specialised for the layout's rows per chunk; each is checked at all three. */
const CHUNK_SIZES = [128, 64, 32] as const;

function rig(dim: number, nChunks: number, seed: number, refineBits: 2 | 4 = 2, chunkRows = 128): Rig {
  const L = makeLayout(dim, refineBits, chunkRows);
  const a = new Arena([L.sideBlockBytes, L.scanBlockBytes]);
  const K = instantiateKernels(L, a.memory);
  const r = prng(seed);
  const scanBlocks = Array.from({ length: nChunks }, () => a.allocBlock(L.scanBlockBytes));
  const sideBlocks = Array.from({ length: nChunks }, () => a.allocBlock(L.sideBlockBytes));
  for (let i = nChunks - 1; i > 0; i--) {
    const j = r() % (i + 1);
    [scanBlocks[i], scanBlocks[j]] = [scanBlocks[j], scanBlocks[i]];
  }
  const scratch = a.allocRun(4 << 20).off;
  a.views();
  for (const b of scanBlocks) for (let i = 0; i < L.scanBlockBytes; i++) a.u8[b + i] = r() & 0xff;
  return { L, a, K, rand: () => r() / 4294967296, scanBlocks, sideBlocks, scratch };
}

describe("assembler encodings", () => {
  it("writes LEB128 like the spec examples", () => {
    const u: number[] = [];
    uleb(u, 624485);
    expect(u).toEqual([0xe5, 0x8e, 0x26]);
    const s: number[] = [];
    sleb(s, -123456);
    expect(s).toEqual([0xc0, 0xbb, 0x78]);
    const z: number[] = [];
    sleb(z, 64);
    expect(z).toEqual([0xc0, 0x00]);
  });

  it.each([128, 200, 512, 768, 2048])("produces a module the engine validates (dim %i)", (dim) => {
    for (const rows of CHUNK_SIZES) {
      expect(WebAssembly.validate(kernelModuleBytes(makeLayout(dim, 2, rows)))).toBe(true);
      expect(WebAssembly.validate(kernelModuleBytes(makeLayout(dim, 4, rows)))).toBe(true);
    }
  });
});

describe.each(
  CHUNK_SIZES.flatMap((c) => [
    [512, c],
    [200, c],
  ]),
)("scan kernel, dim %i, %i rows a chunk", (dim, chunkRows) => {
  const nChunks = 5;
  const { L, a, K, rand, scanBlocks, scratch } = rig(dim, nChunks, dim, 2, chunkRows);
  const rows = nChunks * L.chunkRows,
    sh = L.chunkShift,
    rm = L.chunkRows - 1;
  const codeTable = scratch,
    qcode = codeTable + 64,
    planes = qcode + 256,
    compact = planes + 1024,
    mask = compact + 256;
  const dist = mask + rows * 2,
    outSlots = dist + rows * 2,
    outEst = outSlots + (rows + 4) * 4;
  const sumAbs = 3.25,
    twoStep = 0.0075;
  a.i32.set(scanBlocks, codeTable / 4);
  a.u8.set(compactionTable(), compact);
  for (let i = 0; i < L.codeBytes; i++) a.u8[qcode + i] = (rand() * 256) | 0;
  for (let i = 0; i < 4 * L.codeBytes; i++) a.u8[planes + i] = (rand() * 256) | 0;
  for (let s = 0; s < rows; s++) a.u16[mask / 2 + s] = rand() < 0.2 ? MASKED : 0;

  const codeByte = (slot: number, b: number) =>
    a.u8[scanBlocks[slot >> sh] + L.offCodes + (slot & rm) * L.codeBytes + b];
  const factor = (slot: number) => a.u16[(scanBlocks[slot >> sh] + L.offFactor) / 2 + (slot & rm)];
  const refHam = (slot: number) => {
    let d = 0;
    for (let b = 0; b < L.codeBytes; b++) d += popcount8(codeByte(slot, b) ^ a.u8[qcode + b]);
    return d;
  };
  const refDist = (slot: number) => refHam(slot) | a.u16[mask / 2 + slot];
  const refW = (slot: number) => {
    let w = 0;
    for (let k = 0; k < 4; k++) {
      for (let b = 0; b < L.codeBytes; b++) {
        w += (1 << k) * popcount8((codeByte(slot, b) ^ a.u8[qcode + b]) & a.u8[planes + k * L.codeBytes + b]);
      }
    }
    return w;
  };

  it("scanDist writes every row's masked Hamming distance", () => {
    K.scanDist(codeTable, 0, nChunks, qcode, mask, dist);
    for (let s = 0; s < rows; s++) expect(a.u16[dist / 2 + s], `slot ${s}`).toBe(refDist(s));
  });

  it.each(["scanMasked", "scanAll"] as const)(
    "%s returns exactly the rows within T, in slot order, with their 1-bit estimates",
    (variant) => {
      const d = variant === "scanAll" ? refHam : refDist;
      const ds = Array.from({ length: rows }, (_, s) => d(s))
        .filter((x) => x !== MASKED)
        .sort((x, y) => x - y);
      const T = ds[Math.floor(ds.length / 3)];
      const want = Array.from({ length: rows }, (_, s) => s).filter((s) => d(s) <= T);
      const n = K[variant](
        codeTable,
        0,
        nChunks,
        qcode,
        planes,
        sumAbs,
        twoStep,
        mask,
        T,
        compact,
        outSlots,
        outEst,
        rows,
      );
      expect(n).toBe(want.length);
      expect(Array.from(a.i32.subarray(outSlots / 4, outSlots / 4 + n))).toEqual(want);
      want.forEach((s, i) => {
        const ref = factor(s) * (sumAbs - twoStep * refW(s));
        expect(Math.abs(a.f32[outEst / 4 + i] - ref), `slot ${s}`).toBeLessThanOrEqual(Math.abs(ref) * 1e-5 + 1e-3);
      });
    },
  );

  it("scans a sub-range of chunks; past `cap` it still lists and counts slots but computes no estimates", () => {
    a.f32.fill(-12345, outEst / 4, outEst / 4 + rows);
    const n = K.scanMasked(
      codeTable,
      2,
      2,
      qcode,
      planes,
      sumAbs,
      twoStep,
      mask,
      L.padDim,
      compact,
      outSlots,
      outEst,
      10,
    );
    const want = Array.from({ length: 2 * L.chunkRows }, (_, i) => 2 * L.chunkRows + i).filter(
      (s) => refDist(s) !== MASKED,
    );
    expect(n).toBe(want.length);
    expect(Array.from(a.i32.subarray(outSlots / 4, outSlots / 4 + n))).toEqual(want);
    for (let i = 0; i < 10; i++) {
      const ref = factor(want[i]) * (sumAbs - twoStep * refW(want[i]));
      expect(Math.abs(a.f32[outEst / 4 + i] - ref)).toBeLessThanOrEqual(Math.abs(ref) * 1e-5 + 1e-3);
    }
    for (let i = 10; i < n; i++) expect(a.f32[outEst / 4 + i]).toBe(-12345);
  });
});

describe.each(
  CHUNK_SIZES.flatMap(
    (c) =>
      [
        [4, c],
        [2, c],
      ] as const,
  ),
)("the other kernels, refineBits %i, %i rows a chunk", (refineBits, chunkRows) => {
  const dim = 512,
    nChunks = 3;
  const { L, a, K, rand, sideBlocks, scanBlocks, scratch } = rig(dim, nChunks, 99, refineBits, chunkRows);
  const rows = nChunks * L.chunkRows,
    sh = L.chunkShift,
    rm = L.chunkRows - 1;
  const sideTable = scratch,
    arr = sideTable + 64,
    out = arr + rows * 2,
    hist = out + rows * 4;
  const q16 = hist + 65536 * 4,
    slots = q16 + L.padDim * 2,
    est = slots + rows * 4,
    tabs = est + rows * 4;
  const codeTable = tabs + 65536;
  a.i32.set(sideBlocks, sideTable / 4);
  a.i32.set(scanBlocks, codeTable / 4);
  const side = (slot: number) => sideBlocks[slot >> sh];

  it("histogram counts u16 values", () => {
    const vals = Array.from({ length: 64 }, () => (rand() * 20) | 0);
    a.u16.set(vals, arr / 2);
    a.u32.fill(0, hist / 4, hist / 4 + 32);
    K.histogram(arr, vals.length, hist);
    for (let v = 0; v < 20; v++) expect(a.u32[hist / 4 + v]).toBe(vals.filter((x) => x === v).length);
  });

  it("collect returns indices with lo ≤ v ≤ lo + span, counting past cap", () => {
    const vals = Array.from({ length: rows }, () => (rand() < 0.1 ? MASKED : (rand() * 300) | 0));
    a.u16.set(vals, arr / 2);
    const want = vals.flatMap((v, i) => (v >= 100 && v <= 140 ? [i] : []));
    expect(K.collect(arr, rows, 100, 40, out, rows)).toBe(want.length);
    expect(Array.from(a.i32.subarray(out / 4, out / 4 + want.length))).toEqual(want);
    expect(K.collect(arr, rows, 100, 40, out, 3)).toBe(want.length);
    const zeros = vals.flatMap((v, i) => (v === 0 ? [i] : []));
    expect(K.collect(arr, rows, 0, 0, out, rows)).toBe(zeros.length);
  });

  it.runIf(refineBits === 4)("refine equals the 4-bit dot product computed in JS", () => {
    const picks = Array.from({ length: 40 }, () => (rand() * rows) | 0);
    for (const s of picks) {
      for (let i = 0; i < L.refineBytes; i++)
        a.u8[side(s) + L.offRefine + (s & rm) * L.refineBytes + i] = (rand() * 256) | 0;
      a.f32[(side(s) + L.offScale) / 4 + (s & rm)] = 0.001 + rand() * 0.01;
    }
    for (let j = 0; j < L.padDim; j++) a.i16[q16 / 2 + j] = Math.round((rand() * 2 - 1) * 32767);
    a.i32.set(picks, slots / 4);
    const invScale = 1 / 12345,
      offset = 0.75;
    K.refine(slots, picks.length, codeTable, sideTable, q16, invScale, offset, est);
    picks.forEach((s, i) => {
      const base = side(s) + L.offRefine + (s & rm) * L.refineBytes;
      let S = 0;
      for (let j = 0; j < L.padDim; j++) {
        const g = j >> 5,
          r = j & 31;
        const byte = a.u8[base + g * 16 + (r & 15)];
        const u = r < 16 ? byte & 15 : byte >> 4;
        S += a.i16[q16 / 2 + j] * u;
      }
      const want = a.f32[(side(s) + L.offScale) / 4 + (s & rm)] * (S * invScale - offset);
      expect(a.f32[est / 4 + i]).toBeCloseTo(want, 4);
    });
  });

  it.runIf(refineBits === 2)(
    "refine (2 bits) equals Σ q·(2·sign + extra) computed in JS, sign bits from the scan block",
    () => {
      const picks = Array.from({ length: 40 }, () => (rand() * rows) | 0);
      for (const s of picks) {
        for (let i = 0; i < L.refineBytes; i++)
          a.u8[side(s) + L.offRefine + (s & rm) * L.refineBytes + i] = (rand() * 256) | 0;
        a.f32[(side(s) + L.offScale) / 4 + (s & rm)] = 0.001 + rand() * 0.01;
      }
      // Extreme query values included: i16 lane sums must not overflow.
      const q = Array.from({ length: L.padDim }, (_, j) =>
        j % 7 === 0 ? (j % 2 ? 127 : -127) : Math.round((rand() * 2 - 1) * 127),
      );
      q.forEach((v, j) => (a.u8[q16 + qvecOrder2(j)] = v & 0xff));
      a.i32.set(picks, slots / 4);
      const invScale = 1 / 123,
        offset = 0.75;
      K.refine(slots, picks.length, codeTable, sideTable, q16, invScale, offset, est);
      picks.forEach((s, i) => {
        const code = scanBlocks[s >> sh] + L.offCodes + (s & rm) * L.codeBytes;
        const ext = side(s) + L.offRefine + (s & rm) * L.refineBytes;
        let S = 0;
        for (let j = 0; j < L.padDim; j++) {
          const u = 2 * ((a.u8[code + (j >> 3)] >> (j & 7)) & 1) + ((a.u8[ext + (j >> 3)] >> (j & 7)) & 1);
          S += q[j] * u;
        }
        const want = a.f32[(side(s) + L.offScale) / 4 + (s & rm)] * (S * invScale - offset);
        expect(a.f32[est / 4 + i]).toBeCloseTo(want, 4);
      });
    },
  );

  it.runIf(refineBits === 4)("dots4 equals the 4-bit codes dotted with each i16 centroid, computed in JS", () => {
    const s = 5,
      C = 7;
    const rp = side(s) + L.offRefine + (s & rm) * L.refineBytes;
    for (let i = 0; i < L.refineBytes; i++) a.u8[rp + i] = (rand() * 256) | 0;
    const cents = tabs + 16384,
      out = cents + C * L.padDim * 2;
    for (let j = 0; j < C * L.padDim; j++) a.i16[cents / 2 + j] = Math.round((rand() * 2 - 1) * 1000);
    K.dots4(rp, cents, C, out);
    for (let c = 0; c < C; c++) {
      let S = 0;
      for (let j = 0; j < L.padDim; j++) {
        const g = j >> 5,
          r = j & 31;
        const byte = a.u8[rp + g * 16 + (r & 15)];
        S += a.i16[cents / 2 + c * L.padDim + j] * (r < 16 ? byte & 15 : byte >> 4);
      }
      expect(a.i32[out / 4 + c]).toBe(S);
    }
  });

  it("buildMaskIds matches rows against short id lists (empty list = no filter)", () => {
    const idsA = tabs + 256,
      idsB = idsA + 64;
    for (let s = 0; s < rows; s++) {
      a.i32[(side(s) + L.offGroupA) / 4 + (s & rm)] = (rand() * 6) | 0;
      a.i32[(side(s) + L.offGroupB) / 4 + (s & rm)] = (rand() * 11) | 0;
    }
    const ga = (s: number) => a.i32[(side(s) + L.offGroupA) / 4 + (s & rm)];
    const gb = (s: number) => a.i32[(side(s) + L.offGroupB) / 4 + (s & rm)];
    for (const [la, lb] of [
      [[2], []],
      [[], [3, 7]],
      [[0, 5, 1], [10]],
      [[4], [4, 9, 2, 0, 1, 6, 8, 3]],
    ]) {
      a.i32.set(la, idsA / 4);
      a.i32.set(lb, idsB / 4);
      K.buildMaskIds(sideTable, nChunks, idsA, la.length, idsB, lb.length, arr);
      for (let s = 0; s < rows; s++) {
        const ok = (la.length === 0 || la.includes(ga(s))) && (lb.length === 0 || lb.includes(gb(s)));
        expect(a.u16[arr / 2 + s], `slot ${s} ${la}/${lb}`).toBe(ok ? 0 : MASKED);
      }
    }
  });

  it("buildMask ORs the group tables per row", () => {
    const tA = tabs,
      tB = tabs + 64;
    for (let s = 0; s < rows; s++) {
      a.i32[(side(s) + L.offGroupA) / 4 + (s & rm)] = (rand() * 5) | 0;
      a.i32[(side(s) + L.offGroupB) / 4 + (s & rm)] = (rand() * 9) | 0;
    }
    a.u16.set([0, MASKED, 0, MASKED, 0], tA / 2);
    a.u16.set([0, 0, MASKED, 0, MASKED, 0, 0, MASKED, 0], tB / 2);
    const ga = (s: number) => a.i32[(side(s) + L.offGroupA) / 4 + (s & rm)];
    const gb = (s: number) => a.i32[(side(s) + L.offGroupB) / 4 + (s & rm)];
    for (const flags of [0, 1, 2, 3]) {
      K.buildMask(sideTable, nChunks, tA, tB, flags, arr);
      for (let s = 0; s < rows; s++) {
        const want = (flags & 1 ? a.u16[tA / 2 + ga(s)] : 0) | (flags & 2 ? a.u16[tB / 2 + gb(s)] : 0);
        expect(a.u16[arr / 2 + s]).toBe(want);
      }
    }
  });
});
