import { AppError } from "../core/errors.ts";
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
import type { NearestRequest, VectorBackend, VectorHit, VectorSearchInfo } from "./indexes.ts";
import type { WarmableIndex, WarmProgress } from "./index-warmer.ts";
import type { IndexRow, SearchStore, VectorKind } from "./store.ts";
import { ExactVectorCache } from "./vector-cache.ts";

/** Vector index options the app may tune (see VectorIndexOptions). */
export type MemoryIndexOptions = Partial<Pick<VectorIndexOptions, "trainAt" | "lists" | "centerSample" | "exactBelow">>;

/** What one look-up session (one query, k raised step by step) keeps per index. */
interface SessionState {
  vectors: Map<number, Float32Array>;
  scan: ScanReuse;
  allow: AllowFilter | null;
}

interface KindIndex {
  kind: VectorKind;
  index: VectorIndex;
  /** Accounts loaded on their first search (no warm-up pass running: the CLI, an app never started). */
  loaded: Set<string>;
  /** Row ids per video, to replace or drop a video's rows. */
  byVideo: Map<string, number[]>;
}

const KINDS: readonly VectorKind[] = ["frames", "shots"];
/** Most rows a video filter passes to the index as explicit row ids (AllowFilter.rowIds). */
const ROW_FILTER_MAX = 65_536;

/**
 * The background load of every account's rows (index-warmer.ts drives it, a page per step), by
 * ascending row id, frames then shots. The split of work that keeps each row in the index exactly
 * once while videos change under it: rows of a kind with ids up to its cursor are the event hooks'
 * (a re-indexed video is dropped and its current rows up to the cursor added back), rows above it
 * are the pass's, read from the store as they are when their page comes.
 */
