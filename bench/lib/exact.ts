/**
 * Exact ground truth for the bench: f32 dot products of blocks of 8 queries against every row,
 * as a WebAssembly SIMD kernel (the plain-JS scan of 1 M × 512 takes ~0.4 s per query; this
 * does 8 queries per pass over the data). The data lives in this module's memory, so the
 * dataset generator writes straight into it.
 */
import { assemble, Fn, Op, Simd } from "../../src/vector/wasm/asm.ts";
import { kthLargest } from "../../src/vector/select.ts";

const BLOCK = 8;
const PAGE = 65536;

/** dots(data, n, queries, out): out[i * 8 + q] = Σ_j data[i][j] · queries[q][j] for q < 8. */
function dotsKernel(dim: number): Fn {
  const f = new Fn("dots", ["i32", "i32", "i32", "i32"], []);
  const [data, n, queries, out] = [0, 1, 2, 3];
  const acc = Array.from({ length: BLOCK }, () => f.local("v128"));
  const x = f.local("v128"),
    j = f.local("i32"),
    qp = f.local("i32"),
    o = f.local("i32");
  f.block().loop();
  f.get(n).op(Op.i32_eqz).brIf(1);
  for (const a of acc) f.i32(0).simd(Simd.i32x4_splat).set(a);
  f.i32(0).set(j);
  f.get(queries).set(qp);
  f.block().loop();
  f.get(j)
    .i32(dim * 4)
    .op(Op.i32_ge_u)
    .brIf(1);
  f.get(data).get(j).op(Op.i32_add).vmem(Simd.v128_load, 0, 2).set(x);
  acc.forEach((a, q) => {
    f.get(a)
      .get(x)
      .get(qp)
      .vmem(Simd.v128_load, q * dim * 4, 2)
      .simd(Simd.f32x4_mul)
      .simd(Simd.f32x4_add)
      .set(a);
  });
  f.get(j).i32(16).op(Op.i32_add).set(j);
  f.get(qp).i32(16).op(Op.i32_add).set(qp);
  f.br(0).end().end();
  acc.forEach((a, q) => {
    f.get(out).get(a).lane(Simd.f32x4_extract_lane, 0).get(a).lane(Simd.f32x4_extract_lane, 1).op(Op.f32_add);
    f.get(a).lane(Simd.f32x4_extract_lane, 2).get(a).lane(Simd.f32x4_extract_lane, 3).op(Op.f32_add).op(Op.f32_add);
    f.mem(Op.f32_store, q * 4, 2);
  });
  f.get(out)
    .i32(BLOCK * 4)
    .op(Op.i32_add)
    .set(out);
  f.get(data)
    .i32(dim * 4)
    .op(Op.i32_add)
    .set(data);
  f.get(n).i32(1).op(Op.i32_sub).set(n);
  f.br(0).end().end();
  return f;
}

export interface ExactScanner {
  /** The dataset's rows (n × dim), inside the kernel's memory: fill it, then call topK. */
  readonly vectors: Float32Array;
  /**
   * Exact top-k row indices (best first) of each query against all rows, or only rows passing
   * `keep` (a per-row boolean array) for the queries where `keepFor(q)` returns one.
   */
  topK(queries: Float32Array, k: number, keepFor?: (q: number) => Uint8Array | undefined): Int32Array[];
}

export function exactScanner(n: number, dim: number): ExactScanner {
  if (dim % 4) throw new Error("dim must be a multiple of 4");
  const dataOff = 64;
  const queryOff = dataOff + n * dim * 4;
  const outOff = queryOff + BLOCK * dim * 4;
  const end = outOff + n * BLOCK * 4;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(end / PAGE) });
  const inst = new WebAssembly.Instance(new WebAssembly.Module(assemble([dotsKernel(dim)])), { env: { memory } });
  const dots = inst.exports.dots as (data: number, n: number, queries: number, out: number) => void;
  const vectors = new Float32Array(memory.buffer, dataOff, n * dim);
  const qmem = new Float32Array(memory.buffer, queryOff, BLOCK * dim);
  const out = new Float32Array(memory.buffer, outOff, n * BLOCK);
  const scores = new Float32Array(n);
  const work = new Float32Array(n);

  return {
    vectors,
    topK(queries, k, keepFor) {
      const nq = queries.length / dim;
      const result: Int32Array[] = [];
      for (let q0 = 0; q0 < nq; q0 += BLOCK) {
        const b = Math.min(BLOCK, nq - q0);
        qmem.fill(0);
        qmem.set(queries.subarray(q0 * dim, (q0 + b) * dim));
        dots(dataOff, n, queryOff, outOff);
        for (let q = 0; q < b; q++) {
          const keep = keepFor?.(q0 + q);
          let m = 0;
          for (let i = 0; i < n; i++) {
            const s = out[i * BLOCK + q];
            scores[i] = keep && !keep[i] ? -Infinity : s;
            if (!keep || keep[i]) work[m++] = s;
          }
          const kk = Math.min(k, m);
          const t = kk > 0 ? kthLargest(work, m, kk - 1) : Infinity;
          const picked: number[] = [];
          for (let i = 0; i < n; i++) if (scores[i] > t) picked.push(i);
          for (let i = 0; i < n && picked.length < kk; i++) if (scores[i] === t) picked.push(i);
          picked.sort((x, y) => scores[y] - scores[x] || x - y);
          result.push(Int32Array.from(picked));
        }
      }
      return result;
    },
  };
}

