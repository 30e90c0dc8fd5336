/**
 * Where rows live: partitions of encoded rows in the arena, the rowId → (partition, slot) map,
 * and the data centre (given, or learned from the first rows).
 */
import type { Arena } from "./arena.ts";
import type { Encoder } from "./encode.ts";
import { IdMap } from "./id-map.ts";
import { CHUNK_ROWS, CHUNK_SHIFT, type Layout } from "./layout.ts";
import { Partition } from "./partition.ts";
import type { VectorRow } from "./types.ts";

/** Largest scan-block extent (64 × 8 KiB for 512 dims). */
const MAX_EXTENT = 64;

export class RowStore {
  private readonly ids = new IdMap();
  private readonly partitions = new Map<string, Partition>();
  private readonly partById: (Partition | undefined)[] = [];
  private readonly freePartIds: number[] = [];
  private centerValue: Float32Array | null = null;
  /** Rows kept (normalised) until the centre is learned, then re-encoded and dropped. */
  private centerSample: Map<number, Float32Array> | null = null;

  constructor(
    readonly layout: Layout,
    private readonly arena: Arena,
    private readonly encoder: Encoder,
    center: Float32Array | undefined,
    private readonly centerTarget: number,
  ) {
    if (center) {
      if (center.length !== layout.dim) throw new RangeError(`center has ${center.length} dims, expected ${layout.dim}`);
      this.centerValue = Float32Array.from(center);
      this.encoder.setCenter(this.centerValue);
    } else {
      this.centerSample = new Map();
    }
  }

  get size(): number {
    return this.ids.size;
  }

  get center(): Float32Array | null {
    return this.centerValue;
  }

  /** JS-side bytes (the arena is counted by its owner). */
  get jsBytes(): number {
    let bytes = this.ids.byteLength;
    for (const p of this.partitions.values()) bytes += p.rowIds.byteLength;
    if (this.centerSample) bytes += this.centerSample.size * this.layout.dim * 4;
    return bytes;
  }

  partition(name: string): Partition | undefined {
    return this.partitions.get(name);
  }

  has(rowId: number): boolean {
    return this.ids.find(rowId) >= 0;
  }

  /** The slot of `rowId` if it lives in partition `p`. */
  slotIn(p: Partition, rowId: number): number | undefined {
    const b = this.ids.find(rowId);
    return b >= 0 && this.ids.partAt(b) === p.id ? this.ids.slotAt(b) : undefined;
  }

  /** Changes with every add and remove (a search may reuse work only while it is unchanged). */
  get version(): number {
    return this.mutations;
  }
  private mutations = 0;

  add(rows: readonly VectorRow[]): void {
    this.mutations++;
    for (const row of rows) this.checkRow(row);
    for (const row of rows) {
      if (this.ids.find(row.rowId) >= 0) this.removeOne(row.rowId);
      this.addOne(row);
      // Learned as soon as the sample is full, so a huge first batch is not held as floats.
      if (this.centerSample && this.centerSample.size >= this.centerTarget) this.learnCenter();
    }
  }

  remove(rowIds: Iterable<number>): number {
    this.mutations++;
    let removed = 0;
    for (const rowId of rowIds) if (this.removeOne(rowId)) removed++;
    return removed;
  }

  private checkRow(row: VectorRow): void {
    const dim = this.layout.dim;
    if (!Number.isSafeInteger(row.rowId)) throw new RangeError(`rowId must be a safe integer, got ${row.rowId}`);
    if (!(row.vector instanceof Float32Array) || row.vector.length !== dim) {
      throw new RangeError(`row ${row.rowId}: vector must be a Float32Array of ${dim}`);
    }
    let s = 0;
    for (let j = 0; j < dim; j++) s += row.vector[j] * row.vector[j];
    if (!Number.isFinite(s)) throw new RangeError(`row ${row.rowId}: vector has non-finite values`);
    if (typeof row.partition !== "string") throw new RangeError(`row ${row.rowId}: partition must be a string`);
    if (!Number.isFinite(row.groupA) || !Number.isFinite(row.groupB)) throw new RangeError(`row ${row.rowId}: groups must be numbers`);
  }

  private partitionFor(name: string): Partition {
    let p = this.partitions.get(name);
    if (!p) {
      const id = this.freePartIds.pop() ?? this.partById.length;
      p = new Partition(id, name);
      this.partitions.set(name, p);
      this.partById[id] = p;
    }
    return p;
  }

