/**
 * Just over the ~450-line guide (~510): loading (index-loader.ts, index-warmer.ts), the snapshot
 * (index-snapshot.ts) and the memory budget (memory-admission.ts) are already apart; what stays is
 * one class's query path (candidates, one batched vector read, rescore), the exact-scan fallback,
 * the hooks that keep its rows in step and the lock that runs those hooks one at a time — they
 * share its maps of indexes, so they stay together.
 */
import { AppError } from "../core/errors.ts";
import { Mutex, withLock } from "../core/mutex.ts";
import type { Logger } from "../core/logger.ts";
import { toFloat32 } from "../indexing/store.ts";
import {
  createVectorIndex,
  type AllowFilter,
  type ScanReuse,
  type SearchStats,
  type VectorIndex,
  type VectorIndexOptions,
  type VectorRow,
} from "../vector/index.ts";
import { IndexLoader } from "./index-loader.ts";
import type { SnapshotOptions } from "./index-snapshot.ts";
import {
  StoreVectorBackend,
  type NearestRequest,
  type VectorBackend,
  type VectorHit,
  type VectorSearchInfo,
} from "./indexes.ts";
import type { WarmableIndex, WarmProgress } from "./index-warmer.ts";
import { MemoryAdmission } from "./memory-admission.ts";
import type { IndexRow, SearchStore, VectorKind } from "./store.ts";
import { ExactVectorCache } from "./vector-cache.ts";
import type { VectorChangeStore } from "./vector-change-store.ts";

/** Vector index options the app may tune (see VectorIndexOptions). */
export type MemoryIndexOptions = Partial<Pick<VectorIndexOptions, "trainAt" | "lists" | "centerSample" | "exactBelow">>;

/** What one look-up session (one query, k raised step by step) keeps per index. */
interface SessionState {
  vectors: Map<number, Float32Array>;
  scan: ScanReuse;
  allow: AllowFilter | null;
}

export interface KindIndex {
  key: string;
  kind: VectorKind;
  modelId: string;
  index: VectorIndex;
  /** Accounts loaded on their first search (no warm-up pass running: the CLI, an app never started). */
  loaded: Set<string>;
  /** Row ids per video, to replace or drop a video's rows. */
  byVideo: Map<string, number[]>;
  /** Videos per account (an account over the memory budget drops its rows). */
  videosOf: Map<string, Set<string>>;
}

export const KINDS: readonly VectorKind[] = ["frames", "shots"];

/** The parts of a MemoryVectorBackend beyond the defaults: the snapshot, the memory budget. */
export interface MemoryBackendOptions {
  /** Index tuning (list training thresholds): tests lower `trainAt` to exercise inverted lists on a few thousand rows. */
  index?: MemoryIndexOptions;
  /** The vector rows' change log (migration 010): with `snapshot`, what a snapshot is checked against. */
  changes?: VectorChangeStore;
  /** Where the index is saved and loaded from (index-loader.ts); absent: every start reads the store. */
  snapshot?: SnapshotOptions;
  /** Most bytes the index may hold (vector_memory_budget); 0 or absent: no limit. */
  memoryBudgetBytes?: number;
  /** `<data dir>/index`: the load journal and status file of the budget (memory-admission.ts). */
  stateDir?: string;
  logger?: Logger;
}
/** Most rows a video filter passes to the index as explicit row ids (AllowFilter.rowIds). */
const ROW_FILTER_MAX = 65_536;
/** A row the store no longer has, in a look-up's rows read (`exactCosines`). */
const GONE = new Float32Array(0);

/**
 * Nearest neighbours from the in-memory index of src/vector: one index per (model, kind, dim), one
 * partition per account, collection and video as the index's filter groups. Once the app starts,
 * a warm-up pass loads every account's rows in slices between other work (`beginWarm`,
 * `warmStep`); without one (the CLI) an account's rows are read on its first search. Either way
 * `onVideoIndexed` / `onVideosDeleted` keep the loaded rows in step. Filters (collection, video,
 * label-filtered shots) are applied by the index before it ranks anything; rescoring reads exact
 * vectors from `frame_vectors` / `shot_vectors`, through a bounded cache of recently rescored rows
 * (vector-cache.ts).
 */
