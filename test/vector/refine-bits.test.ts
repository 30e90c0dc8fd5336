/**
 * The middle pass's two layouts (refineBits 2 = scan sign + 1 extra bit, the default; 4 = 4-bit
 * codes): codes and estimates against the exact rotated vectors, the nibbles list training reads,
 * and the whole index (recall, remove, retrain) on a small clustered set with either layout.
 */
import { describe, expect, it } from "vitest";
import { generateDataset, generateQueries } from "../../bench/lib/synthetic.ts";
import { Arena } from "../../src/vector/arena.ts";
import { Encoder } from "../../src/vector/encode.ts";
import { makeLayout } from "../../src/vector/layout.ts";
import { Rotation } from "../../src/vector/rotation.ts";
import { VectorIndexImpl } from "../../src/vector/vector-index.ts";
import { createMemoryVectorSource } from "../../src/vector/index.ts";
import { instantiateKernels } from "../../src/vector/wasm/kernels.ts";
import { exactTopK, indexOf, recallAt, row } from "./helpers.ts";

const dim = 512;
const ds = generateDataset({ n: 12_000, dim, kind: "clustered", seed: 61, collections: 4, framesPerVideo: 120 });
const q = (Q: Float32Array, i: number) => Q.subarray(i * dim, (i + 1) * dim);

function pearson(x: number[], y: number[]): number {
  const n = x.length,
    mx = x.reduce((a, b) => a + b) / n,
    my = y.reduce((a, b) => a + b) / n;
  let sxy = 0,
    sxx = 0,
    syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) ** 2;
    syy += (y[i] - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}

describe.each([
  [2, 128],
  [4, 128],
  [2, 32],
] as const)("codes, refineBits %i, %i rows a chunk", (bits, chunkRows) => {
  const L = makeLayout(dim, bits, chunkRows);
  const a = new Arena([L.sideBlockBytes, L.scanBlockBytes]);
  const K = instantiateKernels(L, a.memory);
  const rot = new Rotation(L.dim, L.padDim, 3);
  const enc = new Encoder(L, rot);
  const nChunks = 2,
    rows = nChunks * L.chunkRows,
    sh = L.chunkShift,
    rm = L.chunkRows - 1;
  const scan = Array.from({ length: nChunks }, () => a.allocBlock(L.scanBlockBytes));
  const side = Array.from({ length: nChunks }, () => a.allocBlock(L.sideBlockBytes));
  const scratch = a.allocRun(1 << 16).off;
  // Rows centred on the data mean, as the index does once it learned it.
  const center = new Float32Array(dim);
  for (let i = 0; i < 1000; i++) for (let j = 0; j < dim; j++) center[j] += ds.vectors[i * dim + j] / 1000;
  enc.setCenter(center);
  for (let s = 0; s < rows; s++) enc.encodeRow(row(ds, s * 37), a.views(), scan[s >> sh], side[s >> sh], s & rm);
  /** The exact rotated, centred vector of row s. */
  const exact = (s: number) => {
    const x = row(ds, s * 37);
    let nn = 0;
    for (let j = 0; j < dim; j++) nn += x[j] * x[j];
    const r = new Float32Array(L.padDim),
      c = new Float32Array(L.padDim);
    rot.apply(x, r, 1 / Math.sqrt(nn));
    rot.apply(center, c);
    for (let j = 0; j < L.padDim; j++) r[j] -= c[j];
    return r;
  };

  it("nibblesOf keeps each dim's sign (top bit = the scan block's sign bit) and the row's direction", () => {
    const nib = scratch;
    let cosSum = 0;
    for (let s = 0; s < rows; s++) {
      enc.nibblesOf(a.views().u8, scan[s >> sh], side[s >> sh], s & rm, nib);
      const r = exact(s);
      let dot = 0,
        nn = 0,
        rr = 0,
        signMismatch = 0;
      for (let j = 0; j < L.padDim; j++) {
        const g = j >> 5,
          i = j & 31,
          byte = a.u8[nib + g * 16 + (i & 15)];
        const u = i < 16 ? byte & 15 : byte >> 4;
        const signBit = (a.u8[scan[s >> sh] + L.offCodes + (s & rm) * L.codeBytes + (j >> 3)] >> (j & 7)) & 1;
        if ((u >= 8 ? 1 : 0) !== signBit && r[j] !== 0) signMismatch++;
        dot += (u - 7.5) * r[j];
        nn += (u - 7.5) ** 2;
        rr += r[j] * r[j];
      }
      // A nibble's top bit can differ from r > 0 only at r = 0 (4-bit: floor(0) = level 8).
      expect(signMismatch).toBe(0);
      cosSum += dot / Math.sqrt(nn * rr);
    }
    // 2-bit levels of a gaussian-like vector point within ~20° of it, 4-bit within ~8°.
    expect(cosSum / rows).toBeGreaterThan(bits === 2 ? 0.93 : 0.99);
  });

  it("refine estimates q·(x − c): tracks the exact product over rows near and far from the query", () => {
    const Q = generateQueries(ds, 4, "image", 9);
    const codeTable = scratch + 4096,
      sideTable = codeTable + 64,
      qv = sideTable + 64,
      slots = qv + 4096,
      out = slots + rows * 4;
    a.views();
    a.i32.set(scan, codeTable / 4);
    a.i32.set(side, sideTable / 4);
    a.i32.set(
      Array.from({ length: rows }, (_, s) => s),
      slots / 4,
    );
    const pq = enc.newPreparedQuery();
    for (let qi = 0; qi < 4; qi++) {
      // Query = a perturbed row of this chunk set, so some rows are near it.
      const query = Float32Array.from(row(ds, qi * 31 * 37), (v, j) => v + 0.3 * q(Q, qi)[j]);
      enc.prepareQuery(query, pq);
      if (bits === 4) a.i16.set(pq.q16, qv / 2);
      else a.u8.set(new Uint8Array(pq.q8.buffer), qv);
      K.refine(slots, rows, codeTable, sideTable, qv, pq.invScale, pq.offset, out);
      const est: number[] = [],
        want: number[] = [];
      for (let s = 0; s < rows; s++) {
        const r = exact(s);
        let d = 0;
        for (let j = 0; j < L.padDim; j++) d += pq.rotated[j] * r[j];
        want.push(d);
        est.push(a.f32[out / 4 + s]);
      }
      expect(pearson(est, want)).toBeGreaterThan(bits === 2 ? 0.97 : 0.995);
      // Unbiased scale: the least-squares slope of estimate on exact is ~1.
      const slope = est.reduce((acc, e, i) => acc + e * want[i], 0) / want.reduce((acc, w) => acc + w * w, 0);
      expect(slope).toBeGreaterThan(0.85);
      expect(slope).toBeLessThan(1.15);
    }
  });

  it("encoding is deterministic", () => {
    const L2 = makeLayout(dim, bits, chunkRows);
    const a2 = new Arena([L2.sideBlockBytes, L2.scanBlockBytes]);
    const e2 = new Encoder(L2, new Rotation(L2.dim, L2.padDim, 3));
    e2.setCenter(center);
    const sc = a2.allocBlock(L2.scanBlockBytes),
      sd = a2.allocBlock(L2.sideBlockBytes);
    for (let s = 0; s < L.chunkRows; s++) e2.encodeRow(row(ds, s * 37), a2.views(), sc, sd, s);
    expect(
      Buffer.compare(
        a2.u8.subarray(sc, sc + L.scanBlockBytes),
        a.views().u8.subarray(scan[0], scan[0] + L.scanBlockBytes),
      ),
    ).toBe(0);
    expect(
      Buffer.compare(a2.u8.subarray(sd, sd + L.sideBlockBytes), a.u8.subarray(side[0], side[0] + L.sideBlockBytes)),
    ).toBe(0);
  });
});

