/**
 * Just over the ~450-line guide (~480): the one front the search service asks for neighbours,
 * null samples, memoised per-account figures and shot look-ups, over whichever backend is in use,
 * and the backends' status (in-memory warm-up or pgvector's HNSW indexes) that gates them; the
 * backends (memory-backend.ts, pgvector-backend.ts) and calibration's maths are apart.
 */
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { toFloat32 } from "../indexing/store.ts";
import { IndexWarmer, isWarmable, type IndexWarmOptions, type WarmableIndex, type WarmStatus } from "./index-warmer.ts";
import { RowDots } from "../vector/wasm/row-dots.ts";
import { dot, nullStatsOfSims, strideSample, type NullStats } from "./calibration.ts";
import { labelsOf, type SearchScope, type SearchStore, type ShotRow, type VectorKind } from "./store.ts";

export interface NearestRequest {
  kind: VectorKind;
  scope: SearchScope;
  modelId: string;
  query: Float32Array;
  k: number;
  /** Label filter: only these shots (`video_id` → shot indexes); frames count by their shot. */
  allowShots?: Map<string, Set<number>>;
  /**
   * One look-up that asks again with a larger k (`SearchService.admitted`): the same object on
   * each call, so a backend may reuse what it read for the smaller k (exact vectors). Never kept
   * past the calls that pass it.
   */
  session?: object;
  /**
   * How much of the scope the in-memory index reads, nearest inverted lists first (src/vector
   * `probe`, `probeAt`, `probeGrowth`); absent = every row (search/probe-policy.ts says when).
   */
  probe?: ProbePolicy;
}

/** A share of the scope's rows at `at` rows, the rows read growing as n^growth around it (src/vector `probeAt`, `probeGrowth`; default √n). */
export interface ProbePolicy {
  share: number;
  at?: number;
  /** Exponents of the rows read in n, below and above `at` (default [0.5, 0.5]). */
  growth?: readonly [number, number];
  /** The query is like the indexed rows (image against frames): fewer rows per stage (src/vector `inDistribution`). */
  inDistribution?: boolean;
}

export interface VectorHit {
  id: number;
  /** Cosine similarity. */
  raw: number;
}

/** Where nearest neighbours come from. Filters (scope, model, shots) apply before ranking. */
export interface VectorBackend {
  readonly name: string;
  nearest(req: NearestRequest): Promise<VectorHit[]>;
  /** Rows held in memory (0 for backends that hold none). */
  rows(): number;
  onVideoIndexed(videoId: string, accountId: string | null): Promise<void>;
  onVideosDeleted(videoIds: string[]): Promise<void>;
  /** What the last look-up read (in-memory backends; diagnostics, tests). */
  readonly lastSearch?: VectorSearchInfo | null;
  /** Resolves once no background index work (list retraining) is under way. */
  whenIdle?(): Promise<void>;
  /** Drops caches that rebuild on use (not the index itself). */
  releaseCaches?(): void;
  /** The videos whose rows it holds in memory (events/cluster.ts drops those deleted while it was not listening). */
  heldVideoIds?(): string[];
}

export interface VectorSearchInfo {
  kind: VectorKind;
  /** How much the index was asked to read (undefined: every row). */
  probe?: ProbePolicy;
  /** Inverted lists read, and rows scanned in them. */
  lists: number;
  scanned: number;
  /** The account is over the memory budget: the look-up read the database (exact scan) instead. */
  fromDatabase?: boolean;
}

/** Largest k sqlite-vec answers. */
const VEC0_MAX_K = 4096;
/** While a search waits for the warm-up, how often it asks whether its own account is in. */
const WARM_POLL_MS = 50;
/** Scopes up to this many vectors are scanned exactly (no vec0 over-fetch needed for the filter). */
const EXACT_SCAN_MAX = 20_000;
const MEMO_MAX = 4096;
const RESULT_MEMO_MAX = 512;
/** Vectors in the per-account calibration sample. */
export const NULL_SAMPLE_SIZE = 1024;
/** Videos whose shot rows search keeps per account (SearchIndexes.shotsOfVideos). */
const SHOT_VIDEOS_MAX = 5_000;

