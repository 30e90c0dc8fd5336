/**
 * The VectorIndex: one WebAssembly memory (arena) and kernel instance per index, rows in
 * per-partition chunks (rows.ts), searches in stages (search.ts).
 */
import { Arena } from "./arena.ts";
import {
  COMPACT_FREE_SHARE,
  COMPACT_MIN_FREE_BYTES,
  Compaction,
  emptyCompactionStats,
  type CompactionStats,
} from "./compact.ts";
import { Encoder } from "./encode.ts";
import { makeLayout } from "./layout.ts";
import { DEFAULT_SEED, Rotation } from "./rotation.ts";
import {
  type ByteSource,
  checkHeader,
  loadSegment,
  type SegmentHeader,
  type SegmentParts,
  segmentBody,
  segmentHeader,
} from "./snapshot.ts";
import { RowStore } from "./rows.ts";
import { SLICE_MS, type TrainingStats } from "./retrain.ts";
import { Searcher } from "./search.ts";
import type {
  Candidates,
  CompactionResult,
  SearchOptions,
  SearchResult,
  VectorIndex,
  VectorIndexOptions,
  VectorRow,
  VectorSource,
} from "./types.ts";
import { compileKernels, instantiateKernels, type Kernels } from "./wasm/kernels.ts";

/**
 * Rows rescored with the 2-bit layout: its middle-pass estimate is coarser than the 4-bit one, so
 * more rows are rescored exactly, and more the more rows the middle stage ranks: at least 128 and
 * 1/16 of the middle stage (a flat scan of 1 M rows ranks 4 000 → 250 rescored; 100 k rows or a
 * probe rank ~1 024 → 128). Measured (bench/vector-ram-bench.ts, text-like queries): at 1 M
 * recall@10 0.941 / 0.967 with 128 / 256 rescored, at 100 k 0.952 / 0.975 with 64 / 128;
 * image-like probes gained nothing past 64. The 4-bit layout keeps 64 and no share.
 */
const RESCORE_MIN_2BIT = 128;
const RESCORE_SHARE_2BIT = 1 / 16;

export class VectorIndexImpl implements Omit<VectorIndex, "segments" | "compact" | "snapshot" | "restore"> {
  readonly dim: number;
  private readonly arena: Arena;
  private readonly rows: RowStore;
  private readonly searcher: Searcher;
  private readonly source: VectorSource | undefined;
  /** The compiled kernels, instantiated again on each compaction's new memory. */
  private readonly kernelModule: WebAssembly.Module;
  /**
   * The kernel functions every part calls through: one object whose functions a compaction
   * replaces with those of an instance on the new memory (so nothing holding it needs telling).
   */
  private readonly kernels: Kernels;
  private readonly compactFreeShare: number;
  private readonly compactStats = emptyCompactionStats();
  private readonly encoder: Encoder;
  private readonly seed: number;

  constructor(opts: VectorIndexOptions) {
    const layout = makeLayout(opts.dim, opts.refineBits ?? 2, opts.chunkRows);
    this.dim = opts.dim;
    this.arena = new Arena([layout.sideBlockBytes, layout.scanBlockBytes]);
    this.kernelModule = compileKernels(layout);
    const kernels = (this.kernels = { ...instantiateKernels(layout, this.arena.memory, this.kernelModule) });
    if (opts.compactFreeShare !== undefined && !(opts.compactFreeShare > 0))
      throw new RangeError(`compactFreeShare must be > 0, got ${opts.compactFreeShare}`);
    this.compactFreeShare = opts.compactFreeShare ?? COMPACT_FREE_SHARE;
    const encoder = (this.encoder = new Encoder(layout, new Rotation(layout.dim, layout.padDim, opts.seed)));
    this.seed = opts.seed ?? DEFAULT_SEED;
    const policy = {
      // At most 65 536: probeLists packs a list's number into 16 bits of its sort key.
      lists: Math.min(65536, Math.max(0, Math.floor(opts.lists ?? 0))),
      trainAt: Math.max(2, opts.trainAt ?? 65_536),
      retrainGrowth: Math.max(1.5, opts.retrainGrowth ?? 4),
    };
    this.rows = new RowStore(
      layout,
      this.arena,
      encoder,
      kernels,
      opts.center,
      Math.max(1, Math.floor(opts.centerSample ?? 1024)),
      policy,
    );
    const exactBelow = Math.max(0, Math.floor(opts.exactBelow ?? 1024));
    const two = layout.refineBits === 2;
    if (opts.rescoreMin !== undefined && !(opts.rescoreMin >= 1))
      throw new RangeError(`rescoreMin must be a number ≥ 1, got ${opts.rescoreMin}`);
    const rescoreMin = Math.max(1, Math.floor(opts.rescoreMin ?? (two ? RESCORE_MIN_2BIT : 64)));
    const rescoreShare = opts.rescoreMin !== undefined || !two ? 0 : RESCORE_SHARE_2BIT;
    this.source = opts.source;
    this.searcher = new Searcher(
      this.rows,
      this.arena,
      kernels,
      encoder,
      opts.source,
      exactBelow,
      rescoreMin,
      rescoreShare,
    );
    this.rows.onRetrainsIdle = () => this.maybeCompact();
  }

