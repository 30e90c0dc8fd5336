/**
 * Where rows live: partitions of encoded rows in the arena, grouped into inverted lists once a
 * partition is large enough (lists.ts), the rowId → (partition, slot) map, and the data centre
 * (given, or learned from the first rows).
 *
 * Over the house's ~450 lines (~600) on purpose: every path that moves a row between slots (add,
 * remove's hole filling, the retrain's moves, the centre's re-encode) must keep the scan block,
 * the side block and the id map in step — and, while a compaction copies the partition
 * (compact.ts), mark the chunk it wrote (`p.dirty`) — and they read best side by side in one
 * class (the byte copy itself is layout.ts copyRow, beside the column list it mirrors); the
 * snapshot restore (snapshot.ts) registers its partitions through the same id map. Seams
 * looked at and not taken: the retrain generator reads the class's private state throughout; the
 * memory reports (jsBytes, breakdown, liveArenaBytes, ~35 lines) would need the id map and the
 * centre sample exposed to move out, for no reader's gain.
 */
import type { Arena } from "./arena.ts";
import { partitionLiveBytes } from "./compact.ts";
import type { Encoder } from "./encode.ts";
import { IdMap } from "./id-map.ts";
import { copyRow, type Layout } from "./layout.ts";
import { freeCentroids, listScores, listsFor, nearestList, trainCentroids } from "./lists.ts";
import { List, Partition, type Centroids } from "./partition.ts";
import type { VectorRow } from "./types.ts";
import { Retrainer } from "./retrain.ts";
import type { Kernels } from "./wasm/kernels.ts";

/** When and how partitions get inverted lists (VectorIndexOptions.lists / trainAt / retrainGrowth). */
export interface ListPolicy {
  /** Fixed list count, or 0 for "listsFor(n)" at each training. */
  lists: number;
  /** Rows a partition needs before it is split into lists (Infinity: never). */
  trainAt: number;
  /** Retrain (and reassign every row) once the partition grew this many times since the last training. */
  retrainGrowth: number;
}

/** Largest scan-block extent, in rows (64 chunks of 128 rows, 8 KiB each for 512 dims). */
const MAX_EXTENT_ROWS = 8192;
/** Rows moved between the steps of a retrain. */
const STEP_ROWS = 256;

export class RowStore {
  /** rowId → (partition, slot); keys are read back from the partitions' rowIds. */
  private readonly ids = new IdMap((part, slot) => this.partById[part]!.rowIds[slot]);
  private readonly partitions = new Map<string, Partition>();
  private readonly partById: (Partition | undefined)[] = [];
  private readonly freePartIds: number[] = [];
  private centerValue: Float32Array | null = null;
  /** Rows kept (normalised) until the centre is learned, then re-encoded and dropped. */
  private centerSample: Map<number, Float32Array> | null = null;
  /** Retrains under way (step generators, see retrain), run a slice per event-loop turn. */
  readonly retrains = new Retrainer<Partition>(() => {
    this.mutations++;
    if (this.retrains.stats.pending === 0) this.onRetrainsIdle?.();
  });
  /** Called once no retrain is under way any more (the index then considers compacting). */
  onRetrainsIdle: (() => void) | null = null;

  /** One chunk's scan + side blocks where rows of a trained partition are encoded before their list is known. */
  private stageScan: number;
  private stageSide: number;
  /** One row's codes as 4-bit nibbles (list assignment and scoring read rows that way; lists.ts). */
  private nibbleAt: number;

