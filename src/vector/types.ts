/** Public types of the vector index (see ./index.ts for the factory). */
import type { CompactionStats } from "./compact.ts";
import type { TrainingStats } from "./retrain.ts";
import type { ByteSource, SegmentHeader } from "./snapshot.ts";

export type { ByteSource, CompactionStats, SegmentHeader, TrainingStats };

/** One compaction (VectorIndex.compact): WebAssembly memory bytes before and after, and its duration. */
export interface CompactionResult {
  bytesBefore: number;
  bytesAfter: number;
  ms: number;
}

export interface VectorRow {
  /** The store's id of the vector (frames.id); a safe integer, unique across the index. */
  rowId: number;
  /** dim floats; need not be normalised (the index ranks by cosine). */
  vector: Float32Array;
  /** Account: searches never cross partitions. */
  partition: string;
  /** Collection number (filter `allow.collections`). */
  groupA: number;
  /** Video number (filter `allow.videos`). */
  groupB: number;
}

/**
 * Full-precision vectors for exact rescoring, provided by the caller so SQL stays in the store
 * layer (e.g. `SELECT frame_id, embedding FROM frame_vectors WHERE frame_id IN (…)`).
 * Returns one entry per requested id, in order; `undefined` for an id it no longer has (such a
 * row is skipped).
 */
/**
 * A search's first half (VectorIndex.candidates): the rows to rescore, valid across awaits (copied
 * out of the index), and what the second half (VectorIndex.rescore) needs.
 */
export interface Candidates {
  readonly rowIds: readonly number[];
  /** The normalized query. */
  readonly unit: Float32Array;
  readonly k: number;
  /** Completes the search's statistics (rescore time, total) and returns `out`. */
  finish(out: SearchResult[], rescoreMs: number): SearchResult[];
}

export interface VectorSource {
  getVectors(rowIds: readonly number[]): (Float32Array | undefined)[];
}

export interface AllowFilter {
  /** Only rows whose groupA is listed (an empty list allows nothing). */
  collections?: readonly number[];
  /** Only rows whose groupB is listed (an empty list allows nothing). */
  videos?: readonly number[];
  /** Rows never to return (hidden segments). */
  excludeRowIds?: ReadonlySet<number> | readonly number[];
  /**
   * Only these rows (ids the partition does not hold are ignored; the other filters still
   * apply). The search then reads only the chunks holding them, never the whole partition: the
   * app passes a video filter's rows this way. No inverted-list probing: every listed row is read.
   */
  rowIds?: readonly number[];
}

export interface SearchOptions {
  partition: string;
  /** How many results (≥ 1). Fewer come back when fewer rows are allowed. */
  k: number;
  /** Filters, applied to the rows before anything is ranked. */
  allow?: AllowFilter;
  /**
   * Rows the coarse (Hamming) pass hands on; the main recall/latency knob. Default: 40·√allowed
   * (4 % at 1 M rows), at least 8 192 and at most 131 072 (per segment); 20 % of the rows read
   * when lists are probed (10 %, at least 1 024, with `inDistribution`).
   */
  candidates?: number;
  /**
   * Rows rescored exactly from the source (each one a vector read). Default max(64, min(4k,
   * k + 256)); more buys recall back from the middle pass's estimate at ~2.5 µs a row from SQLite.
   */
  rescore?: number;
  /**
   * Share of the allowed rows read in a partition split into inverted lists (the lists nearest
   * the query first, at least 4 096 rows): the second recall/latency knob. Default 1: every row
   * (the flat scan). Image-like queries (a frame, similar frames) reach recall@10 ≥ 0.95 at ~0.03
   * of 1 M rows, text-like ones (off the image manifold) at ~0.2–0.3 on the bench generator's
   * pessimistic model (search/probe-policy.ts). No effect on partitions without lists.
   */
  probe?: number;
  /**
   * With `probe`: the rows read are probe·at·(n/at)^g instead of probe·n (n: the allowed rows,
   * per segment; g: `probeGrowth`, by default 0.5 on both sides, i.e. probe·√(at·n)) — the
   * share at `at` rows, a larger share below, a smaller one
   * above. An image-like query's neighbours sit in its own video, and the rows needed to find them
   * grow as the library does, but much more slowly (recall ≥ 0.95 from ~20 k rows read at 1 M and
   * ~100 k at 10 M, while 4 k rows gave 0.90 at 100 k; BENCHMARKS.md "Probing at 10 M").
   * Default: none (a plain share).
   */
  probeAt?: number;
  /**
   * With `probeAt`: how the rows read grow with n below and above it, as exponents (default
   * [0.5, 0.5]: √n). Text-like queries need a share that shrinks a little less fast, and not at
   * all past 1 M rows: [0.9, 1] (search/probe-policy.ts).
   */
  probeGrowth?: readonly [number, number];
  /**
   * With `probe`, when lists are probed: the query is like the indexed rows (an image against
   * video frames), so its neighbours stand out in the quantised estimates and each stage keeps
   * fewer rows — coarse 10 % of the rows read (at least 1 024) instead of 20 % (at least 8 192),
   * middle max(256, 4k) instead of max(1 024, 4k), max(64, min(4k, k + 256)) rescored — unless
   * `candidates` / `rescore` say otherwise. Which rows are read does not change. A text-like query
   * (off the image manifold) must not set it: its top-10 needs the wider stages. Measured at 100 k
   * rows (issue 27): image recall@10 unchanged at a third of the CPU's stages; it stays unchanged
   * down to half of each of these sizes.
   */
  inDistribution?: boolean;
  /** Filled with what the search did (for benchmarks and diagnostics). */
  stats?: SearchStats;
  /**
   * An object the caller passes to consecutive searches of the same query (same vector object,
   * same `allow` object, same partition) that only raise `k`: the coarse pass, which does not
   * depend on k, is then done once (it is ~70 % of a search). Ignored when anything differs or
   * the index changed in between.
   */
  reuse?: ScanReuse;
}