  /** Changes with any change of the rows, the lists or where they live (a snapshot being written is then given up). */
  get version(): string {
    return `${this.rows.version}.${this.compactStats.count}.${this.compactStats.pending}`;
  }

  private get snapshotParts(): SegmentParts {
    return { layout: this.rows.layout, arena: this.arena, rows: this.rows, encoder: this.encoder, seed: this.seed };
  }

  forEachRow(fn: (rowId: number, partition: string, groupA: number, groupB: number) => void): void {
    this.rows.forEachRow(fn);
  }

  /** The segment's snapshot header (snapshot.ts); throws while a retrain is under way. */
  snapshotHeader(): SegmentHeader {
    if (this.rows.retrains.stats.pending > 0) throw new Error("snapshot: a retrain is under way");
    return segmentHeader(this.snapshotParts);
  }

  /** The bytes after `header` (snapshot.ts segmentBody): valid while `version` is unchanged. */
  snapshotBody(header: SegmentHeader): Generator<Uint8Array, void> {
    return segmentBody(this.snapshotParts, header);
  }

  /** Loads a snapshot's segment into this segment, which must hold no rows (snapshot.ts). */
  *restore(header: SegmentHeader, read: ByteSource): Generator<void, void> {
    if (this.rows.size > 0) throw new Error("restore: the segment holds rows");
    checkHeader(this.snapshotParts, header);
    yield* loadSegment(this.snapshotParts, header, read);
  }

  /** Compactions so far (src/vector/compact.ts). */
  get compactions(): CompactionStats {
    return { ...this.compactStats };
  }

  /** Bytes of WebAssembly memory not holding live data (a compaction gives them back). */
  private get freeBytes(): number {
    return this.arena.byteLength - this.rows.liveArenaBytes - this.searcher.scratchBytes;
  }

  /** Starts a compaction when over compactFreeShare of the memory is free (after retrains and removes). Never throws. */
  private maybeCompact(): void {
    this.dropStaleCompaction();
    if (this.compaction || this.rows.retrains.stats.pending > 0) return;
    const free = this.freeBytes;
    if (free < COMPACT_MIN_FREE_BYTES || free <= this.compactFreeShare * this.arena.byteLength) return;
    if (this.startCompaction()) this.scheduleCompaction();
  }

  /** A compaction under way: the copy, when it began, its work so far and the memory it started from. */
  private compaction: {
    run: Compaction;
    bytesBefore: number;
    workMs: number;
    cpuMs: number;
    retrainsAtStart: number;
  } | null = null;
  private compactionQueued = false;

  /** Reserves the fresh memory and starts copying (compact.ts); false when it would not be smaller or cannot be had. */
  private startCompaction(): boolean {
    const t0 = performance.now(),
      c0 = process.cpuUsage();
    const bytesBefore = this.arena.byteLength;
    // + a few pages for the arena's first bytes and run rounding (compact.ts: no headroom).
    const want = this.rows.liveArenaBytes + this.searcher.scratchBytes + 4 * 65536;
    if (want >= bytesBefore) return false;
    try {
      const fresh = new Arena(this.arena.blockSizes, want);
      const run = new Compaction(this.rows.layout, this.arena, fresh, this.rows.allPartitions);
      this.compaction = { run, bytesBefore, workMs: 0, cpuMs: 0, retrainsAtStart: this.rows.retrains.stats.retrains };
      this.compactStats.pending = 1;
      this.noteSlice(t0, c0);
      return true;
    } catch (e) {
      this.compactionFailed(e);
      return false;
    }
  }