/**
 * A per-account cache of computed values, at most `max` per account, least recently used out
 * first. It holds the promise, so two look-ups at once compute once; a computation that fails is
 * dropped (the next look-up tries again), and one that an invalidation (`forgetAccount`: the
 * account's map replaced) overtook is answered but not kept.
 */
function remember<T>(
  byAccount: Map<string, Map<string, unknown>>,
  accountId: string,
  key: string,
  max: number,
  compute: () => Promise<T>,
): Promise<T> {
  let m = byAccount.get(accountId);
  if (!m) byAccount.set(accountId, (m = new Map()));
  if (m.has(key)) {
    // Map order is recency: move a hit to the end.
    const hit = m.get(key) as Promise<T>;
    m.delete(key);
    m.set(key, hit);
    return hit;
  }
  const v = compute();
  if (m.size >= max) m.delete(m.keys().next().value!);
  m.set(key, v);
  const mine = m;
  v.catch(() => {
    if (mine.get(key) === v) mine.delete(key);
  });
  return v;
}

function topK(hits: VectorHit[], k: number): VectorHit[] {
  return hits.sort((a, b) => b.raw - a.raw || a.id - b.id).slice(0, k);
}

const norm = (v: Float32Array) => Math.sqrt(dot(v, v)) || 1;

/**
 * Nearest neighbours from the store: an exact scan of `frame_vectors`/`shot_vectors` when the
 * filtered scope is small (one video, a small collection, a label filter), else the account's
 * partition of the sqlite-vec table (`vec_<kind>_<dim>`), over-fetched and then filtered by
 * scope, model and shots. Used until the in-memory index of src/vector is wired in behind the
 * same interface.
 */
export class StoreVectorBackend implements VectorBackend {
  readonly name = "sqlite-vec";

  constructor(
    private readonly store: SearchStore,
    /** Scopes up to this many vectors are scanned exactly instead of asking vec0. */
    private readonly exactScanMax = EXACT_SCAN_MAX,
  ) {}

  async nearest(req: NearestRequest): Promise<VectorHit[]> {
    const { kind, scope, modelId, query, k } = req;
    const qn = norm(query);
    const small =
      scope.videoId !== undefined || (await this.store.countInScope(kind, scope, modelId)) <= this.exactScanMax;
    if (small || !(await this.store.hasVecTable(kind, query.length))) {
      const hits: VectorHit[] = [];
      const allowed = req.allowShots ? await this.allowedIds(kind, req.allowShots) : null;
      for (const row of await this.store.vectorsInScope(kind, scope, modelId)) {
        if (allowed && !allowed.has(row.id)) continue;
        const v = toFloat32(row.embedding);
        if (v.length !== query.length) continue;
        hits.push({ id: row.id, raw: dot(query, v) / (qn * norm(v)) });
      }
      return topK(hits, k);
    }
    const filtered = scope.collectionId !== undefined || req.allowShots !== undefined;
    const fetchK = Math.min(VEC0_MAX_K, filtered ? k * 4 : k + Math.ceil(k / 4));
    const near = await this.store.vecNearest(kind, query.length, scope.accountId, query, fetchK);
    const inScope = await this.store.filterIds(
      kind,
      near.map((n) => n.id),
      scope,
      modelId,
    );
    const allowed = req.allowShots ? await this.allowedIds(kind, req.allowShots) : null;
    const hits = near
      .filter((n) => inScope.has(n.id) && (!allowed || allowed.has(n.id)))
      .map((n) => ({ id: n.id, raw: 1 - n.distance }));
    return topK(hits, k);
  }

  /** Ids of the allowed shots (or of the frames in them). */
  private async allowedIds(kind: VectorKind, allow: Map<string, Set<number>>): Promise<Set<number>> {
    return await this.store.idsInShots(kind, allow);
  }

  rows(): number {
    return 0;
  }

  async onVideoIndexed(): Promise<void> {}
  async onVideosDeleted(): Promise<void> {}
}

