/**
 * Rows of `dim` floats kept in fixed slots of one WebAssembly memory, compared against a query in
 * place (row-dots.ts `dotsNormsAt`): the exact-vector cache of search (search/vector-cache.ts)
 * keeps its rows here, so rescoring a look-up's candidates reads them where they are. Copying
 * them into a RowDots first was ~0.85 ms of a 100 k-frame text search's event-loop time (1 000
 * rows of 2 KiB, read from all over the heap and written again) against ~0.1 ms for the products.
 *
 * Slots are handed out from a free list, then from the top; the memory grows by pages and never
 * shrinks (the owner drops the whole slab to give memory back). Dot products are the same kernel,
 * in the same order, as RowDots': the same bits.
 */
import { align16, type DotsFn, rowDotsModule } from "./row-dots.ts";

const PAGE = 65_536;
/** Rows compared per kernel call (the pointer, product and norm areas hold this many). */
const BLOCK = 512;

export class RowSlab {
  private readonly memory: WebAssembly.Memory;
  private readonly dotsAt: DotsFn;
  /** Bytes of a slot (a row, 16-aligned). */
  readonly slotBytes: number;
  private readonly ptrsAt: number;
  private readonly outAt: number;
  private readonly normsAt: number;
  private readonly slotsAt: number;
  private top = 0;
  private capacity = 0;
  private readonly free: number[] = [];
  private f32!: Float32Array;
  private i32!: Int32Array;

  constructor(readonly dim: number) {
    this.slotBytes = align16(dim * 4);
    this.ptrsAt = this.slotBytes;
    this.outAt = this.ptrsAt + BLOCK * 4;
    this.normsAt = this.outAt + BLOCK * 4;
    this.slotsAt = this.normsAt + BLOCK * 4;
    this.memory = new WebAssembly.Memory({ initial: Math.ceil(this.slotsAt / PAGE) || 1 });
    const inst = new WebAssembly.Instance(rowDotsModule(), { env: { memory: this.memory } });
    this.dotsAt = inst.exports.dotsNormsAt as unknown as DotsFn;
    this.refresh();
  }

  /** Slots in use. */
  get used(): number {
    return this.top - this.free.length;
  }

  /** Bytes of the memory (it only grows). */
  get bytes(): number {
    return this.memory.buffer.byteLength;
  }

  private refresh(): void {
    const buf = this.memory.buffer;
    this.f32 = new Float32Array(buf);
    this.i32 = new Int32Array(buf);
    this.capacity = Math.floor((buf.byteLength - this.slotsAt) / this.slotBytes);
  }

  /** A free slot (the memory grows when there is none). */
  alloc(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    if (this.top >= this.capacity) {
      // A quarter more each time (at least a page): growth is rare, and a grow detaches the views.
      const want = Math.max(PAGE, Math.ceil(this.memory.buffer.byteLength / 4 / PAGE) * PAGE);
      this.memory.grow(want / PAGE);
      this.refresh();
    }
    return this.top++;
  }

  release(slot: number): void {
    this.free.push(slot);
  }

  /** Copies `row` (dim floats) into `slot`. */
  write(slot: number, row: Float32Array): void {
    if (row.length !== this.dim) throw new RangeError(`row has ${row.length} floats, the slab ${this.dim}`);
    this.f32.set(row, (this.slotsAt + slot * this.slotBytes) >> 2);
  }

  /** A copy of the row in `slot`. */
  read(slot: number): Float32Array {
    const at = (this.slotsAt + slot * this.slotBytes) >> 2;
    return this.f32.slice(at, at + this.dim);
  }

  /**
   * out[i] = cosine of `unit` (a unit-length query of dim floats) and the row in slots[i], for
   * i < n: q·row / |row| (0 for a zero row), as the index's rescoring computes it.
   */
  cosines(unit: Float32Array, slots: ArrayLike<number>, n: number, out: Float64Array): void {
    if (unit.length !== this.dim) throw new RangeError(`query has ${unit.length} floats, the slab ${this.dim}`);
    this.f32.set(unit, 0);
    const ptrs = this.ptrsAt >> 2,
      dots = this.outAt >> 2,
      norms = this.normsAt >> 2;
    for (let from = 0; from < n; from += BLOCK) {
      const m = Math.min(BLOCK, n - from);
      for (let i = 0; i < m; i++) this.i32[ptrs + i] = this.slotsAt + slots[from + i] * this.slotBytes;
      this.dotsAt(0, this.ptrsAt, m, this.dim, this.outAt, this.normsAt);
      for (let i = 0; i < m; i++) {
        const nn = this.f32[norms + i];
        out[from + i] = nn > 0 ? this.f32[dots + i] / Math.sqrt(nn) : 0;
      }
    }
  }
}