  private scheduleCompaction(): void {
    if (this.compactionQueued || !this.compaction) return;
    this.compactionQueued = true;
    setImmediate(() => {
      this.compactionQueued = false;
      this.compactionSlice();
    });
  }

  /** One event-loop turn of copying (≤ SLICE_MS, as a retrain's slices); the switch once all is copied. */
  private compactionSlice(): void {
    if (this.dropStaleCompaction()) return;
    const c = this.compaction;
    if (!c) return;
    const t0 = performance.now(),
      c0 = process.cpuUsage();
    const done = c.run.step(t0 + SLICE_MS);
    this.noteSlice(t0, c0);
    if (done) this.finishCompaction();
    else this.scheduleCompaction();
  }

  /**
   * Gives up a compaction during which a retrain began (even one that has ended since, as a
   * `rebuild` does at once): a retrain holds offsets into the old memory, replaces centroids and
   * moves every row. Tried again once retrains are idle (maybeCompact). True when one was dropped.
   */
  private dropStaleCompaction(): boolean {
    const c = this.compaction;
    const t = this.rows.retrains.stats;
    if (!c || (t.pending === 0 && t.retrains === c.retrainsAtStart)) return false;
    c.run.release();
    this.compaction = null;
    this.compactStats.pending = 0;
    this.compactStats.abandoned++;
    return true;
  }

  /** Accounts one turn of compaction work begun at (t0, c0): wall and CPU ms (on a loaded box the wall time includes other processes' turns). */
  private noteSlice(t0: number, c0: NodeJS.CpuUsage, c = this.compaction): void {
    const ms = performance.now() - t0,
      cpu = process.cpuUsage(c0),
      cpuMs = (cpu.user + cpu.system) / 1000;
    const st = this.compactStats;
    st.slices++;
    if (c) {
      c.workMs += ms;
      c.cpuMs += cpuMs;
    }
    st.maxSliceMs = Math.max(st.maxSliceMs, ms);
    st.maxSliceCpuMs = Math.max(st.maxSliceCpuMs, cpuMs);
  }

  /** Copies what is left and what changed, then switches to the fresh memory, synchronously. */
  private finishCompaction(): CompactionResult | null {
    if (this.dropStaleCompaction()) return null;
    const c = this.compaction;
    if (!c) return null;
    const t0 = performance.now(),
      c0 = process.cpuUsage();
    this.compaction = null;
    this.compactStats.pending = 0;
    try {
      const fresh = c.run.fresh;
      const switchRows = c.run.finish((p) => this.rows.holds(p), this.rows.allPartitions);
      const switchStage = this.rows.relocateScratch(fresh);
      const switchScratch = this.searcher.relocateInto(fresh);
      const kernels = instantiateKernels(this.rows.layout, fresh.memory, this.kernelModule);
      const peak = this.arena.byteLength + fresh.byteLength;
      // The switch: plain assignments from here on, nothing can fail half-way.
      switchRows();
      switchStage();
      switchScratch();
      this.arena.adopt(fresh);
      Object.assign(this.kernels, kernels);
      this.noteSlice(t0, c0, c);
      const ms = c.workMs;
      const bytesAfter = this.arena.byteLength,
        st = this.compactStats;
      st.count++;
      st.bytesGivenBack += Math.max(0, c.bytesBefore - bytesAfter);
      st.lastMs = ms;
      st.lastCpuMs = c.cpuMs;
      st.maxMs = Math.max(st.maxMs, ms);
      st.peakBytes = Math.max(st.peakBytes, peak);
      return { bytesBefore: c.bytesBefore, bytesAfter, ms };
    } catch (e) {
      c.run.release();
      this.compactionFailed(e);
      return { bytesBefore: c.bytesBefore, bytesAfter: this.arena.byteLength, ms: c.workMs + performance.now() - t0 };
    }
  }

  private compactionFailed(e: unknown): void {
    this.compactStats.errors++;
    this.compactStats.lastError = e instanceof Error ? e.message : String(e);
  }

  /**
   * Starts a compaction that copies between event-loop turns, as the automatic one does, whatever
   * the free share (benches); false when none started (a retrain or a compaction under way, or
   * nothing to give back). Watch `compactions.pending`.
   */
  compactInBackground(): boolean {
    this.dropStaleCompaction();
    if (this.compaction || this.rows.retrains.stats.pending > 0 || !this.startCompaction()) return false;
    this.scheduleCompaction();
    return true;
  }