export class MemoryVectorBackend implements VectorBackend, WarmableIndex {
  readonly name = "memory";
  /** The index of each (model, kind, dim); index-loader.ts fills and replaces them. */
  readonly indexes = new Map<string, KindIndex>();
  /** Collection / video id → the index's group number (never reused: a counter, not the map size). */
  readonly groupIds = new Map<string, number>();
  nextGroup = 0;
  /** Exact vectors read during the current `nearest` call's session (see NearestRequest.session). */
  /**
   * Held by every change to the index that reads the store first (a warm-up page, a re-indexed or
   * deleted video, an account's first load): each reads and applies while no other runs, so a
   * page read before a video was deleted is never added after its deletion was applied.
   */
  private readonly mutations = new Mutex();
  /** Accounts being loaded on demand, per index: a second first search waits for the same load. */
  private readonly loading = new Map<string, Promise<void>>();
  private readonly sessions = new WeakMap<object, Map<string, SessionState>>();
  private readonly indexOptions: MemoryIndexOptions;
  /** The warm-up: a pass over the store, or a snapshot and the changes since (index-loader.ts). */
  readonly loader: IndexLoader;
  readonly admission: MemoryAdmission;
  /** Accounts over the memory budget are searched here instead: exact scans of the database. */
  private readonly fallback: StoreVectorBackend;

  lastSearch: VectorSearchInfo | null = null;

  constructor(
    readonly store: SearchStore,
    private readonly cache: ExactVectorCache = new ExactVectorCache(0),
    opts: MemoryBackendOptions = {},
  ) {
    this.indexOptions = opts.index ?? {};
    this.fallback = new StoreVectorBackend(store);
    this.admission = new MemoryAdmission(
      opts.memoryBudgetBytes ?? 0,
      () => {
        let bytes = 0,
          rows = 0,
          layout = 0;
        for (const ki of this.indexes.values()) {
          bytes += ki.index.memoryBytes;
          rows += ki.index.size;
          layout = Math.max(layout, ki.index.rowBytes);
        }
        // Measured once there are rows enough; before, what the layout says a row costs.
        return { bytes, perRow: rows >= 4096 ? bytes / rows : layout };
      },
      opts.stateDir ?? null,
      opts.logger,
    );
    this.loader = new IndexLoader(this, opts.changes ?? null, opts.snapshot ?? null, opts.logger);
  }

  get options(): MemoryIndexOptions {
    return this.indexOptions;
  }

  async whenIdle(): Promise<void> {
    await Promise.all([...this.indexes.values()].map((ki) => ki.index.whenTrained()));
  }

  releaseCaches(): void {
    this.cache.clear();
  }

  group(id: string): number {
    let n = this.groupIds.get(id);
    if (n === undefined) this.groupIds.set(id, (n = this.nextGroup++));
    return n;
  }

  /** A new, empty index of one (model, kind, dim) (not registered: see kindIndex). */
  newKindIndex(kind: VectorKind, modelId: string, dim: number): KindIndex {
    const key = `${modelId}\u0000${kind}\u0000${dim}`;
    return {
      key,
      kind,
      modelId,
      // No source: nearest() fetches the candidates' vectors itself, one batched read per look-up.
      index: createVectorIndex({ ...this.indexOptions, dim }),
      loaded: new Set(),
      byVideo: new Map(),
      videosOf: new Map(),
    };
  }