/** Opaque to callers: `{}` to start. */
export interface ScanReuse {
  key?: unknown;
}

export interface SearchResult {
  rowId: number;
  /** Exact cosine similarity between the query and the row's source vector. */
  score: number;
}

export interface SearchStats {
  path: "empty" | "exact" | "approx";
  /** Allowed rows among those read (all of the partition's unless lists were probed). */
  allowed: number;
  coarse: number;
  middle: number;
  rescored: number;
  /** Inverted lists read (0: the partition has no lists, or all were read). */
  lists?: number;
  /** Rows read by the scan (all of the partition without lists). */
  scanned?: number;
  /** The coarse candidates came from an earlier search of the same query (opts.reuse). */
  scanReused?: boolean;
  ms: { filter: number; scan: number; estimate: number; rescore: number; total: number };
}

export interface VectorIndexOptions {
  dim: number;
  /** For `search()`; an index searched with candidates() + rescore() needs none. */
  source?: VectorSource;
  /**
   * Mean of the data in the original space, if the caller knows it (e.g. persisted). Otherwise
   * the index learns it from the first `centerSample` rows added, re-encoding those once.
   */
  center?: Float32Array;
  /** Rows used to learn the centre. Default 1 024. */
  centerSample?: number;
  /**
   * When a query's allowed rows are at most this many, it is answered by an exact scan of their
   * source vectors (100 % recall). Default 1 024.
   */
  exactBelow?: number;
  /**
   * Bits per dim of the middle pass (between the 1-bit scan and the exact rescoring): 2 (default)
   * = the scan's sign bit + 1 extra bit stored beside it, 76 B a row for 512 dims besides the
   * 66 B scan block; 4 = 4-bit codes that repeat the sign, 268 B a row (the layout before issue
   * 14's RAM ask). See src/vector/README.md for their recall and latency.
   */
  refineBits?: 2 | 4;
  /**
   * Rows per chunk of the layout: 32 (default), 64 or 128 (before issue 14's finer lists). Every inverted list ends in a
   * part-filled chunk, so finer lists (`lists`) waste less memory with smaller chunks, while the
   * scan pays a little per chunk (src/vector/README.md, "Inverted lists").
   */
  chunkRows?: 32 | 64 | 128;
  /**
   * Fewest rows a search rescores exactly from the source (each an exact vector read, ~2.5 µs
   * from SQLite); per search max(rescoreMin, min(4k, k + 256)) unless `SearchOptions.rescore`
   * says otherwise. Default 64 for refineBits 4; for 2, 128 and also 1/16 of the rows the middle
   * pass ranks (250 on a flat scan of 1 M rows) unless rescoreMin is given (src/vector/README.md).
   */
  rescoreMin?: number;
  /** Seed of the random rotation (codes are only comparable under the same seed). */
  seed?: number;
  /**
   * Inverted lists: a partition reaching `trainAt` rows (default 65 536) is split into `lists`
   * lists (default ~n / 256 up to 8 192 lists, then ~n / 512 up to 16 384) by k-means over its codes, so that a search reads only the
   * lists nearest its query; retrained (every row reassigned) after it grew `retrainGrowth`-fold
   * (default 4), in the background (see `training`). `trainAt: Infinity` keeps every partition flat.
   */
  lists?: number;
  trainAt?: number;
  retrainGrowth?: number;
  /**
   * Bytes of one segment (one WebAssembly memory, ≤ 4 GiB each) before rows go to a new one.
   * Default 1.5 GiB.
   */
  segmentBytes?: number;
  /**
   * A segment whose WebAssembly memory is more than this share free (and ≥ 1 MiB) after a retrain
   * or a remove is compacted: its live blocks move to a fresh memory sized to them and the
   * old memory is dropped (src/vector/compact.ts). Default 0.25; Infinity: only on `compact()`.
   */
  compactFreeShare?: number;
}