  /**
   * Moves the live blocks into a fresh WebAssembly memory sized to them and drops the old one
   * (compact.ts), synchronously: a compaction under way is finished, else one is run whole.
   * Skipped (null) while a retrain is under way; nothing done when the fresh memory would not be
   * smaller. A failure (the new memory cannot be had) leaves the index as it was and is counted in
   * `compactions.errors`.
   */
  compact(): CompactionResult | null {
    this.dropStaleCompaction();
    if (this.rows.retrains.stats.pending > 0) return null;
    if (!this.compaction && !this.startCompaction()) {
      const bytes = this.arena.byteLength;
      return { bytesBefore: bytes, bytesAfter: bytes, ms: 0 };
    }
    return this.finishCompaction();
  }

  get size(): number {
    return this.rows.size;
  }

  get center(): Float32Array | null {
    return this.rows.center;
  }

  get memoryBytes(): number {
    return this.arena.byteLength + this.rows.jsBytes + this.searcher.jsBytes;
  }

  /** What a row costs by the layout: its share of a chunk's two blocks, its id and its id-map bucket. */
  get rowBytes(): number {
    const L = this.rows.layout;
    return (L.scanBlockBytes + L.sideBlockBytes) / L.chunkRows + 8 + 16;
  }

  get liveBytes(): number {
    return this.arena.usedBytes + this.rows.jsBytes + this.searcher.jsBytes;
  }

  /** Memory accounting for benches: arena bytes in use and allocated, JS-side bytes, and rows.breakdown. */
  get memoryStats() {
    return {
      arenaUsed: this.arena.usedBytes,
      arenaBytes: this.arena.byteLength,
      jsBytes: this.rows.jsBytes + this.searcher.jsBytes,
      ...this.rows.breakdown,
    };
  }

  has(rowId: number): boolean {
    return this.rows.has(rowId);
  }

  partitionSize(partition: string): number {
    return this.rows.partition(partition)?.n ?? 0;
  }

  rebuild(partition: string): void {
    const p = this.rows.partition(partition);
    if (p) this.rows.rebuild(p);
    // Synchronous to the end, the compaction it may have started included.
    this.settleCompaction();
  }

  get training(): TrainingStats {
    return { ...this.rows.retrains.stats };
  }

  /** Runs background retrains, and then a compaction under way, to their end now. */
  flushTraining(): void {
    this.rows.retrains.flush();
    this.settleCompaction();
  }

  /** With no retrain under way: a compaction that is due (or under way) runs to its end now. */
  private settleCompaction(): void {
    if (this.rows.retrains.stats.pending > 0) return;
    this.maybeCompact();
    this.finishCompaction();
  }

  whenTrained(): Promise<void> {
    return this.rows.retrains.idle();
  }

  listCount(partition: string): number {
    return this.rows.partition(partition)?.lists.length ?? 0;
  }

  add(rows: readonly VectorRow[]): void {
    this.rows.add(rows);
  }

  remove(rowIds: Iterable<number>): number {
    const removed = this.rows.remove(rowIds);
    if (removed > 0 && this.rows.retrains.stats.pending === 0) this.maybeCompact();
    return removed;
  }

  search(query: Float32Array, opts: SearchOptions): SearchResult[] {
    return this.searcher.search(query, opts);
  }

  /** The source's vectors of `rowIds` (a segmented index's synchronous `search`). */
  vectorsOf(rowIds: readonly number[]): (Float32Array | undefined)[] {
    if (!this.source) throw new Error("this index has no vector source: use candidates() and rescore()");
    return this.source.getVectors(rowIds);
  }

  candidates(query: Float32Array, opts: SearchOptions): Candidates {
    return this.searcher.candidates(query, opts);
  }

  rescore(c: Candidates, vectors: readonly (Float32Array | undefined)[]): SearchResult[] {
    return this.searcher.rescore(c, vectors);
  }

  /** `rescore` from cosines the caller computed: cosines[i] for c.rowIds[i], NaN for a row gone meanwhile. */
  rescoreCosines(c: Candidates, cosines: ArrayLike<number>): SearchResult[] {
    return this.searcher.rescoreCosines(c, cosines);
  }
}