  kindIndex(kind: VectorKind, modelId: string, dim: number): KindIndex {
    const key = `${modelId}\u0000${kind}\u0000${dim}`;
    let ki = this.indexes.get(key);
    if (!ki) this.indexes.set(key, (ki = this.newKindIndex(kind, modelId, dim)));
    return ki;
  }
  /**
   * Exact cosines for rescoring: `unit` against the rows `ids` (NaN for a row the store no longer
   * has), from the cache, then this query's session (the same query asked again with a larger k:
   * rows read while the cache is off or full), then one batched read from the store, whose rows
   * are kept in both. The cosines are computed in the same synchronous step that finds the rows
   * (vector-cache.ts), so an eviction by another search during the read only means reading again:
   * at most twice more, then a row still missing counts as gone. Blobs are copied into one array:
   * asking each blob for its `.buffer` makes the engine allocate an ArrayBuffer object per blob,
   * which cost more than the copy.
   */
  private async exactCosines(
    index: string,
    kind: VectorKind,
    ids: readonly number[],
    unit: Float32Array,
    session: Map<number, Float32Array> | null,
  ): Promise<Float64Array> {
    const read = session ?? new Map<number, Float32Array>();
    for (let attempt = 0; attempt < 3; attempt++) {
      const missing = this.cache.missing(index, ids, read);
      if (!missing.length) break;
      const blobs = await this.store.vectors(kind, missing);
      let bytes = 0;
      for (const b of blobs.values()) if (b.byteLength % 4 === 0) bytes += b.byteLength;
      const all = new Float32Array(bytes >> 2);
      const allBytes = new Uint8Array(all.buffer);
      let at = 0;
      for (const id of missing) {
        const b = blobs.get(id);
        // Gone (or not a float vector): an empty row, which matches no query and is not read again.
        if (!b || b.byteLength % 4 !== 0) {
          read.set(id, GONE);
          continue;
        }
        allBytes.set(b, at);
        const v = all.subarray(at >> 2, (at + b.byteLength) >> 2);
        at += b.byteLength;
        read.set(id, v);
        this.cache.set(index, id, v);
      }
    }
    return this.cache.cosines(index, ids, unit, read);
  }

  /**
   * One account's rows of one index, read on its first search (no warm-up pass ran). Single-flight:
   * searches arriving while it loads wait for the one load instead of adding the rows twice.
   */
  private loadAccount(ki: KindIndex, kind: VectorKind, accountId: string, modelId: string): Promise<void> {
    const key = `${ki.key}\u0000${accountId}`;
    let load = this.loading.get(key);
    if (!load) {
      load = (async () => {
        try {
          await withLock(this.mutations, async () => {
            await this.addRows(ki, accountId, this.store.rowsForIndex(kind, { accountId }, modelId));
            ki.loaded.add(accountId);
          });
        } finally {
          this.loading.delete(key);
        }
      })();
      this.loading.set(key, load);
    }
    return load;
  }

  /** Files a row under its video and account and makes the index's row of it. */
  indexRow(
    ki: KindIndex,
    accountId: string,
    r: { id: number; video_id: string; collection_id: string },
    vector: Float32Array,
  ): VectorRow {
    let list = ki.byVideo.get(r.video_id);
    if (!list) ki.byVideo.set(r.video_id, (list = []));
    list.push(r.id);
    let videos = ki.videosOf.get(accountId);
    if (!videos) ki.videosOf.set(accountId, (videos = new Set()));
    videos.add(r.video_id);
    return {
      rowId: r.id,
      vector,
      partition: accountId,
      groupA: this.group(r.collection_id),
      groupB: this.group(r.video_id),
    };
  }

  /**
   * Adds a batch of one index's rows within the memory budget (memory-admission.ts): rows of an
   * account over it are not added, and what the index held of that account goes, so the account
   * is searched from the database whole. A WebAssembly memory that cannot grow settles the same way.
   */
  private admit(ki: KindIndex, batch: VectorRow[]): number {
    const adm = this.admission;
    const rows = batch.filter((r) => !adm.isDegraded(r.partition));
    if (!rows.length) return 0;
    if (!adm.fits(rows.length)) {
      for (const a of new Set(rows.map((r) => r.partition))) this.degradeAccount(a, "over vector_memory_budget");
      return 0;
    }
    try {
      ki.index.add(rows);
      return rows.length;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      // memory.grow refused (the process's address space or memory): never retried.
      for (const a of new Set(rows.map((r) => r.partition)))
        this.degradeAccount(a, `the index could not grow: ${e.message}`);
      return 0;
    }
  }

  /** Drops an account's rows from every index; its searches read the database from now on. */
  degradeAccount(accountId: string, reason: string): void {
    for (const [key, ki] of this.indexes) {
      for (const v of ki.videosOf.get(accountId) ?? []) {
        const ids = ki.byVideo.get(v);
        if (!ids) continue;
        ki.index.remove(ids);
        this.cache.drop(key, ids);
        ki.byVideo.delete(v);
      }
      ki.videosOf.delete(accountId);
    }
    this.admission.degrade(accountId, reason);
  }

