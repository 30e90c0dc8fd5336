/**
 * Kept hand-written, not `lru-cache`: on search's access pattern it is measurably faster
 * (bench/cache-bench.ts, 3000 rows of 512-d per query: a hit 72 ns vs 559 ns, a miss + set +
 * eviction 1.7 µs vs 2.4 µs; BENCHMARKS.md). A repeated query rescores thousands of rows, so the
 * library would add ~1.5 ms to it; it wins on nested maps with numeric row ids (no key string per
 * row) and a use stamp instead of reordering on every hit.
 *
 * Exact vectors recently read for rescoring, kept up to a byte budget. A search rescores a few
 * hundred to a few thousand rows by exact cosine, each read by id from SQLite (~2.7 µs a row even
 * from the page cache: B-tree walk plus a 2 KiB copy); queries about the same content keep
 * rescoring the same rows, and a repeated query (the next page, a dashboard refresh, an agent
 * retrying) rescores exactly the same ones.
 *
 * Recency is a use stamp per entry (no per-hit reordering); past the budget, the least recently
 * used quarter is dropped at once. Entries are keyed per index (model + kind: frames and shots
 * number their rows separately) and dropped by the owner when their rows change (a video
 * re-indexed or deleted): SQLite may give a deleted row's id to a new row, so a stale entry would
 * otherwise answer for it.
 */
interface Entry {
  vector: Float32Array;
  used: number;
}

export class ExactVectorCache {
  private readonly entries = new Map<string, Map<number, Entry>>();
  private bytes = 0;
  private clock = 0;

  constructor(readonly budgetBytes: number) {}

  get sizeBytes(): number {
    return this.bytes;
  }

  get(index: string, rowId: number): Float32Array | undefined {
    const e = this.entries.get(index)?.get(rowId);
    if (!e) return undefined;
    e.used = ++this.clock;
    return e.vector;
  }

  /** `get` for many rows: out[i] = the vector of ids[i]; returns the positions it has none for. */
  getInto(index: string, ids: readonly number[], out: (Float32Array | undefined)[]): number[] {
    const m = this.entries.get(index);
    const missing: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const e = m?.get(ids[i]);
      if (e) {
        e.used = ++this.clock;
        out[i] = e.vector;
      } else missing.push(i);
    }
    return missing;
  }

  set(index: string, rowId: number, vector: Float32Array): void {
    if (this.budgetBytes <= 0 || vector.byteLength > this.budgetBytes) return;
    let m = this.entries.get(index);
    if (!m) this.entries.set(index, (m = new Map()));
    const old = m.get(rowId);
    if (old) this.bytes -= old.vector.byteLength;
    m.set(rowId, { vector, used: ++this.clock });
    this.bytes += vector.byteLength;
    if (this.bytes > this.budgetBytes) this.evict();
  }

  /** Forget rows (their video was re-indexed or deleted). */
  drop(index: string, rowIds: Iterable<number>): void {
    const m = this.entries.get(index);
    if (!m) return;
    for (const id of rowIds) {
      const e = m.get(id);
      if (!e) continue;
      m.delete(id);
      this.bytes -= e.vector.byteLength;
    }
  }

  /** Forget every row (an idle server lets the cache go; rescoring reads rows from SQLite again). */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
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
      this.bytes -= x.e.vector.byteLength;
    }
  }
}