interface WarmPass {
  cursor: Record<VectorKind, number>;
  /** Kinds whose last page was read: every row of theirs is the hooks' from then on. */
  done: Record<VectorKind, boolean>;
  /** The highest ids when the pass began (progress only: rows written later are read too). */
  last: Record<VectorKind, number>;
  rows: number;
}

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
  private readonly indexes = new Map<string, KindIndex>();
  /** Collection / video id → the index's group number (never reused: a counter, not the map size). */
  private readonly groupIds = new Map<string, number>();
  private nextGroup = 0;
  /** Exact vectors read during the current `nearest` call's session (see NearestRequest.session). */
  private sessionVectors: Map<number, Float32Array> | null = null;
  private readonly sessions = new WeakMap<object, Map<string, SessionState>>();
  private warm: WarmPass | null = null;

  lastSearch: VectorSearchInfo | null = null;

  constructor(
    private readonly store: SearchStore,
    private readonly cache: ExactVectorCache = new ExactVectorCache(0),
    /** Index tuning (list training thresholds): tests lower `trainAt` to exercise inverted lists on a few thousand rows. */
    private readonly indexOptions: MemoryIndexOptions = {},
  ) {}

  async whenIdle(): Promise<void> {
    await Promise.all([...this.indexes.values()].map((ki) => ki.index.whenTrained()));
  }

  releaseCaches(): void {
    this.cache.clear();
  }

  private group(id: string): number {
    let n = this.groupIds.get(id);
    if (n === undefined) this.groupIds.set(id, (n = this.nextGroup++));
    return n;
  }

  private kindIndex(kind: VectorKind, modelId: string, dim: number): KindIndex {
    const key = `${modelId}\u0000${kind}\u0000${dim}`;
    let ki = this.indexes.get(key);
    if (!ki) {
      const source = { getVectors: (ids: readonly number[]) => this.exact(key, kind, ids) };
      ki = {
        kind,
        index: createVectorIndex({ ...this.indexOptions, dim, source }),
        loaded: new Set(),
        byVideo: new Map(),
      };
      this.indexes.set(key, ki);
    }
    return ki;
  }

  /**
   * Exact vectors for rescoring: from this query's session (the same query asked again with a
   * larger k), then the cache, then SQLite. Blobs are copied into one array: asking each blob for
   * its `.buffer` makes the engine allocate an ArrayBuffer object per blob, which cost more than
   * the copy.
   */
  private exact(index: string, kind: VectorKind, ids: readonly number[]): (Float32Array | undefined)[] {
    // Set only around the index's search of this very index (exact is its source), so it is ours.
    const reuse = this.sessionVectors;
    const found = new Map<number, Float32Array>();
    const missing: number[] = [];
    for (const id of ids) {
      const v = reuse?.get(id) ?? this.cache.get(index, id);
      if (v) found.set(id, v);
      else missing.push(id);
    }
    if (missing.length) {
      const blobs = this.store.vectors(kind, missing);
      let bytes = 0;
      for (const b of blobs.values()) if (b.byteLength % 4 === 0) bytes += b.byteLength;
      const all = new Float32Array(bytes >> 2);
      const allBytes = new Uint8Array(all.buffer);
      let at = 0;
      for (const [id, b] of blobs) {
        if (b.byteLength % 4 !== 0) continue;
        allBytes.set(b, at);
        const v = all.subarray(at >> 2, (at + b.byteLength) >> 2);
        at += b.byteLength;
        found.set(id, v);
        this.cache.set(index, id, v);
      }
    }
    if (reuse) for (const [id, v] of found) reuse.set(id, v);
    return ids.map((id) => found.get(id));
  }

  private indexRow(
    ki: KindIndex,
    accountId: string,
    r: { id: number; video_id: string; collection_id: string },
    vector: Float32Array,
  ): VectorRow {
    let list = ki.byVideo.get(r.video_id);
    if (!list) ki.byVideo.set(r.video_id, (list = []));
    list.push(r.id);
    return {
      rowId: r.id,
      vector,
      partition: accountId,
      groupA: this.group(r.collection_id),
      groupB: this.group(r.video_id),
    };
  }

  /** One account's rows of one index (a first search without a warm-up pass). */
  private addRows(
    ki: KindIndex,
    accountId: string,
    rows: Iterable<{ id: number; video_id: string; collection_id: string; embedding: Uint8Array }>,
  ): void {
    const dim = ki.index.dim;
    let batch = [];
    for (const r of rows) {
      const vector = toFloat32(r.embedding);
      if (vector.length !== dim) continue;
      batch.push(this.indexRow(ki, accountId, r, vector));
      if (batch.length === 4096) {
        ki.index.add(batch);
        batch = [];
      }
    }
    ki.index.add(batch);
  }

  /** Rows of any account and model, each into the index of its model and dimension when `keep` says so. Returns how many went in. */
  private addIndexRows(
    kind: VectorKind,
    rows: readonly IndexRow[],
    keep: (ki: KindIndex, r: IndexRow) => boolean,
  ): number {
    const batches = new Map<KindIndex, VectorRow[]>();
    let n = 0;
    for (const r of rows) {
      if (!r.embedding.byteLength || r.embedding.byteLength % 4 !== 0) continue;
      const ki = this.kindIndex(kind, r.model_id, r.embedding.byteLength >> 2);
      if (!keep(ki, r)) continue;
      let batch = batches.get(ki);
      if (!batch) batches.set(ki, (batch = []));
      batch.push(this.indexRow(ki, r.account_id, r, toFloat32(r.embedding)));
      n++;
    }
    for (const [ki, batch] of batches) ki.index.add(batch);
    return n;
  }

  rows(): number {
    let n = 0;
    for (const ki of this.indexes.values()) n += ki.index.size;
    return n;
  }

  // ---- warm-up (index-warmer.ts) --------------------------------------------------------------

  /** Starts the pass over every account's rows; accounts already loaded on demand keep theirs. */
  beginWarm(): void {
    if (this.warm) return;
    const last = { frames: this.store.lastIndexRowId("frames"), shots: this.store.lastIndexRowId("shots") };
    this.warm = { cursor: { frames: 0, shots: 0 }, done: { frames: false, shots: false }, last, rows: 0 };
  }

  /**
   * Loads the next page (at most `maxRows` rows, in id order) and moves the cursor past it, in
   * one synchronous step: no hook can run between reading a page and owning its ids. False once
   * every row is in.
   */
  warmStep(maxRows: number): boolean {
    const w = this.warm;
    const kind = w && KINDS.find((k) => !w.done[k]);
    if (!w || !kind) return false;
    const page = this.store.indexRowsAfter(kind, w.cursor[kind], maxRows);
    w.rows += this.addIndexRows(kind, page, (ki, r) => !ki.loaded.has(r.account_id));
    if (page.length) w.cursor[kind] = page[page.length - 1].id;
    if (page.length < maxRows) w.done[kind] = true;
    return KINDS.some((k) => !w.done[k]);
  }

  get warmProgress(): WarmProgress | null {
    const w = this.warm;
    if (!w) return null;
    const done = KINDS.every((k) => w.done[k]);
    const total = w.last.frames + w.last.shots;
    const at = KINDS.reduce((n, k) => n + (w.done[k] ? w.last[k] : Math.min(w.cursor[k], w.last[k])), 0);
    return { rows: w.rows, fraction: done ? 1 : total ? at / total : 0, done };
  }

  /**
   * Every row of this account and model is in when, for each kind, the pass has read all of that
   * kind or its cursor is at or past the account's highest id: rows up to the cursor are the
   * pass's or the hooks' (see WarmPass), so none is missing. A tenant with no rows, or whose rows
   * came early, searches without waiting for everyone else's.
   */
  accountWarm(accountId: string, modelId: string): boolean {
    const w = this.warm;
    return !w || KINDS.every((k) => w.done[k] || this.store.lastIndexRowIdOf(k, accountId, modelId) <= w.cursor[k]);
  }

  /** Whether a row the hooks see belongs in the index now (see WarmPass). */
  private held(ki: KindIndex, r: IndexRow): boolean {
    const w = this.warm;
    return ki.loaded.has(r.account_id) || (!!w && (w.done[ki.kind] || r.id <= w.cursor[ki.kind]));
  }

  nearest(req: NearestRequest): VectorHit[] {
    const { kind, scope, modelId, query } = req;
    const ki = this.kindIndex(kind, modelId, query.length);
    if (!ki.loaded.has(scope.accountId) && !this.warm) {
      this.addRows(ki, scope.accountId, this.store.rowsForIndex(kind, { accountId: scope.accountId }, modelId));
      ki.loaded.add(scope.accountId);
    } else if (
      !ki.loaded.has(scope.accountId) &&
      !this.warmProgress!.done &&
      !this.accountWarm(scope.accountId, modelId)
    ) {
      // SearchIndexes.assertSearchable waits for the pass before a search gets here; never answer from half an index.
      throw new AppError("SEARCH_UNAVAILABLE", "The search index is loading after a restart; retry shortly", {
        "Retry-After": "1",
      });
    }
    // Within one look-up session (the same query asked again with a larger k) the filter, the
    // exact vectors read and the index's coarse pass are all reused.
    const s = req.session ? this.sessionState(req.session, `${modelId}\u0000${kind}`) : null;
    const allow = s?.allow ?? this.allowFor(ki, kind, req);
    if (s) s.allow = allow;
    if (ki.index.partitionSize(scope.accountId) === 0 || allow.videos?.length === 0) return [];
    this.sessionVectors = s?.vectors ?? null;
    try {
      const stats: SearchStats = {
        path: "empty",
        allowed: 0,
        coarse: 0,
        middle: 0,
        rescored: 0,
        ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
      };
      const hits = ki.index.search(query, {
        partition: scope.accountId,
        k: req.k,
        allow,
        reuse: s?.scan,
        probe: req.probe?.share,
        probeSqrtAt: req.probe?.sqrtAt,
        stats,
      });
      this.lastSearch = { kind, probe: req.probe, lists: stats.lists ?? 0, scanned: stats.scanned ?? 0 };
      return hits.map((r) => ({ id: r.rowId, raw: r.score }));
    } finally {
      this.sessionVectors = null;
    }
  }

  /** The index's filter for a request: collection, video, and the rows of label-filtered shots. */
  private allowFor(ki: KindIndex, kind: VectorKind, req: NearestRequest): AllowFilter {
    const { scope } = req;
    const allow: AllowFilter = {};
    if (scope.collectionId) allow.collections = [this.group(scope.collectionId)];
    let videos = scope.videoId ? [scope.videoId] : null;
    if (req.allowShots) {
      // Label filter: only the listed videos, and inside them only the rows of the allowed shots.
      videos = (videos ?? [...req.allowShots.keys()]).filter((v) => req.allowShots!.has(v));
      const allowed = this.store.idsInShots(kind, req.allowShots);
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

  onVideoIndexed(videoId: string, accountId: string | null): void {
    this.dropVideos([videoId]);
    if (!accountId) return;
    for (const kind of KINDS) {
      // Without a pass only accounts loaded on demand hold rows: skip the read when none of this kind does.
      if (!this.warm && ![...this.indexes.values()].some((ki) => ki.kind === kind && ki.loaded.has(accountId)))
        continue;
      this.addIndexRows(kind, this.store.indexRowsOfVideo(kind, videoId), (ki, r) => this.held(ki, r));
    }
  }

  private dropVideos(videoIds: string[]): void {
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

  onVideosDeleted(videoIds: string[]): void {
    this.dropVideos(videoIds);
    for (const v of videoIds) this.groupIds.delete(v);
  }
}