  /** One account's rows of one index (a first search without a warm-up pass). */
  private async addRows(
    ki: KindIndex,
    accountId: string,
    rows: AsyncIterable<{ id: number; video_id: string; collection_id: string; embedding: Uint8Array }>,
  ): Promise<void> {
    const dim = ki.index.dim;
    let batch = [];
    for await (const r of rows) {
      const vector = toFloat32(r.embedding);
      if (vector.length !== dim) continue;
      batch.push(this.indexRow(ki, accountId, r, vector));
      if (batch.length === 4096) {
        this.admit(ki, batch);
        batch = [];
      }
    }
    this.admit(ki, batch);
  }

  /** Rows of any account and model, each into the index of its model and dimension when `keep` says so. Returns how many went in. */
  addIndexRows(kind: VectorKind, rows: readonly IndexRow[], keep: (ki: KindIndex, r: IndexRow) => boolean): number {
    const batches = new Map<KindIndex, VectorRow[]>();
    for (const r of rows) {
      if (!r.embedding.byteLength || r.embedding.byteLength % 4 !== 0) continue;
      if (this.admission.isDegraded(r.account_id)) continue;
      const ki = this.kindIndex(kind, r.model_id, r.embedding.byteLength >> 2);
      if (!keep(ki, r)) continue;
      let batch = batches.get(ki);
      if (!batch) batches.set(ki, (batch = []));
      batch.push(this.indexRow(ki, r.account_id, r, toFloat32(r.embedding)));
    }
    let n = 0;
    for (const [ki, batch] of batches) n += this.admit(ki, batch);
    return n;
  }

  rows(): number {
    let n = 0;
    for (const ki of this.indexes.values()) n += ki.index.size;
    return n;
  }

  // ---- warm-up (index-warmer.ts drives it; index-loader.ts does it) ---------------------------

  async beginWarm(): Promise<void> {
    await this.loader.begin();
  }

  async warmStep(maxRows: number): Promise<boolean> {
    return await withLock(this.mutations, () => this.loader.step(maxRows));
  }

  get warmProgress(): WarmProgress | null {
    return this.loader.progress;
  }

  async accountWarm(accountId: string, modelId: string): Promise<boolean> {
    return await this.loader.accountWarm(accountId, modelId);
  }

  /** Saves the index to its snapshot now, when it is complete and idle (the app's close). */
  async saveSnapshot(): Promise<void> {
    await this.loader.saveNow();
  }

  async nearest(req: NearestRequest): Promise<VectorHit[]> {
    const { kind, scope, modelId, query } = req;
    if (this.admission.isDegraded(scope.accountId)) {
      this.lastSearch = { kind, probe: undefined, lists: 0, scanned: 0, fromDatabase: true };
      return await this.fallback.nearest(req);
    }
    const ki = this.kindIndex(kind, modelId, query.length);
    if (!ki.loaded.has(scope.accountId) && !this.loader.active) {
      await this.loadAccount(ki, kind, scope.accountId, modelId);
      if (this.admission.isDegraded(scope.accountId)) return await this.nearest(req);
    } else if (
      !ki.loaded.has(scope.accountId) &&
      !this.loader.progress!.done &&
      !(await this.loader.accountWarm(scope.accountId, modelId))
    ) {
      // SearchIndexes.assertSearchable waits for the pass before a search gets here; never answer from half an index.
      throw new AppError("SEARCH_UNAVAILABLE", "The search index is loading after a restart; retry shortly", {
        "Retry-After": "1",
      });
    }
    // Within one look-up session (the same query asked again with a larger k) the filter, the
    // exact vectors read and the index's coarse pass are all reused.
    const s = req.session ? this.sessionState(req.session, `${modelId}\u0000${kind}`) : null;
    const allow = s?.allow ?? (await this.allowFor(ki, kind, req));
    if (s) s.allow = allow;
    if (ki.index.partitionSize(scope.accountId) === 0 || allow.videos?.length === 0) return [];
    {
      const stats: SearchStats = {
        path: "empty",
        allowed: 0,
        coarse: 0,
        middle: 0,
        rescored: 0,
        ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
      };
      const candidates = ki.index.candidates(query, {
        partition: scope.accountId,
        k: req.k,
        allow,
        reuse: s?.scan,
        probe: req.probe?.share,
        probeAt: req.probe?.at,
        probeGrowth: req.probe?.growth,
        inDistribution: req.probe?.inDistribution,
        stats,
      });
      // Exact cosines: the cache's rows where it keeps them, else this session's, else one batched read.
      const cosines = candidates.rowIds.length
        ? await this.exactCosines(ki.key, kind, candidates.rowIds, candidates.unit, s?.vectors ?? null)
        : [];
      const hits = ki.index.rescoreCosines(candidates, cosines);
      this.lastSearch = { kind, probe: req.probe, lists: stats.lists ?? 0, scanned: stats.scanned ?? 0 };
      return hits.map((r) => ({ id: r.rowId, raw: r.score }));
    }
  }