export interface CachedSample {
  dim: number;
  /** How many vectors the sample holds (`rows`: n × dim floats, unit length). */
  n: number;
  /** The sample, in the memory its SIMD dot products read (calibration, every search). */
  rows: RowDots;
  /**
   * Null statistics already computed against this sample, per query vector object (the query
   * embedding cache hands a repeated text the same vector; they go with the sample).
   */
  statsByQuery: WeakMap<Float32Array, NullStats>;
}

/**
 * The search side of the index: nearest-neighbour look-ups through a backend, plus the
 * per-account calibration samples, cached until the account's content changes. The pipeline
 * calls `onVideoIndexed` after writing a video's rows; video deletion calls `onVideosDeleted`.
 */
export class SearchIndexes {
  private readonly samples = new Map<string, CachedSample>();
  private readonly memos = new Map<string, Map<string, unknown>>();
  private readonly shots = new Map<string, Map<string, ShotRow[]>>();
  private readonly results = new Map<string, Map<string, unknown>>();
  /** Per query vector (a cached text embedding; freed with it): the k its look-ups ended at. */
  private readonly kHints = new WeakMap<Float32Array, Map<string, number>>();
  private warmer: IndexWarmer | null = null;
  /** When a search last read the caches below (nearest, shot rows); an idle release skips while it is recent. */
  private lastUsedAt = 0;

  constructor(
    private readonly store: SearchStore,
    private backend: VectorBackend,
    private readonly warmOptions: IndexWarmOptions & { logger?: Logger } = {},
  ) {}

  /** Starts loading every account's rows in the background (the app's start; backends that hold none have nothing to load). */
  async startWarming(): Promise<void> {
    if (this.warmer || !isWarmable(this.backend)) return;
    this.warmer = new IndexWarmer(this.backend, this.warmOptions, this.warmOptions.logger);
    await this.warmer.start();
  }

  /** Stops the warm-up (the app's close); searches waiting for it are answered at once. */
  stopWarming(): void {
    this.warmer?.stop();
  }

  /** Saves the in-memory index to its snapshot, when it is complete and idle (the app's close, after the job runner stopped). */
  async saveSnapshot(): Promise<void> {
    await (this.backend as VectorBackend & { saveSnapshot?: () => Promise<void> }).saveSnapshot?.();
  }

  /**
   * The index as /readyz reports it (informational: while it loads only vector searches wait):
   * loading and how far, warm, and whether accounts are over the memory budget.
   */
  statusLine(): string {
    // A backend that holds no index of its own (pgvector) says what answers instead.
    const own = (this.backend as VectorBackend & { statusLine?: () => string }).statusLine?.();
    if (own) return own;
    const warm = this.warmStatus;
    const base = !warm
      ? "loads on first search"
      : warm.state === "warming"
        ? `loading: ${Math.floor(warm.fraction * 100)}% (${warm.rows} vectors)`
        : warm.state;
    const b = this.backend as VectorBackend & {
      admission?: { line(): string | null };
      loader?: { source: string | null };
    };
    const from = b.loader?.source;
    const over = b.admission?.line();
    return [base + (from && warm?.state === "warm" ? ` (${from})` : ""), over].filter(Boolean).join("; ");
  }

  /** Where the warm-up stands; null when none was started (rows then load on an account's first search). */
  get warmStatus(): WarmStatus | null {
    return this.warmer?.status() ?? null;
  }

  /**
   * Before a vector look-up: goes ahead at once when every vector of this account and model is in
   * (a new tenant, or one whose rows the pass has read), else waits (at most the configured wait)
   * for that or for the whole warm-up, then answers 503 SEARCH_UNAVAILABLE with Retry-After and
   * how far it got. A search never blocks the event loop loading rows, nor ranks against half an
   * account.
   */
  async assertSearchable(accountId: string, modelId: string | null): Promise<void> {
    const warmer = this.warmer;
    if (!warmer) return;
    const backend = this.backend as VectorBackend & Partial<WarmableIndex>;
    const ready = async () => modelId !== null && ((await backend.accountWarm?.(accountId, modelId)) ?? false);
    // Bounded: re-checks this account every POLL_MS until the whole pass is done or the wait is over.
    const until = performance.now() + (this.warmOptions.waitMs ?? 2000);
    for (;;) {
      if (await ready()) return;
      const left = until - performance.now();
      if (await warmer.whenWarm(Math.min(left, WARM_POLL_MS))) return;
      if (left <= WARM_POLL_MS || warmer.status().state !== "warming") break;
    }
    const s = warmer.status();
    if (s.state === "stopped")
      throw new AppError("SEARCH_UNAVAILABLE", "The server is shutting down; retry shortly", {
        "Retry-After": "5",
      });
    const retry = Math.min(60, Math.max(1, Math.ceil(s.etaSecs ?? 5)));
    throw new AppError(
      "SEARCH_UNAVAILABLE",
      `The search index is loading after a restart: ${s.rows} vectors in, ${Math.floor(s.fraction * 100)}% done; retry in about ${retry} s`,
      { "Retry-After": String(retry) },
    );
  }