  private addOne(row: VectorRow): void {
    const L = this.layout, a = this.arena;
    const p = this.partitionFor(row.partition);
    const slot = p.n;
    if (slot === p.capacity) {
      p.scanBlocks.push(this.takeScanBlock(p));
      p.sideBlocks.push(a.allocBlock(L.sideBlockBytes));
    }
    const c = slot >> CHUNK_SHIFT, r = slot & (CHUNK_ROWS - 1);
    const side = p.sideBlocks[c];
    this.encoder.encodeRow(row.vector, a, p.scanBlocks[c], side, r);
    a.i32[(side + L.offGroupA) / 4 + r] = p.groupA.acquire(row.groupA);
    a.i32[(side + L.offGroupB) / 4 + r] = p.groupB.acquire(row.groupB);
    p.setRowId(slot, row.rowId);
    p.n++;
    this.ids.set(row.rowId, p.id, slot);
    if (this.centerSample) {
      const v = Float32Array.from(row.vector);
      let s = 0;
      for (let j = 0; j < v.length; j++) s += v[j] * v[j];
      const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
      for (let j = 0; j < v.length; j++) v[j] *= inv;
      this.centerSample.set(row.rowId, v);
    }
  }

  /**
   * The next scan block for a partition: its stash, else a free block (memory reuse wins over
   * contiguity), else a new extent of ~1/4 of its current chunk count (1..MAX_EXTENT) whose
   * rest goes to the stash. Extents keep a partition's codes in long runs for the scan.
   */
  private takeScanBlock(p: Partition): number {
    const bytes = this.layout.scanBlockBytes;
    const stashed = p.scanStash.pop() ?? this.arena.takeFree(bytes);
    if (stashed !== undefined) return stashed;
    const count = Math.min(MAX_EXTENT, Math.max(1, p.scanBlocks.length >> 2));
    const first = this.arena.allocContiguous(bytes, count);
    for (let i = count - 1; i >= 1; i--) p.scanStash.push(first + i * bytes);
    return first;
  }

  /** Mean of the sampled rows becomes the centre; those rows (all rows so far) are re-encoded. */
  private learnCenter(): void {
    const sample = this.centerSample!;
    const dim = this.layout.dim;
    const center = new Float32Array(dim);
    for (const v of sample.values()) for (let j = 0; j < dim; j++) center[j] += v[j];
    for (let j = 0; j < dim; j++) center[j] /= sample.size;
    this.centerValue = center;
    this.centerSample = null;
    this.encoder.setCenter(center);
    for (const [rowId, v] of sample) {
      const b = this.ids.find(rowId);
      const p = this.partById[this.ids.partAt(b)]!;
      const slot = this.ids.slotAt(b);
      const chunk = slot >> CHUNK_SHIFT;
      this.encoder.encodeRow(v, this.arena, p.scanBlocks[chunk], p.sideBlocks[chunk], slot & (CHUNK_ROWS - 1));
    }
  }

  private removeOne(rowId: number): boolean {
    const b = this.ids.find(rowId);
    if (b < 0) return false;
    const L = this.layout, a = this.arena;
    const p = this.partById[this.ids.partAt(b)]!;
    const slot = this.ids.slotAt(b);
    this.ids.delete(rowId);
    this.centerSample?.delete(rowId);
    const c = slot >> CHUNK_SHIFT, r = slot & (CHUNK_ROWS - 1);
    p.groupA.release(a.i32[(p.sideBlocks[c] + L.offGroupA) / 4 + r]);
    p.groupB.release(a.i32[(p.sideBlocks[c] + L.offGroupB) / 4 + r]);
    const last = p.n - 1;
    const lc = last >> CHUNK_SHIFT, lr = last & (CHUNK_ROWS - 1);
    if (slot !== last) {
      // Keep the partition dense (scans never walk holes): the last row moves into the hole.
      const u8 = a.u8;
      const col = (blocks: number[], off: number, bytes: number) => {
        const from = blocks[lc] + off + lr * bytes;
        u8.copyWithin(blocks[c] + off + r * bytes, from, from + bytes);
      };
      col(p.scanBlocks, L.offCodes, L.codeBytes);
      col(p.scanBlocks, L.offFactor, 2);
      col(p.sideBlocks, L.offRefine, L.refineBytes);
      col(p.sideBlocks, L.offScale, 4);
      col(p.sideBlocks, L.offGroupA, 4);
      col(p.sideBlocks, L.offGroupB, 4);
      const movedId = p.rowIds[last];
      p.rowIds[slot] = movedId;
      this.ids.setSlotAt(this.ids.find(movedId), slot);
    }
    p.n = last;
    if (p.n <= p.capacity - CHUNK_ROWS) {
      p.scanStash.push(p.scanBlocks.pop()!);
      this.arena.freeBlock(p.sideBlocks.pop()!, L.sideBlockBytes);
    }
    if (p.n === 0) {
      for (const blk of p.scanStash) this.arena.freeBlock(blk, L.scanBlockBytes);
      this.partitions.delete(p.name);
      this.partById[p.id] = undefined;
      this.freePartIds.push(p.id);
    } else {
      p.shrinkRowIds();
    }
    return true;
  }
}
