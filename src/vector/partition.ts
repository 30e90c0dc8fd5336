/**
 * One partition (account): its rows are packed densely into slots 0..n-1 spread over chunk
 * blocks; removal moves the last row into the hole, so scans never walk dead rows and the
 * partition's memory shrinks with it. Group values (collection, video) are mapped to small
 * dense ids so a filter becomes a lookup table indexed per row (see buildMask).
 */
import { DEFAULT_CHUNK_ROWS } from "./layout.ts";

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

  /** The value of a dense id. */
  valueOf(id: number): number {
    return this.values[id];
  }

  /** The table as plain arrays (snapshot.ts). */
  toTable(): { values: number[]; counts: number[] } {
    return { values: [...this.values], counts: [...this.counts] };
  }

  /** Replaces the table with one `toTable` gave (ids with no rows become free again). */
  restoreTable(t: { values: number[]; counts: number[] }): void {
    if (t.values.length !== t.counts.length) throw new RangeError("group table sizes differ");
    this.byValue.clear();
    this.values.length = this.counts.length = this.free.length = 0;
    for (let id = 0; id < t.values.length; id++) {
      this.values[id] = t.values[id];
      this.counts[id] = t.counts[id];
      if (t.counts[id] > 0) this.byValue.set(t.values[id], id);
      else this.free.push(id);
    }
  }
}

/**
 * One inverted list of a partition: its chunks (chunk numbers of the partition) in order, all
 * full but the last, and its rows packed densely in them (position i ↦ chunk chunks[i >> chunkShift],
 * row i & (chunkRows − 1)).
 */
export class List {
  readonly chunks: number[] = [];
  n = 0;
  /**
   * Scan blocks reserved for this list's next chunks, highest address first (pop() gives the
   * next in address order): reserving them in extents keeps the list's codes in long contiguous
   * runs for the scan. A chunk freed by shrinking goes back here.
   */
  readonly scanStash: number[] = [];
  /** Rows per dense collection id (groupA): lets a collection filter probe lists by what they hold. */
  countA = new Int32Array(0);

  addA(id: number, delta: number): void {
    if (id >= this.countA.length) {
      const grown = new Int32Array(Math.max(8, id + 1, this.countA.length * 2));
      grown.set(this.countA);
      this.countA = grown;
    }
    this.countA[id] += delta;
  }
}

/**
 * Trained inverted-list state of a partition: unit centroids in the rotated, centred space of the
 * codes, two levels (coarse groups, each with a contiguous range of fine centroids = lists), kept
 * as i16 in the arena (scaled per centroid) for dots4.
 */
export interface Centroids {
  /** Fine centroids = lists. */
  count: number;
  groups: number;
  /** Fine centroids of group g: groupStart[g] … groupStart[g + 1] − 1. */
  groupStart: Int32Array;
  /** 7.5 · Σ_j c16_j and 1 / scale per centroid (fine, coarse). */
  sum16: Float32Array;
  invScale: Float32Array;
  coarseSum16: Float32Array;
  coarseInvScale: Float32Array;
  /** Arena offsets: fine i16 (count × padDim), coarse i16, dots4 output; one run. */
  at: number;
  coarseAt: number;
  sumsAt: number;
  run: number;
  runBytes: number;
  /** Partition size when trained (retraining is due after it grew retrainGrowth-fold). */
  trainedAt: number;
  /** The lists' skew (rows.ts listSkew) when the retrain that made them ended; not in snapshots. */
  skew?: number;
}

export class Partition {
  /** Block offsets per chunk number (−1: chunk number free); slot s is chunk s >> chunkShift, row s & (chunkRows − 1). */
  scanBlocks: number[] = [];
  sideBlocks: number[] = [];
  /** List of each chunk number. */
  chunkList: number[] = [];
  freeChunks: number[] = [];
  /** One list until trained (then its rows are in slot order 0..n−1, as before lists existed). */
  lists: List[] = [new List()];
  centroids: Centroids | null = null;
  /**
   * While a retrain moves rows into new lists (rows.ts): the new centroids, and where their lists
   * start in `lists` (the old lists come first and only shrink). Adds go to the new lists; a
   * search reads every list (centroids is null meanwhile) until the swap.
   */
  target: { cent: Centroids; base: number } | null = null;
  /**
   * While a compaction copies this partition into a fresh memory between event-loop turns
   * (compact.ts): the chunk numbers whose blocks were written, created or freed since it began,
   * copied again (or dropped) when it switches over. Every write to a chunk's blocks adds to it.
   */
  dirty: Set<number> | null = null;
  n = 0;
  rowIds: Float64Array;
  readonly groupA = new GroupIds();
  readonly groupB = new GroupIds();
  /** Rows per chunk (the layout's) and its log2. */
  readonly chunkShift: number;

  constructor(
    readonly id: number,
    readonly name: string,
    readonly chunkRows: number = DEFAULT_CHUNK_ROWS,
  ) {
    this.chunkShift = Math.log2(chunkRows);
    this.rowIds = new Float64Array(chunkRows);
  }

  /** The slot of position `pos` of list `l`. */
  slotOf(l: List, pos: number): number {
    return (l.chunks[pos >> this.chunkShift] << this.chunkShift) | (pos & (this.chunkRows - 1));
  }

  /** A chunk number for a new chunk of list `li` (the blocks are set by the caller). */
  newChunk(li: number): number {
    const c = this.freeChunks.pop() ?? this.scanBlocks.length;
    this.chunkList[c] = li;
    this.lists[li].chunks.push(c);
    return c;
  }

  setRowId(slot: number, rowId: number): void {
    if (slot >= this.rowIds.length) {
      // 1.25× growth: doubling left up to 8 B a row unused (rowIds are 8 of the ~190 B a row).
      const grown = new Float64Array(
        Math.max(Math.ceil((this.rowIds.length * 1.25) / this.chunkRows) * this.chunkRows, slot + this.chunkRows),
      );
      grown.set(this.rowIds);
      this.rowIds = grown;
    }
    this.rowIds[slot] = rowId;
  }

  /** Gives back rowId storage after the partition's chunk numbers shrank to a quarter of it. */
  shrinkRowIds(): void {
    let top = 0;
    for (let c = this.scanBlocks.length - 1; c >= 0; c--) {
      if (this.scanBlocks[c] >= 0) {
        top = (c + 1) * this.chunkRows;
        break;
      }
    }
    if (this.rowIds.length > 4 * this.chunkRows && top * 4 < this.rowIds.length) {
      this.rowIds = this.rowIds.slice(0, Math.max(this.chunkRows, top * 2));
    }
  }
}
