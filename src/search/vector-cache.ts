/**
 * Kept hand-written, not `lru-cache`: on search's access pattern it is measurably faster
 * (bench/cache-bench.ts, 3000 rows of 512-d per query: a hit 5 ns vs 119 ns, a query's rows found
 * and scored 0.30 ms vs 1.97 ms; a new row costs more, 0.84 µs vs 0.57 µs, for its copy into the
 * slab, beside the ~2.7 µs of reading it; BENCHMARKS.md). It wins on nested maps with numeric row
 * ids (no key string per row), a use stamp instead of reordering on every hit, and rows kept where
 * the SIMD kernel reads them.
 *
 * Exact vectors recently read for rescoring, kept up to a byte budget. A search rescores a few
 * hundred to a few thousand rows by exact cosine, each read by id from SQLite (~2.7 µs a row even
 * from the page cache: B-tree walk plus a 2 KiB copy); queries about the same content keep
 * rescoring the same rows, and a repeated query (the next page, a dashboard refresh, an agent
 * retrying) rescores exactly the same ones.
 *
 * The rows live in WebAssembly memory (src/vector/wasm/row-slab.ts, one slab per dimension) and
 * `cosines` compares a query with them where they are: copying each into the kernel's memory
 * first cost more than the products themselves. Everything that hands out a slot's place is
 * synchronous (`cosines` reads the slots it looks up in the same call), so an eviction by another
 * search between two awaits can never leave a stale row under a live reference.
 *
 * Recency is a use stamp per entry (no per-hit reordering); past the budget, the least recently
 * used quarter is dropped at once. Entries are keyed per index (model + kind: frames and shots
 * number their rows separately) and dropped by the owner when their rows change (a video
 * re-indexed or deleted): SQLite may give a deleted row's id to a new row, so a stale entry would
 * otherwise answer for it.
 */
import { RowSlab } from "../vector/wasm/row-slab.ts";

interface Entry {
  slab: RowSlab;
  slot: number;
  used: number;
}

export class ExactVectorCache {
  private readonly entries = new Map<string, Map<number, Entry>>();
  /** One per row length in use; dropped whole by `clear` (a WebAssembly memory cannot shrink). */
  private slabs = new Map<number, RowSlab>();
  private bytes = 0;
  private clock = 0;

  constructor(readonly budgetBytes: number) {}

  /** Bytes of the rows kept (the budget's measure). */
  get sizeBytes(): number {
    return this.bytes;
  }

  /** Bytes of the memory holding them (grown to the largest working set since the last `clear`). */
  get memoryBytes(): number {
    let n = 0;
    for (const s of this.slabs.values()) n += s.bytes;
    return n;
  }

  private slab(dim: number): RowSlab {
    let s = this.slabs.get(dim);
    if (!s) this.slabs.set(dim, (s = new RowSlab(dim)));
    return s;
  }

  /** A copy of a kept row. */
  get(index: string, rowId: number): Float32Array | undefined {
    const e = this.entries.get(index)?.get(rowId);
    if (!e) return undefined;
    e.used = ++this.clock;
    return e.slab.read(e.slot);
  }

  /** The ids of `ids` neither kept here nor in `beside`; the kept ones count as used now. */
  missing(index: string, ids: readonly number[], beside?: ReadonlyMap<number, Float32Array>): number[] {
    const m = this.entries.get(index);
    const out: number[] = [];
    for (const id of ids) {
      const e = m?.get(id);
      if (e) e.used = ++this.clock;
      else if (!beside?.has(id)) out.push(id);
    }
    return out;
  }

  set(index: string, rowId: number, vector: Float32Array): void {
    const bytes = vector.length * 4;
    if (this.budgetBytes <= 0 || bytes === 0 || bytes > this.budgetBytes) return;
    let m = this.entries.get(index);
    if (!m) this.entries.set(index, (m = new Map()));
    const old = m.get(rowId);
    if (old) this.forget(old);
    const slab = this.slab(vector.length);
    const slot = slab.alloc();
    slab.write(slot, vector);
    m.set(rowId, { slab, slot, used: ++this.clock });
    this.bytes += bytes;
    if (this.bytes > this.budgetBytes) this.evict();
  }

  /**
   * out[i] = cosine of `unit` (unit length) and row ids[i]: a kept row in place, else the one in
   * `beside` (rows just read, or a look-up session's); NaN where there is neither, or its length
   * is not the query's. The kept rows count as used now.
   */
  cosines(
    index: string,
    ids: readonly number[],
    unit: Float32Array,
    beside?: ReadonlyMap<number, Float32Array>,
  ): Float64Array {
    const dim = unit.length;
    const out = new Float64Array(ids.length).fill(Number.NaN);
    const slab = this.slab(dim);
    const m = this.entries.get(index);
    const slots: number[] = [],
      at: number[] = [],
      transient: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const e = m?.get(ids[i]);
      if (e && e.slab === slab) {
        e.used = ++this.clock;
        slots.push(e.slot);
        at.push(i);
        continue;
      }
      const v = beside?.get(ids[i]);
      if (!v || v.length !== dim) continue;
      // Not kept (over the budget, or none): a slot for this call only.
      const slot = slab.alloc();
      slab.write(slot, v);
      transient.push(slot);
      slots.push(slot);
      at.push(i);
    }
    const cos = new Float64Array(slots.length);
    slab.cosines(unit, slots, slots.length, cos);
    for (let j = 0; j < at.length; j++) out[at[j]] = cos[j];
    for (const slot of transient) slab.release(slot);
    return out;
  }

  /** Forget rows (their video was re-indexed or deleted). */
  drop(index: string, rowIds: Iterable<number>): void {
    const m = this.entries.get(index);
    if (!m) return;
    for (const id of rowIds) {
      const e = m.get(id);
      if (!e) continue;
      m.delete(id);
      this.forget(e);
    }
  }

  /** Forget every row and let their memory go (an idle server; rescoring reads rows from SQLite again). */
  clear(): void {
    this.entries.clear();
    this.slabs = new Map();
    this.bytes = 0;
  }

  private forget(e: Entry): void {
    e.slab.release(e.slot);
    this.bytes -= e.slab.dim * 4;
  }

  /** Down to 3/4 of the budget, least recently used first. */
  private evict(): void {
    const all: { m: Map<number, Entry>; id: number; e: Entry }[] = [];
    for (const m of this.entries.values()) for (const [id, e] of m) all.push({ m, id, e });
    all.sort((a, b) => a.e.used - b.e.used);
    const target = this.budgetBytes * 0.75;
    for (const x of all) {
      if (this.bytes <= target) break;
      x.m.delete(x.id);
      this.forget(x.e);
    }
  }
}