  get backendName(): string {
    return this.backend.name;
  }

  /** The database indexes the backend searches (pgvector's HNSW indexes; empty for the in-memory index). */
  async backendIndexes(): Promise<{ name: string; valid: boolean; building: boolean }[]> {
    const b = this.backend as VectorBackend & {
      indexes?: () => Promise<{ name: string; valid: boolean; building: boolean }[]>;
    };
    return (await b.indexes?.()) ?? [];
  }

  /** Rows the backend holds in memory (diagnostics, tests). */
  get memoryRows(): number {
    return this.backend.rows();
  }

  /** What the backend's last look-up read (diagnostics, tests). */
  get lastVectorSearch(): VectorSearchInfo | null {
    return this.backend.lastSearch ?? null;
  }

  /** Resolves once the backend's background work (index retraining) is done. */
  whenVectorIndexIdle(): Promise<void> {
    return this.backend.whenIdle?.() ?? Promise.resolve();
  }

  /** Swaps the nearest-neighbour backend (e.g. to the in-memory index once it is built). */
  useBackend(b: VectorBackend): void {
    this.backend = b;
  }

  async nearest(req: NearestRequest): Promise<VectorHit[]> {
    this.lastUsedAt = Date.now();
    if (req.k <= 0) return [];
    return await this.backend.nearest(req);
  }

  /**
   * A fixed, evenly spaced sample (≤ NULL_SAMPLE_SIZE) of the account's vectors of one kind and
   * model, packed row after row. Empty when the account has none.
   */
  async sample(kind: VectorKind, accountId: string, modelId: string): Promise<CachedSample> {
    const key = `${accountId}\u0000${modelId}\u0000${kind}`;
    let s = this.samples.get(key);
    if (!s) {
      const ids = await this.store.vectorIds(kind, accountId, modelId);
      const picked: number[] = [];
      if (ids.length <= NULL_SAMPLE_SIZE) picked.push(...ids);
      else for (let i = 0; i < NULL_SAMPLE_SIZE; i++) picked.push(ids[Math.floor((i * ids.length) / NULL_SAMPLE_SIZE)]);
      const blobs = await this.store.vectors(kind, picked);
      const rows = picked
        .map((id) => blobs.get(id))
        .filter((b): b is Uint8Array => !!b)
        .map(toFloat32);
      const dim = rows[0]?.length ?? 0;
      const packed = new Float32Array(rows.filter((r) => r.length === dim).length * dim);
      let at = 0;
      for (const r of rows) {
        if (r.length !== dim) continue;
        const n = norm(r);
        for (let i = 0; i < dim; i++) packed[at + i] = r[i] / n;
        at += dim;
      }
      const vectors = strideSample(packed, dim || 1, NULL_SAMPLE_SIZE);
      const n = dim ? vectors.length / dim : 0;
      const rowDots = new RowDots(dim, n);
      rowDots.rows.set(vectors);
      s = { dim, n, rows: rowDots, statsByQuery: new WeakMap() };
      this.samples.set(key, s);
    }
    return s;
  }

