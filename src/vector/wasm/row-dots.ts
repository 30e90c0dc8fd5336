/**
 * Dot products of one float32 query against many float32 rows, in WebAssembly SIMD: the null
 * sample of calibration (1 024 rows a vector mode, every search) and the exact rescoring of a
 * look-up's candidates (a few hundred rows) were scalar JS loops, ~0.8 and ~1.4 ms of a 100 k
 * frame text search (bench/search-bench.ts --profile, issue 27) — four f32 lanes × four
 * accumulators do the same in a fraction.
 *
 * Sums are float32 in a fixed order (16 lanes, folded pairwise, then a scalar tail): the same bits
 * on every machine (WebAssembly has no fused multiply-add), within ~1e-6 of the float64 JS loops
 * for unit vectors. Rows are packed one after another in this object's own memory: callers write
 * them through `rows` (calibration's sample lives there) or `load` (candidates, copied in).
 */
import { assemble, Fn, Op, Simd } from "./asm.ts";

const PAGE = 65_536;

/**
 * dots(q, rows, n, dim, out, norms): out[i] = Σ_j q[j]·rows[i·dim + j] for i < n; `dotsNorms` also
 * writes norms[i] = Σ_j rows[i·dim + j]² (the rescoring's |v|²; `dots` ignores `norms`: calibration
 * needs no norms, and summing them costs as much again). Pointers are byte offsets, 16-aligned.
 * `dotsNormsAt(q, ptrs, n, dim, out, norms)` is `dotsNorms` over rows anywhere in the memory: row i
 * starts at the byte offset ptrs[i] (an i32 array), so rows kept in place need no copy first.
 */
function dotsFn(withNorms: boolean, gather = false): Fn {
  const name = gather ? "dotsNormsAt" : withNorms ? "dotsNorms" : "dots";
  const f = new Fn(name, ["i32", "i32", "i32", "i32", "i32", "i32"], []);
  const [q, rows, n, dim, out, norms] = [0, 1, 2, 3, 4, 5];
  // The current row: `rows` itself, stepping by a row; or read from the pointer list at `rows`.
  const row = gather ? f.local("i32") : rows;
  const j = f.local("i32"),
    bytes = f.local("i32"),
    end16 = f.local("i32"),
    end4 = f.local("i32");
  const a = [0, 1, 2, 3].map(() => f.local("v128"));
  const s = [0, 1, 2, 3].map(() => f.local("v128"));
  const x = f.local("v128");
  const sum = f.local("f32"),
    sq = f.local("f32"),
    r = f.local("f32");
  const zero = () => f.v128const(new Uint8Array(16));
  // Byte lengths: the whole row, its part in steps of 16 floats, then of 4.
  f.get(dim).i32(2).op(Op.i32_shl).set(bytes);
  f.get(bytes).i32(~63).op(Op.i32_and).set(end16);
  f.get(bytes).i32(~15).op(Op.i32_and).set(end4);
  f.block().loop();
  f.get(n).op(Op.i32_eqz).brIf(1);
  if (gather) f.get(rows).mem(Op.i32_load, 0, 2).set(row);
  for (let k = 0; k < 4; k++) {
    zero().set(a[k]);
    if (withNorms) zero().set(s[k]);
  }
  f.i32(0).set(j);
  // 16 floats a step: four independent accumulators (one would wait on each addition).
  f.block().loop();
  f.get(j).get(end16).op(Op.i32_ge_u).brIf(1);
  for (let k = 0; k < 4; k++) {
    f.get(row)
      .get(j)
      .op(Op.i32_add)
      .vmem(Simd.v128_load, 16 * k, 0)
      .set(x);
    f.get(a[k])
      .get(q)
      .get(j)
      .op(Op.i32_add)
      .vmem(Simd.v128_load, 16 * k, 0)
      .get(x)
      .simd(Simd.f32x4_mul);
    f.simd(Simd.f32x4_add).set(a[k]);
    if (withNorms) f.get(s[k]).get(x).get(x).simd(Simd.f32x4_mul).simd(Simd.f32x4_add).set(s[k]);
  }
  f.get(j).i32(64).op(Op.i32_add).set(j);
  f.br(0).end().end();
  // Then 4 a step into the first accumulator.
  f.block().loop();
  f.get(j).get(end4).op(Op.i32_ge_u).brIf(1);
  f.get(row).get(j).op(Op.i32_add).vmem(Simd.v128_load, 0, 0).set(x);
  f.get(a[0]).get(q).get(j).op(Op.i32_add).vmem(Simd.v128_load, 0, 0).get(x).simd(Simd.f32x4_mul);
  f.simd(Simd.f32x4_add).set(a[0]);
  if (withNorms) f.get(s[0]).get(x).get(x).simd(Simd.f32x4_mul).simd(Simd.f32x4_add).set(s[0]);
  f.get(j).i32(16).op(Op.i32_add).set(j);
  f.br(0).end().end();
  // Fold: (a0 + a1) + (a2 + a3), then the four lanes in order.
  const fold = (acc: number[], into: number) => {
    f.get(acc[0]).get(acc[1]).simd(Simd.f32x4_add).get(acc[2]).get(acc[3]).simd(Simd.f32x4_add);
    f.simd(Simd.f32x4_add).set(x);
    f.get(x).lane(Simd.f32x4_extract_lane, 0).get(x).lane(Simd.f32x4_extract_lane, 1).op(Op.f32_add);
    f.get(x).lane(Simd.f32x4_extract_lane, 2).op(Op.f32_add);
    f.get(x).lane(Simd.f32x4_extract_lane, 3).op(Op.f32_add).set(into);
  };
  fold(a, sum);
  if (withNorms) fold(s, sq);
  // The last dim % 4 floats one by one.
  f.block().loop();
  f.get(j).get(bytes).op(Op.i32_ge_u).brIf(1);
  f.get(row).get(j).op(Op.i32_add).mem(Op.f32_load, 0, 2).set(r);
  f.get(sum).get(q).get(j).op(Op.i32_add).mem(Op.f32_load, 0, 2).get(r).op(Op.f32_mul).op(Op.f32_add).set(sum);
  if (withNorms) f.get(sq).get(r).get(r).op(Op.f32_mul).op(Op.f32_add).set(sq);
  f.get(j).i32(4).op(Op.i32_add).set(j);
  f.br(0).end().end();
  f.get(out).get(sum).mem(Op.f32_store, 0, 2);
  if (withNorms) {
    f.get(norms).get(sq).mem(Op.f32_store, 0, 2);
    f.get(norms).i32(4).op(Op.i32_add).set(norms);
  }
  f.get(out).i32(4).op(Op.i32_add).set(out);
  if (gather) f.get(rows).i32(4).op(Op.i32_add).set(rows);
  else f.get(rows).get(bytes).op(Op.i32_add).set(rows);
  f.get(n).i32(1).op(Op.i32_sub).set(n);
  f.br(0).end().end();
  return f;
}