  constructor(
    readonly layout: Layout,
    private readonly arena: Arena,
    private readonly encoder: Encoder,
    private readonly kernels: Kernels,
    center: Float32Array | undefined,
    private readonly centerTarget: number,
    private readonly policy: ListPolicy,
  ) {
    this.stageScan = arena.allocBlock(layout.scanBlockBytes);
    this.stageSide = arena.allocBlock(layout.sideBlockBytes);
    this.nibbleAt = arena.allocRun(layout.nibbleBytes).off;
    if (center) {
      if (center.length !== layout.dim)
        throw new RangeError(`center has ${center.length} dims, expected ${layout.dim}`);
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
    for (const p of this.partitions.values()) {
      bytes += p.rowIds.byteLength + (p.centroids ? p.centroids.count * 8 + p.centroids.groups * 12 : 0);
      for (const l of p.lists) bytes += l.countA.byteLength + 8 * (l.chunks.length + l.scanStash.length) + 64;
      bytes += 8 * (p.scanBlocks.length * 3);
    }
    if (this.centerSample) bytes += this.centerSample.size * this.layout.dim * 4;
    return bytes;
  }

  /** Where the bytes go (benches): live chunks' blocks, reserved scan blocks, row slots vs rows. */
  get breakdown(): {
    rows: number;
    chunkRows: number;
    chunks: number;
    stashBlocks: number;
    scanBytes: number;
    sideBytes: number;
    idMapBytes: number;
    rowIdBytes: number;
  } {
    let chunks = 0,
      stash = 0,
      rowIdBytes = 0;
    for (const p of this.partitions.values()) {
      for (const b of p.scanBlocks) if (b >= 0) chunks++;
      for (const l of p.lists) stash += l.scanStash.length;
      rowIdBytes += p.rowIds.byteLength;
    }
    const L = this.layout;
    return {
      rows: this.size,
      chunkRows: L.chunkRows,
      chunks,
      stashBlocks: stash,
      scanBytes: chunks * L.scanBlockBytes,
      sideBytes: chunks * L.sideBlockBytes,
      idMapBytes: this.ids.byteLength,
      rowIdBytes,
    };
  }

  /** Arena bytes that compaction keeps: the staging blocks, the nibble scratch, every partition's live blocks and centroids. */
  get liveArenaBytes(): number {
    const L = this.layout;
    let bytes = L.scanBlockBytes + L.sideBlockBytes + Math.ceil(L.nibbleBytes / 65536) * 65536;
    for (const p of this.partitions.values()) bytes += partitionLiveBytes(L, p);
    return bytes;
  }

  /** Partitions holding rows now (compaction walks them). */
  get allPartitions(): Partition[] {
    return [...this.partitions.values()];
  }

  /** Whether `p` is still a live partition of this store (a partition emptied is dropped). */
  holds(p: Partition): boolean {
    return this.partitions.get(p.name) === p;
  }

  /**
   * Compaction (compact.ts): the staging blocks and nibble scratch in `fresh` (per-row scratch:
   * nothing to copy), and the step that points this store at them.
   */
  relocateScratch(fresh: Arena): () => void {
    const L = this.layout;
    const stageScan = fresh.allocBlock(L.scanBlockBytes),
      stageSide = fresh.allocBlock(L.sideBlockBytes);
    const nibbleAt = fresh.allocRun(L.nibbleBytes).off;
    return () => {
      this.stageScan = stageScan;
      this.stageSide = stageSide;
      this.nibbleAt = nibbleAt;
    };
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

  /** Every row: its id, partition and group values (a snapshot's loader rebuilds its caller's tables from them). */
  forEachRow(fn: (rowId: number, partition: string, groupA: number, groupB: number) => void): void {
    const L = this.layout;
    for (const p of this.partitions.values()) {
      for (const l of p.lists) {
        for (let pos = 0; pos < l.n; pos++) {
          const slot = p.slotOf(l, pos),
            side = p.sideBlocks[slot >> L.chunkShift],
            r = slot & (L.chunkRows - 1);
          const i32 = this.arena.views().i32;
          fn(
            p.rowIds[slot],
            p.name,
            p.groupA.valueOf(i32[(side + L.offGroupA) / 4 + r]),
            p.groupB.valueOf(i32[(side + L.offGroupB) / 4 + r]),
          );
        }
      }
    }
  }

  /** The rows kept for learning the centre, until it is learned (snapshot.ts saves them). */
  get centerSampleRows(): ReadonlyMap<number, Float32Array> | null {
    return this.centerSample;
  }

  /**
   * Snapshot restore (snapshot.ts): a partition whose blocks are already in this store's arena,
   * built by `build` with the partition number it gets; its rows join the id map.
   */
  adoptPartition(build: (id: number) => Partition): void {
    const id = this.freePartIds.pop() ?? this.partById.length;
    const p = build(id);
    if (this.partitions.has(p.name)) throw new RangeError(`partition ${p.name} exists`);
    this.partitions.set(p.name, p);
    this.partById[id] = p;
    for (const l of p.lists)
      for (let pos = 0; pos < l.n; pos++) {
        const slot = p.slotOf(l, pos);
        if (this.ids.find(p.rowIds[slot]) >= 0) throw new RangeError(`row ${p.rowIds[slot]} is held twice`);
        this.ids.set(p.rowIds[slot], id, slot);
      }
    this.mutations++;
  }

  /** Snapshot restore: the learned centre, or (not learned yet) the rows it will be learned from. */
  restoreCenter(center: Float32Array | null, sample: Map<number, Float32Array> | null): void {
    this.centerValue = center;
    this.centerSample = center ? null : (sample ?? new Map());
    this.encoder.setCenter(center);
  }

  /** Changes with every add and remove (a search may reuse work only while it is unchanged). */
  get version(): number {
    return this.mutations;
  }
  private mutations = 0;

  add(rows: readonly VectorRow[]): void {
    this.mutations++;
    for (const row of rows) this.checkRow(row);
    const touched = new Set<Partition>();
    for (const row of rows) {
      if (this.ids.find(row.rowId) >= 0) this.removeOne(row.rowId);
      touched.add(this.addOne(row));
      // Learned as soon as the sample is full, so a huge first batch is not held as floats.
      if (this.centerSample && this.centerSample.size >= this.centerTarget) this.learnCenter();
    }
    for (const p of touched)
      if (this.partitions.get(p.name) === p && this.trainingDue(p)) this.retrains.start(p, this.retrain(p));
  }

  /**
   * Lists are trained once the centre is known and the partition reached trainAt, then again
   * after retrainGrowth-fold growth, or sooner when the rows added since have piled into a few
   * lists (listsStale).
   */
  private trainingDue(p: Partition): boolean {
    if (!this.centerValue || p.n < this.policy.trainAt || this.retrains.has(p)) return false;
    return !p.centroids || listsStale(p, p.centroids, this.policy.retrainGrowth);
  }

  /**
   * Retrains the partition's lists on its current rows now, synchronously (a retrain already
   * under way is finished first; one only queued is run as this retrain). For tools, benches and
   * tests: `add` starts retrains in the background instead (retrain.ts).
   */
  rebuild(p: Partition): void {
    // A retrain that `add` queued and that has not begun reads the rows only once it runs: it is
    // this rebuild. (Finishing it and then retraining again cost two full retrains: at 1 M rows,
    // 41.6 of the 62.9 s build.)
    const queuedOnly = this.retrains.queuedOnly(p);
    this.retrains.finish(p);
    if (queuedOnly || !this.centerValue || p.n < 2 || this.partitions.get(p.name) !== p) return;
    this.retrains.start(p, this.retrain(p));
    this.retrains.finish(p);
  }

  /**
   * A retrain as a sequence of small steps: centroids trained on a copy of a sample's codes
   * (lists.ts), then every row moved from the old lists into the new ones, STEP_ROWS at a time,
   * then the swap. Rows are moved, never copied, so every row is in exactly one list at all
   * times: a search between steps reads every list (flat) and sees each row once, adds and
   * removes work as usual (adds land in the new lists), and the old lists' blocks are freed as
   * they empty and reused by the new ones — no second copy of the partition (the arena peak is
   * the partition plus one part-filled chunk per list, plus the sample's codes while training).
   */
  private *retrain(p: Partition): Generator<void, void> {
    const L = this.layout,
      a = this.arena;
    const count = this.policy.lists > 0 ? this.policy.lists : listsFor(p.n);
    const cent = yield* trainCentroids(L, a, this.kernels, p, Math.max(2, Math.min(count, p.n >> 4)), (slot, dst) =>
      this.nibbles(p, slot, dst),
    );
    // Each row's new list, by rowId (rows may move or go between steps; searches still probe the old lists).
    const members: number[][] = Array.from({ length: cent.count }, () => []);
    let steps = 0;
    for (let k = 0; k < p.lists.length; k++) {
      for (let pos = 0; pos < p.lists[k].n; pos++) {
        const l = p.lists[k],
          slot = p.slotOf(l, pos);
        members[nearestList(L, a.views(), this.kernels, cent, this.nibbles(p, slot))].push(p.rowIds[slot]);
        if (++steps % STEP_ROWS === 0) yield;
      }
    }
    // The new lists' scan blocks in one run, list after list, reserved in their stashes: the scan
    // streams through neighbouring lists (scattered 8 KiB blocks made the flat scan of 200 k rows
    // ~2× slower). Side blocks are taken from the old lists' as those empty.
    const base = p.lists.length;
    let total = 0;
    for (const m of members) total += Math.ceil(m.length / this.layout.chunkRows);
    const run = a.allocContiguous(L.scanBlockBytes, total);
    for (let k = 0, at = 0; k < cent.count; k++) {
      const l = new List(),
        blocks = Math.ceil(members[k].length / this.layout.chunkRows);
      for (let j = blocks - 1; j >= 0; j--) l.scanStash.push(run + (at + j) * L.scanBlockBytes);
      at += blocks;
      p.lists.push(l);
    }
    if (p.centroids) freeCentroids(a, p.centroids);
    p.centroids = null;
    p.target = { cent, base };
    this.mutations++;
    yield;
    for (let k = 0; k < cent.count; k++) {
      for (const rowId of members[k]) {
        const b = this.ids.find(rowId);
        // Gone, replaced (re-added rows land in the new lists), or already moved: nothing to do.
        if (b < 0 || this.ids.partAt(b) !== p.id) continue;
        const slot = this.ids.slotAt(b);
        if (p.chunkList[slot >> this.layout.chunkShift] >= base) continue;
        this.moveRow(p, slot, base + k);
        if (++steps % STEP_ROWS === 0) {
          this.mutations++;
          yield;
        }
      }
      members[k] = [];
    }
    // Rows the assignment walk missed (added before the new lists took adds, or moved under it).
    for (let k = 0; k < base; k++) {
      const l = p.lists[k];
      while (l.n > 0) {
        const slot = p.slotOf(l, l.n - 1);
        this.moveRow(p, slot, base + nearestList(L, a.views(), this.kernels, cent, this.nibbles(p, slot)));
        if (++steps % STEP_ROWS === 0) {
          this.mutations++;
          yield;
        }
      }
    }
    // The swap: only the new lists remain, renumbered from 0.
    for (let k = 0; k < base; k++) for (const blk of p.lists[k].scanStash) a.freeBlock(blk, L.scanBlockBytes);
    p.lists = p.lists.slice(base);
    for (let c = 0; c < p.chunkList.length; c++) if (p.scanBlocks[c] >= 0) p.chunkList[c] -= base;
    p.centroids = cent;
    p.target = null;
    this.mutations++;
    // Rows added while this ran (a whole account loading during its first training) may already
    // make the next retrain due; no later `add` might come to start it.
    // At most 1.5 × STALE_SKEW as the next bound: rows an account's loader added while this ran
    // went into lists trained without them, and must not raise the bound without limit.
    cent.skew = Math.min(listSkew(p), STALE_SKEW);
    if (listsStale(p, cent, this.policy.retrainGrowth)) {
      this.retrains.stats.retrains++;
      yield* this.retrain(p);
    }
  }

  /**
   * Moves the row at `slot` (in an old list) to the end of list `li`; the old list's last row
   * fills the hole, as in removeOne, and its emptied last chunk goes back to the arena.
   */
  private moveRow(p: Partition, slot: number, li: number): void {
    const L = this.layout;
    const c = slot >> this.layout.chunkShift,
      r = slot & (this.layout.chunkRows - 1);
    const l = p.lists[p.chunkList[c]],
      dst = p.lists[li];
    if (dst.n === dst.chunks.length * this.layout.chunkRows) this.appendChunk(p, li);
    const to = p.slotOf(dst, dst.n);
    const nc = to >> this.layout.chunkShift,
      nr = to & (this.layout.chunkRows - 1);
    const a = this.arena.views();
    copyRow(this.layout, this.arena.u8, p.scanBlocks[c], p.sideBlocks[c], r, p.scanBlocks[nc], p.sideBlocks[nc], nr);
    p.dirty?.add(nc);
    const gA = a.i32[(p.sideBlocks[c] + L.offGroupA) / 4 + r];
    dst.addA(gA, 1);
    l.addA(gA, -1);
    const rowId = p.rowIds[slot];
    p.setRowId(to, rowId);
    this.ids.setSlotAt(this.ids.find(rowId), to);
    dst.n++;
    this.fillHole(p, l, slot);
    if (l.n <= (l.chunks.length - 1) * this.layout.chunkRows) {
      // The old list's emptied chunk goes straight back to the arena, for the new lists to take.
      const freed = l.chunks.pop()!;
      p.dirty?.add(freed);
      this.arena.freeBlock(p.scanBlocks[freed], L.scanBlockBytes);
      this.arena.freeBlock(p.sideBlocks[freed], L.sideBlockBytes);
      p.scanBlocks[freed] = -1;
      p.sideBlocks[freed] = -1;
      p.freeChunks.push(freed);
    }
  }

  /** A new chunk at the end of list `li`. */
  private appendChunk(p: Partition, li: number): void {
    const L = this.layout;
    const blk = this.takeScanBlock(p.lists[li]),
      sideBlk = this.arena.allocBlock(L.sideBlockBytes);
    // The filter kernel (buildMask) looks every row of a chunk up in the group tables, the rows
    // past the list's end too: their group ids must be small. A reused block may hold anything (a
    // freed scratch run is cut into blocks), so the group columns start at 0.
    this.arena.views().u8.fill(0, sideBlk + L.offGroupA, sideBlk + L.sideBlockBytes);
    const c = p.newChunk(li);
    p.dirty?.add(c);
    p.scanBlocks[c] = blk;
    p.sideBlocks[c] = sideBlk;
  }

  /**
   * Scores of every list of a trained partition for a query: the query is encoded like a row
   * (normalised, rotated, centred, 4-bit whatever the layout's refineBits) into the nibble scratch and dotted with the
   * fine centroids in WebAssembly (~40 ns a list).
   */
  listScores(p: Partition, query: Float32Array, out: Float32Array): void {
    this.encoder.encodeNibbles(query, this.arena.views().u8, this.nibbleAt);
    listScores(this.arena, this.kernels, p.centroids!, this.nibbleAt, out);
  }

  /** The row at `slot` as 4-bit nibbles (what list assignment and training read) at `dst` (default: the scratch at nibbleAt); returns dst. */
  private nibbles(p: Partition, slot: number, dst = this.nibbleAt): number {
    const c = slot >> this.layout.chunkShift;
    this.encoder.nibblesOf(
      this.arena.views().u8,
      p.scanBlocks[c],
      p.sideBlocks[c],
      slot & (this.layout.chunkRows - 1),
      dst,
    );
    return dst;
  }

  /**
   * Takes the row at `slot` out of list `l`, keeping the list dense (scans never walk holes):
   * the list's last row moves into the hole and the list is one shorter. Its chunks are the
   * caller's to give back.
   */
  private fillHole(p: Partition, l: List, slot: number): void {
    const last = p.slotOf(l, l.n - 1);
    if (slot !== last) {
      const lc = last >> this.layout.chunkShift,
        c = slot >> this.layout.chunkShift;
      copyRow(
        this.layout,
        this.arena.u8,
        p.scanBlocks[lc],
        p.sideBlocks[lc],
        last & (this.layout.chunkRows - 1),
        p.scanBlocks[c],
        p.sideBlocks[c],
        slot & (this.layout.chunkRows - 1),
      );
      p.dirty?.add(c);
      const movedId = p.rowIds[last];
      p.rowIds[slot] = movedId;
      this.ids.setSlotAt(this.ids.find(movedId), slot);
    }
    l.n--;
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
    if (!Number.isFinite(row.groupA) || !Number.isFinite(row.groupB))
      throw new RangeError(`row ${row.rowId}: groups must be numbers`);
  }

  private partitionFor(name: string): Partition {
    let p = this.partitions.get(name);
    if (!p) {
      const id = this.freePartIds.pop() ?? this.partById.length;
      p = new Partition(id, name, this.layout.chunkRows);
      this.partitions.set(name, p);
      this.partById[id] = p;
    }
    return p;
  }

  private addOne(row: VectorRow): Partition {
    const L = this.layout,
      a = this.arena;
    const p = this.partitionFor(row.partition);
    let li = 0;
    let scan: number, side: number, r: number;
    // During a retrain's move (p.target) rows go to the new lists.
    const cent = p.target?.cent ?? p.centroids;
    if (cent) {
      // Encoded first into the staging chunk: its codes (as nibbles) pick the list.
      this.encoder.encodeRow(row.vector, a.views(), this.stageScan, this.stageSide, 0);
      this.encoder.nibblesOf(a.u8, this.stageScan, this.stageSide, 0, this.nibbleAt);
      li = (p.target?.base ?? 0) + nearestList(L, a, this.kernels, cent, this.nibbleAt);
    }
    const l = p.lists[li];
    if (l.n === l.chunks.length * this.layout.chunkRows) this.appendChunk(p, li);
    const slot = p.slotOf(l, l.n);
    const c = slot >> this.layout.chunkShift;
    r = slot & (this.layout.chunkRows - 1);
    scan = p.scanBlocks[c];
    side = p.sideBlocks[c];
    a.views();
    if (cent) copyRow(this.layout, this.arena.u8, this.stageScan, this.stageSide, 0, scan, side, r);
    else this.encoder.encodeRow(row.vector, a, scan, side, r);
    const gA = p.groupA.acquire(row.groupA);
    a.i32[(side + L.offGroupA) / 4 + r] = gA;
    a.i32[(side + L.offGroupB) / 4 + r] = p.groupB.acquire(row.groupB);
    l.addA(gA, 1);
    p.dirty?.add(c);
    p.setRowId(slot, row.rowId);
    l.n++;
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
    return p;
  }

  /**
   * The next scan block for a list: its stash, else a free block (memory reuse wins over
   * contiguity), else a new extent of ~1/4 of its current chunk count (up to MAX_EXTENT_ROWS) whose
   * rest goes to the stash. Extents keep a list's codes in long runs for the scan.
   */
  private takeScanBlock(l: List): number {
    const bytes = this.layout.scanBlockBytes;
    const stashed = l.scanStash.pop() ?? this.arena.takeFree(bytes);
    if (stashed !== undefined) return stashed;
    const count = Math.min(MAX_EXTENT_ROWS >> this.layout.chunkShift, Math.max(1, l.chunks.length >> 2));
    const first = this.arena.allocContiguous(bytes, count);
    for (let i = count - 1; i >= 1; i--) l.scanStash.push(first + i * bytes);
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
      const chunk = slot >> this.layout.chunkShift;
      this.encoder.encodeRow(
        v,
        this.arena,
        p.scanBlocks[chunk],
        p.sideBlocks[chunk],
        slot & (this.layout.chunkRows - 1),
      );
      p.dirty?.add(chunk);
    }
  }

  private removeOne(rowId: number): boolean {
    const b = this.ids.find(rowId);
    if (b < 0) return false;
    const L = this.layout,
      a = this.arena.views();
    const p = this.partById[this.ids.partAt(b)]!;
    const slot = this.ids.slotAt(b);
    this.ids.delete(rowId);
    this.centerSample?.delete(rowId);
    const c = slot >> this.layout.chunkShift,
      r = slot & (this.layout.chunkRows - 1);
    const l = p.lists[p.chunkList[c]];
    const gA = a.i32[(p.sideBlocks[c] + L.offGroupA) / 4 + r];
    p.groupA.release(gA);
    p.groupB.release(a.i32[(p.sideBlocks[c] + L.offGroupB) / 4 + r]);
    l.addA(gA, -1);
    this.fillHole(p, l, slot);
    p.n--;
    if (l.n <= (l.chunks.length - 1) * this.layout.chunkRows) {
      const freed = l.chunks.pop()!;
      p.dirty?.add(freed);
      l.scanStash.push(p.scanBlocks[freed]);
      this.arena.freeBlock(p.sideBlocks[freed], L.sideBlockBytes);
      p.scanBlocks[freed] = -1;
      p.sideBlocks[freed] = -1;
      p.freeChunks.push(freed);
    }
    if (p.n === 0) {
      for (const list of p.lists) for (const blk of list.scanStash) this.arena.freeBlock(blk, L.scanBlockBytes);
      this.retrains.abort(p);
      if (p.centroids) freeCentroids(this.arena, p.centroids);
      if (p.target) freeCentroids(this.arena, p.target.cent);
      p.centroids = p.target = null;
      this.partitions.delete(p.name);
      this.partById[p.id] = undefined;
      this.freePartIds.push(p.id);
    } else {
      p.shrinkRowIds();
    }
    return true;
  }
}

/**
 * Retrain sooner than retrainGrowth-fold when the lists went lopsided. Lists are trained on the
 * rows there are; an account ingested video by video then gets rows unlike any the centroids
 * saw, and they pile into the few lists nearest them: a probe reads its share of rows in a
 * handful of lists and misses the rest. Measured (issue 27, bench/vector-scale-bench.ts
 * `--as-app=1`): trained at 66 k rows, 250 k rows of 1 000-frame videos added in video order left a
 * skew of 11 (1.4 right after training) and image recall@10 0.81 at the app's probe, against 0.996
 * with lists trained on all rows; 200-frame videos: skew 2.9, 0.88 against 0.98. So a retrain is
 * due once the partition grew STALE_MIN_GROWTH-fold since training and its skew passed
 * STALE_SKEW (and STALE_SKEW_RISE × the skew the retrain left, for data that is lopsided by
 * nature — many near-identical frames fill one list however it is trained; that skew counts up
 * to STALE_SKEW, so the bound stays ≤ 3). Retrains stay geometric (each after ≥ 1.25× growth):
 * at most ~5 rows retrained per row added.
 */
const STALE_SKEW = 2;
const STALE_SKEW_RISE = 1.5;
const STALE_MIN_GROWTH = 1.25;

function listsStale(p: Partition, cent: Centroids, retrainGrowth: number): boolean {
  if (p.n >= cent.trainedAt * retrainGrowth) return true;
  if (p.n < cent.trainedAt * STALE_MIN_GROWTH) return false;
  return listSkew(p) >= Math.max(STALE_SKEW, STALE_SKEW_RISE * (cent.skew ?? 0));
}

/**
 * How lopsided the lists are: the mean size of the list a row sits in over the mean list size,
 * lists · Σ size² / n² (1 when all lists are equal; k-means leaves ~1.3–1.4).
 */
export function listSkew(p: Partition): number {
  if (p.n === 0 || p.lists.length < 2) return 1;
  let sq = 0;
  for (const l of p.lists) sq += l.n * l.n;
  return (p.lists.length * sq) / (p.n * p.n);
}