  /**
   * Shots of these videos, in time order, kept per account until its content changes (the same
   * videos come back query after query; at most SHOT_VIDEOS_MAX videos per account are kept).
   */
  async shotsOfVideos(accountId: string, videoIds: string[]): Promise<Map<string, ShotRow[]>> {
    this.lastUsedAt = Date.now();
    let byVideo = this.shots.get(accountId);
    if (!byVideo) this.shots.set(accountId, (byVideo = new Map()));
    const missing = videoIds.filter((v) => !byVideo!.has(v));
    if (missing.length) {
      const read = await this.store.shotsOfVideos(missing);
      if (byVideo.size + missing.length > SHOT_VIDEOS_MAX) byVideo.clear();
      // Parsed once here: facets and segments read the labels of the same shots query after query.
      for (const v of missing)
        byVideo.set(
          v,
          (read.get(v) ?? []).map((r) => ({ ...r, parsedLabels: labelsOf(r) })),
        );
    }
    return new Map(videoIds.map((v) => [v, byVideo!.get(v) ?? []]));
  }

  /** The k a look-up of this query vector ended at last time (see SearchService.admitted). */
  startK(query: Float32Array, key: string): number | undefined {
    return this.kHints.get(query)?.get(key);
  }

  noteK(query: Float32Array, key: string, k: number): void {
    let m = this.kHints.get(query);
    if (!m) this.kHints.set(query, (m = new Map()));
    m.set(key, k);
  }

  /** The query's null statistics against the sample (calibration.ts), computed once per query vector. */
  nullStatsOf(sample: CachedSample, q: Float32Array): NullStats {
    let st = sample.statsByQuery.get(q);
    if (!st) {
      const sims = Float64Array.from(sample.rows.dots(q, sample.n).dots);
      sample.statsByQuery.set(q, (st = nullStatsOfSims(sims, q.length)));
    }
    return st;
  }

  /**
   * Per-account values derived from its index content (transcript document frequencies, its label
   * words, …), kept until the account's content changes. At most MEMO_MAX per account.
   */
  memo<T>(accountId: string, key: string, compute: () => Promise<T>): Promise<T> {
    return remember(this.memos, accountId, key, MEMO_MAX, compute);
  }

  /**
   * Like memo, for lists a query's text leads to (its transcript matches, the shots its words
   * name): larger values, so fewer of them (RESULT_MEMO_MAX per account, least recently used out
   * first; a query adds a handful). A repeated query, or the next page of one, does not redo its
   * full-text look-ups; the vector search always runs.
   */
  memoResult<T>(accountId: string, key: string, compute: () => Promise<T>): Promise<T> {
    return remember(this.results, accountId, key, RESULT_MEMO_MAX, compute);
  }

  async onVideoIndexed(videoId: string): Promise<void> {
    const accountId = await this.store.accountOfVideo(videoId);
    if (accountId) this.forgetAccount(accountId);
    await this.backend.onVideoIndexed(videoId, accountId);
  }

  /** The videos the backend holds rows of in memory (none for pgvector). */
  heldVideoIds(): string[] {
    return this.backend.heldVideoIds?.() ?? [];
  }

  async onVideosDeleted(videoIds: string[]): Promise<void> {
    // The rows are gone, so the account is unknown here: drop every cached sample (cheap to redo).
    this.samples.clear();
    this.memos.clear();
    this.shots.clear();
    this.results.clear();
    await this.backend.onVideosDeleted(videoIds);
  }

  /**
   * An idle server lets go of what rebuilds on use: calibration samples, memoised results and
   * shot rows, and the backend's exact-vector cache (up to search_cache_mb). Not the in-memory
   * index (rebuilding it reads every vector) nor the query-text embeddings (a cached query needs
   * no model, which may be unloaded). The next search per account pays the rebuild (BENCHMARKS.md,
   * "Idle memory").
   */
  releaseCaches(idleMs = 0): boolean {
    // Models unload without a search noticing (a cached query embedding needs none): a server
    // still answering searches keeps what makes them cheap.
    if (Date.now() - this.lastUsedAt < idleMs) return false;
    this.samples.clear();
    this.memos.clear();
    this.shots.clear();
    this.results.clear();
    this.backend.releaseCaches?.();
    return true;
  }

  private forgetAccount(accountId: string): void {
    for (const k of [...this.samples.keys()]) if (k.startsWith(`${accountId}\u0000`)) this.samples.delete(k);
    this.memos.delete(accountId);
    this.shots.delete(accountId);
    this.results.delete(accountId);
  }
}
