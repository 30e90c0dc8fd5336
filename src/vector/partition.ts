/**
 * One partition (account): its rows are packed densely into slots 0..n-1 spread over chunk
 * blocks; removal moves the last row into the hole, so scans never walk dead rows and the
 * partition's memory shrinks with it. Group values (collection, video) are mapped to small
 * dense ids so a filter becomes a lookup table indexed per row (see buildMask).
 */
import { CHUNK_ROWS } from "./layout.ts";

/** value ↔ dense id with reference counts; ids of groups that lost all rows are reused. */
export class GroupIds {
  private readonly byValue = new Map<number, number>();
  private readonly values: number[] = [];
  private readonly counts: number[] = [];
  private readonly free: number[] = [];

  acquire(value: number): number {
    let id = this.byValue.get(value);
    if (id === undefined) {
      id = this.free.pop() ?? this.values.length;
      this.byValue.set(value, id);
      this.values[id] = value;
      this.counts[id] = 0;
    }
    this.counts[id]++;
    return id;
  }

  release(id: number): void {
    if (--this.counts[id] === 0) {
      this.byValue.delete(this.values[id]);
      this.free.push(id);
    }
  }

  lookup(value: number): number | undefined {
    return this.byValue.get(value);
  }

  /** Upper bound of dense ids in use (table length for a filter). */
  get span(): number {
    return this.values.length;
  }

  rowCount(id: number): number {
    return this.counts[id] ?? 0;
  }
}

export class Partition {
  /** Block offsets per chunk; slot s is in chunk s >> CHUNK_SHIFT. */
  readonly scanBlocks: number[] = [];
  readonly sideBlocks: number[] = [];
  /**
   * Scan blocks reserved for this partition's next chunks, highest address first (pop() gives
   * the next in address order): reserving them in extents keeps the partition's codes in long
   * contiguous runs for the scan. A chunk freed by shrinking goes back here.
   */
  readonly scanStash: number[] = [];
  n = 0;
  rowIds = new Float64Array(CHUNK_ROWS);
  readonly groupA = new GroupIds();
  readonly groupB = new GroupIds();

  constructor(
    readonly id: number,
    readonly name: string,
  ) {}

  get capacity(): number {
    return this.scanBlocks.length * CHUNK_ROWS;
  }

  setRowId(slot: number, rowId: number): void {
    if (slot >= this.rowIds.length) {
      const grown = new Float64Array(Math.max(this.rowIds.length * 2, slot + 1));
      grown.set(this.rowIds);
      this.rowIds = grown;
    }
    this.rowIds[slot] = rowId;
  }

  /** Gives back rowId storage after the partition shrank to a quarter of it. */
  shrinkRowIds(): void {
    if (this.rowIds.length > 4 * CHUNK_ROWS && this.n * 4 < this.rowIds.length) {
      this.rowIds = this.rowIds.slice(0, Math.max(CHUNK_ROWS, this.n * 2));
    }
  }
}