/** Rows a streamed query may rank: those whose `of[row]` equals `eq` (e.g. one collection). */
export interface GroupFilter {
  of: Int32Array;
  eq: number;
}

export interface StreamingExact {
  /**
   * Adds a query set (rows of dim floats); `filterFor(q)`, if given, restricts query q to the
   * rows it names. Returns a handle whose `truth()` is filled once every row has been scanned.
   */
  addQueries(queries: Float32Array, filterFor?: (q: number) => GroupFilter | undefined): { truth(): Int32Array[] };
  /** Scans rows [from, from + rows.length / dim) against every query added so far. */
  scan(rows: Float32Array, from: number): void;
  /** Rows the kernel's memory takes per scan call. */
  readonly chunkRows: number;
}

/**
 * Exact top-k over a set too big for one WebAssembly memory: the rows are fed chunk by chunk
 * (in row order) through the same 8-query SIMD kernel as exactScanner, and each query keeps a
 * running top-k. Ties go to the lower row index, as in exactScanner.topK, so the two agree.
 */
export function streamingExact(dim: number, k: number, chunkRows = 32768): StreamingExact {
  if (dim % 4) throw new Error("dim must be a multiple of 4");
  const dataOff = 64;
  const queryOff = dataOff + chunkRows * dim * 4;
  const outOff = queryOff + BLOCK * dim * 4;
  const end = outOff + chunkRows * BLOCK * 4;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(end / PAGE) });
  const inst = new WebAssembly.Instance(new WebAssembly.Module(assemble([dotsKernel(dim)])), { env: { memory } });
  const dots = inst.exports.dots as (data: number, n: number, queries: number, out: number) => void;
  const data = new Float32Array(memory.buffer, dataOff, chunkRows * dim);
  const qmem = new Float32Array(memory.buffer, queryOff, BLOCK * dim);
  const out = new Float32Array(memory.buffer, outOff, chunkRows * BLOCK);
  interface Q {
    vec: Float32Array;
    filter?: GroupFilter;
    scores: Float32Array;
    ids: Int32Array;
    count: number;
  }
  const all: Q[] = [];
  let scanned = 0;

  const offer = (q: Q, s: number, id: number) => {
    // Insert after equal scores (they came from lower rows), drop the last if full.
    let p = Math.min(q.count, k - 1);
    while (p > 0 && q.scores[p - 1] < s) {
      q.scores[p] = q.scores[p - 1];
      q.ids[p] = q.ids[p - 1];
      p--;
    }
    q.scores[p] = s;
    q.ids[p] = id;
    if (q.count < k) q.count++;
  };

  return {
    chunkRows,
    addQueries(queries, filterFor) {
      if (scanned) throw new Error("add every query before the first scan");
      const first = all.length;
      const nq = queries.length / dim;
      for (let q = 0; q < nq; q++) {
        all.push({
          vec: queries.subarray(q * dim, (q + 1) * dim),
          filter: filterFor?.(q),
          scores: new Float32Array(k),
          ids: new Int32Array(k),
          count: 0,
        });
      }
      return { truth: () => all.slice(first, first + nq).map((q) => q.ids.slice(0, q.count)) };
    },
    scan(rows, from) {
      if (from !== scanned) throw new Error(`scan(${from}): rows must come in order from ${scanned}`);
      const n = rows.length / dim;
      for (let r0 = 0; r0 < n; r0 += chunkRows) {
        const m = Math.min(chunkRows, n - r0);
        data.set(rows.subarray(r0 * dim, (r0 + m) * dim));
        const base = from + r0;
        for (let q0 = 0; q0 < all.length; q0 += BLOCK) {
          const b = Math.min(BLOCK, all.length - q0);
          qmem.fill(0);
          for (let q = 0; q < b; q++) qmem.set(all[q0 + q].vec, q * dim);
          dots(dataOff, m, queryOff, outOff);
          for (let q = 0; q < b; q++) {
            const Q = all[q0 + q];
            const f = Q.filter;
            for (let i = 0; i < m; i++) {
              const s = out[i * BLOCK + q];
              if (Q.count === k && !(s > Q.scores[k - 1])) continue;
              if (f && f.of[base + i] !== f.eq) continue;
              offer(Q, s, base + i);
            }
          }
        }
      }
      scanned = from + n;
    },
  };
}