let compiled: WebAssembly.Module | null = null;
export const rowDotsModule = (): WebAssembly.Module =>
  (compiled ??= new WebAssembly.Module(assemble([dotsFn(false), dotsFn(true), dotsFn(true, true)])));

export type DotsFn = (q: number, rows: number, n: number, dim: number, out: number, norms: number) => void;

/** Rounds a byte count up to 16 (v128 alignment). */
export const align16 = (b: number) => (b + 15) & ~15;

/**
 * Room for a query of `dim` floats and up to `capacity` rows, with the dot products (and norms)
 * written beside them. `rows` is a view of the rows' place (calibration's sample, written once);
 * `load` copies rows there, growing the memory when they do not fit (the views are made again).
 */
export class RowDots {
  private readonly memory: WebAssembly.Memory;
  private readonly dotsFn: DotsFn;
  private readonly dotsNormsFn: DotsFn;
  private capacity = 0;
  private rowsAt = 0;
  private outAt = 0;
  private normsAt = 0;
  /** The rows' place, row after row (capacity × dim floats). */
  rows!: Float32Array;
  private query!: Float32Array;
  private out!: Float32Array;
  private norms!: Float32Array;

  constructor(
    readonly dim: number,
    capacity: number,
  ) {
    this.memory = new WebAssembly.Memory({ initial: 1 });
    const inst = new WebAssembly.Instance(rowDotsModule(), { env: { memory: this.memory } });
    this.dotsFn = inst.exports.dots as unknown as DotsFn;
    this.dotsNormsFn = inst.exports.dotsNorms as unknown as DotsFn;
    this.reserve(capacity);
  }

  /** Makes room for `capacity` rows (only grows; what the rows held is not kept: `load` rewrites them). */
  private reserve(capacity: number): void {
    if (capacity <= this.capacity && this.rows) return;
    const dim = this.dim;
    const rowsAt = align16(dim * 4);
    const outAt = rowsAt + align16(capacity * dim * 4);
    const normsAt = outAt + align16(capacity * 4);
    const need = normsAt + align16(capacity * 4);
    const have = this.memory.buffer.byteLength;
    if (need > have) this.memory.grow(Math.ceil((need - have) / PAGE));
    const buf = this.memory.buffer;
    this.capacity = capacity;
    this.rowsAt = rowsAt;
    this.outAt = outAt;
    this.normsAt = normsAt;
    this.query = new Float32Array(buf, 0, dim);
    this.rows = new Float32Array(buf, rowsAt, capacity * dim);
    this.out = new Float32Array(buf, outAt, capacity);
    this.norms = new Float32Array(buf, normsAt, capacity);
  }

  /** Copies `vectors` (each of `dim` floats) into the rows' place, from row 0. */
  load(vectors: readonly Float32Array[]): void {
    this.reserve(vectors.length);
    const dim = this.dim;
    for (let i = 0; i < vectors.length; i++) this.rows.set(vectors[i], i * dim);
  }

  /**
   * q · row for the first `n` rows, and their squared norms when `withNorms`. The returned views
   * live until the next call.
   */
  dots(q: Float32Array, n: number, withNorms = false): { dots: Float32Array; norms: Float32Array } {
    if (q.length !== this.dim) throw new Error(`query has ${q.length} dimensions, the rows ${this.dim}`);
    if (n > this.capacity) throw new Error(`${n} rows asked, room for ${this.capacity}`);
    this.query.set(q);
    (withNorms ? this.dotsNormsFn : this.dotsFn)(0, this.rowsAt, n, this.dim, this.outAt, this.normsAt);
    return { dots: this.out.subarray(0, n), norms: this.norms.subarray(0, n) };
  }
}