describe.each([2, 4] as const)("the index with refineBits %i", (bits) => {
  // Lists trained at 2 048 rows and retrained at 8 192 (4×): training reads the codes as nibbles.
  const { index } = indexOf(ds, { refineBits: bits, trainAt: 2048, lists: 48 }, undefined, true);

  it("recall@10 ≥ 0.95: text-like queries on the flat scan, image-like ones probing 10 % of the rows", () => {
    for (const [kind, probe] of [
      ["text", undefined],
      ["image", 0.1],
    ] as const) {
      const Q = generateQueries(ds, 20, kind, 62);
      let sum = 0;
      for (let i = 0; i < 20; i++)
        sum += recallAt(index.search(q(Q, i), { partition: "acct", k: 10, probe }), exactTopK(ds, q(Q, i), 10));
      expect(sum / 20, `${kind}`).toBeGreaterThanOrEqual(0.95);
    }
  });

  it("remove then rebuild: removed rows never come back, moved rows keep their codes (recall holds)", () => {
    const local = indexOf(ds, { refineBits: bits, trainAt: 2048, lists: 48 }, undefined, true);
    const gone = new Set<number>();
    for (let i = 0; i < ds.n; i += 3) gone.add(i);
    expect(local.index.remove([...gone].map((i) => 1000 + i))).toBe(gone.size);
    for (const i of gone) local.source.delete(1000 + i);
    local.index.rebuild("acct");
    const Q = generateQueries(ds, 20, "image", 63);
    let sum = 0;
    for (let i = 0; i < 20; i++) {
      const got = local.index.search(q(Q, i), { partition: "acct", k: 10, probe: 0.15 });
      for (const g of got) expect(gone.has(g.rowId - 1000)).toBe(false);
      sum += recallAt(
        got,
        exactTopK(ds, q(Q, i), 10, (j) => !gone.has(j)),
      );
    }
    expect(sum / 20).toBeGreaterThanOrEqual(0.95);
  });
});

it("the 2-bit layout takes ≥ 150 B a row less than the 4-bit one for the same rows", () => {
  const bytes = (bits: 2 | 4) => {
    const idx = new VectorIndexImpl({ dim, source: createMemoryVectorSource(), refineBits: bits, trainAt: Infinity });
    const rows = Array.from({ length: 8192 }, (_, i) => ({
      rowId: i,
      vector: row(ds, i),
      partition: "p",
      groupA: 0,
      groupB: ds.video[i],
    }));
    idx.add(rows);
    const m = idx.memoryStats;
    return m.arenaUsed / 8192;
  };
  expect(bytes(4) - bytes(2)).toBeGreaterThanOrEqual(150);
});