  /** The index's filter for a request: collection, video, and the rows of label-filtered shots. */
  private async allowFor(ki: KindIndex, kind: VectorKind, req: NearestRequest): Promise<AllowFilter> {
    const { scope } = req;
    const allow: AllowFilter = {};
    if (scope.collectionId) allow.collections = [this.group(scope.collectionId)];
    let videos = scope.videoId ? [scope.videoId] : null;
    if (req.allowShots) {
      // Label filter: only the listed videos, and inside them only the rows of the allowed shots.
      videos = (videos ?? [...req.allowShots.keys()]).filter((v) => req.allowShots!.has(v));
      const allowed = await this.store.idsInShots(kind, req.allowShots);
      allow.excludeRowIds = new Set(videos.flatMap((v) => (ki.byVideo.get(v) ?? []).filter((id) => !allowed.has(id))));
    }
    if (videos) {
      allow.videos = videos.map((v) => this.group(v));
      // The videos' own rows, so the index reads only the chunks holding them (a one-video
      // search at 10 M rows: 47.7 → 1.1 ms). ROW_FILTER_MAX bounds the ids copied per search; a
      // larger filter keeps the mask over every row (the index does the same once the rows'
      // chunks cover half the partition).
      let n = 0;
      for (const v of videos) n += ki.byVideo.get(v)?.length ?? 0;
      if (n <= ROW_FILTER_MAX) allow.rowIds = videos.flatMap((v) => ki.byVideo.get(v) ?? []);
    }
    return allow;
  }

  private sessionState(session: object, key: string): SessionState {
    let byKind = this.sessions.get(session);
    if (!byKind) this.sessions.set(session, (byKind = new Map()));
    let st = byKind.get(key);
    if (!st) byKind.set(key, (st = { vectors: new Map(), scan: {}, allow: null }));
    return st;
  }

  async onVideoIndexed(videoId: string, accountId: string | null): Promise<void> {
    await withLock(this.mutations, async () => {
      await this.loader.noteChanged([videoId]);
      await this.reloadVideo(videoId, accountId);
    });
  }

  /** Replaces a video's rows with what the store holds now (the hook, and the loader's replay of changes). */
  async reloadVideo(videoId: string, accountId: string | null): Promise<void> {
    this.dropVideos([videoId]);
    if (!accountId) return;
    // Two kinds (frames, shots), one read each.
    for (const kind of KINDS) {
      // Without a pass only accounts loaded on demand hold rows: skip the read when none of this kind does.
      if (!this.loader.active && ![...this.indexes.values()].some((ki) => ki.kind === kind && ki.loaded.has(accountId)))
        continue;
      this.addIndexRows(kind, await this.store.indexRowsOfVideo(kind, videoId), (ki, r) => this.loader.held(ki, r));
    }
  }

  heldVideoIds(): string[] {
    const ids = new Set<string>();
    for (const ki of this.indexes.values()) for (const v of ki.byVideo.keys()) ids.add(v);
    return [...ids];
  }

  dropVideos(videoIds: string[]): void {
    for (const [key, ki] of this.indexes) {
      for (const v of videoIds) {
        const old = ki.byVideo.get(v);
        if (!old) continue;
        ki.index.remove(old);
        this.cache.drop(key, old);
        ki.byVideo.delete(v);
      }
    }
  }

  async onVideosDeleted(videoIds: string[]): Promise<void> {
    await withLock(this.mutations, async () => {
      await this.loader.noteChanged(videoIds);
      this.dropVideos(videoIds);
      for (const v of videoIds) this.groupIds.delete(v);
    });
  }
}