/** A snapshot of an index (VectorIndex.snapshot; the format is src/vector/snapshot.ts). */
export interface IndexSnapshot {
  /** One header per segment (JSON-able). */
  headers: SegmentHeader[];
  /** The bytes after the headers, piece by piece; each piece is valid until the next is asked for. */
  body(): Generator<Uint8Array, void>;
  /** The index's `version` when the snapshot began: once it moved, the body is no longer the snapshot's. */
  version: string;
}

export interface VectorIndex {
  readonly dim: number;
  /** Adds rows (a row whose rowId is already present is replaced). O(rows), no index-wide work. */
  add(rows: readonly VectorRow[]): void;
  /** Removes rows by id; unknown ids are ignored. O(ids). Returns how many were removed. */
  remove(rowIds: Iterable<number>): number;
  /** Both halves over `source` (a synchronous source: tests, tools, benches). */
  search(query: Float32Array, options: SearchOptions): SearchResult[];
  /** Filter, scan and estimates: the rows worth an exact look (no I/O; see Candidates). */
  candidates(query: Float32Array, options: SearchOptions): Candidates;
  /** Exact cosine of the candidates against their vectors (aligned with `c.rowIds`) → best k. */
  rescore(c: Candidates, vectors: readonly (Float32Array | undefined)[]): SearchResult[];
  /** `rescore` from exact cosines the caller computed (cosines[i] for c.rowIds[i]; NaN: the row is gone). */
  rescoreCosines(c: Candidates, cosines: ArrayLike<number>): SearchResult[];
  has(rowId: number): boolean;
  partitionSize(partition: string): number;
  /**
   * Retrains a partition's inverted lists on its current rows and reassigns them, synchronously
   * (seconds at 1 M rows: for tools and benches). Growth retrains them automatically in the
   * background instead: `add` only queues the work, which then runs in ≤ ~8 ms slices, one per
   * event-loop turn, while searches (reading every list until the swap) and adds go on.
   */
  rebuild(partition: string): void;
  /** Background retraining: started, under way, slices run and the longest one (ms). */
  readonly training: TrainingStats;
  /** Runs every background retrain under way to its end now (synchronously). */
  flushTraining(): void;
  /** Resolves once no background retrain is under way. */
  whenTrained(): Promise<void>;
  /**
   * Gives free WebAssembly memory back now: every segment not being retrained moves its live
   * blocks into a fresh memory sized to them, synchronously. Automatic after retrains and
   * removes that leave over `compactFreeShare` free; this is for tools, benches and tests.
   */
  compact(): CompactionResult;
  /** Compactions so far, summed over segments (peakBytes and maxMs: the largest). */
  readonly compactions: CompactionStats;
  /** Inverted lists of a partition (1 until trained), summed over segments. */
  listCount(partition: string): number;
  /** WebAssembly memories in use (see segmentBytes). */
  readonly segments: number;
  /** The centre in use (null until learned). */
  readonly center: Float32Array | null;
  /** Live rows in all partitions. */
  readonly size: number;
  /** Bytes held: the WebAssembly memory plus the JS-side tables. */
  readonly memoryBytes: number;
  /** Bytes in use: memoryBytes less the WebAssembly memory's free blocks (kept for later adds). */
  readonly liveBytes: number;
  /** What a row costs by the layout (its blocks, id and id-map bucket), before list tails and free blocks. */
  readonly rowBytes: number;
  /** Calls `fn` for every row held: its id, partition and group values (groupA, groupB). */
  forEachRow(fn: (rowId: number, partition: string, groupA: number, groupB: number) => void): void;
  /** Changes with any change of the rows, the lists or where they live in memory. */
  readonly version: string;
  /**
   * The index as it is now, to be written out (src/vector/snapshot.ts has the format): throws
   * while a retrain is under way. The body must be read while `version` is unchanged.
   */
  snapshot(): IndexSnapshot;
  /**
   * Loads a snapshot's segments into this index, which must be new (no rows), in steps (run them
   * between event-loop turns, or all at once). Throws `SnapshotMismatch` for a snapshot made by
   * another layout, seed or encoder, or inconsistent with itself; the index is then to be dropped.
   */
  restore(headers: readonly SegmentHeader[], read: ByteSource): Generator<void, void>;
}
