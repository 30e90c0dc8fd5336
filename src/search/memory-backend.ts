import { toFloat32 } from "../indexing/store.ts";
import { createVectorIndex, type VectorIndex } from "../vector/index.ts";
import type { NearestRequest, VectorBackend, VectorHit } from "./indexes.ts";
import type { SearchStore, VectorKind } from "./store.ts";

interface KindIndex {
  index: VectorIndex;
  /** Accounts whose rows are loaded (an account is loaded on its first search). */
  loaded: Set<string>;
  /** Row ids per video, to replace or drop a video's rows. */
  byVideo: Map<string, number[]>;
}

/**
 * Nearest neighbours from the in-memory index of src/vector: one index per (model, kind), one
 * partition per account, collection and video as the index's filter groups. An account's rows
 * are read from the store on its first search; afterwards `onVideoIndexed` / `onVideosDeleted`
 * keep them in step. Filters (collection, video, label-filtered shots) are applied by the index
 * before it ranks anything; rescoring reads exact vectors from `frame_vectors` / `shot_vectors`.
 */
export class MemoryVectorBackend implements VectorBackend {
  readonly name = "memory";
  private readonly indexes = new Map<string, KindIndex>();
  /** Collection / video id → the index's group number (never reused: a counter, not the map size). */
  private readonly groupIds = new Map<string, number>();
  private nextGroup = 0;
  /** Exact vectors read during the current `nearest` call's session (see NearestRequest.session). */
  private session: { kind: VectorKind; vectors: Map<number, Float32Array> } | null = null;
  private readonly sessions = new WeakMap<object, Map<string, Map<number, Float32Array>>>();

  constructor(private readonly store: SearchStore) {}

  private group(id: string): number {
    let n = this.groupIds.get(id);
    if (n === undefined) this.groupIds.set(id, (n = this.nextGroup++));
    return n;
  }

  private kindIndex(kind: VectorKind, modelId: string, dim: number): KindIndex {
    const key = `${modelId}\u0000${kind}\u0000${dim}`;
    let ki = this.indexes.get(key);
    if (!ki) {
      const source = { getVectors: (ids: readonly number[]) => this.exact(kind, ids) };
      ki = { index: createVectorIndex({ dim, source }), loaded: new Set(), byVideo: new Map() };
      this.indexes.set(key, ki);
    }
    return ki;
  }

  /**
   * Exact vectors for rescoring. Blobs come back from SQLite in their own 4-byte-aligned buffers,
   * so they are viewed, not copied. Within one look-up session (the same query asked again with a
   * larger k) vectors read for the smaller k are reused instead of read again.
   */
  private exact(kind: VectorKind, ids: readonly number[]): (Float32Array | undefined)[] {
    const reuse = this.session?.kind === kind ? this.session.vectors : null;
    const missing = reuse ? ids.filter((id) => !reuse.has(id)) : (ids as number[]);
    const blobs = missing.length ? this.store.vectors(kind, missing) : new Map<number, Uint8Array>();
    return ids.map((id) => {
      const have = reuse?.get(id);
      if (have) return have;
      const b = blobs.get(id);
      if (!b) return undefined;
      const v = b.byteOffset % 4 === 0 && b.byteLength % 4 === 0 ? new Float32Array(b.buffer, b.byteOffset, b.byteLength >> 2) : toFloat32(b);
      reuse?.set(id, v);
      return v;
    });
  }

  private addRows(ki: KindIndex, accountId: string, rows: Iterable<{ id: number; video_id: string; collection_id: string; embedding: Uint8Array }>): void {
    const dim = ki.index.dim;
    let batch = [];
    for (const r of rows) {
      const vector = toFloat32(r.embedding);
      if (vector.length !== dim) continue;
      batch.push({ rowId: r.id, vector, partition: accountId, groupA: this.group(r.collection_id), groupB: this.group(r.video_id) });
      let list = ki.byVideo.get(r.video_id);
      if (!list) ki.byVideo.set(r.video_id, (list = []));
      list.push(r.id);
      if (batch.length === 4096) {
        ki.index.add(batch);
        batch = [];
      }
    }
    ki.index.add(batch);
  }

  rows(): number {
    let n = 0;
    for (const ki of this.indexes.values()) n += ki.index.size;
    return n;
  }

  nearest(req: NearestRequest): VectorHit[] {
    const { kind, scope, modelId, query } = req;
    const ki = this.kindIndex(kind, modelId, query.length);
    if (!ki.loaded.has(scope.accountId)) {
      this.addRows(ki, scope.accountId, this.store.rowsForIndex(kind, { accountId: scope.accountId }, modelId));
      ki.loaded.add(scope.accountId);
    }
    const allow: { collections?: number[]; videos?: number[]; excludeRowIds?: Set<number> } = {};
    if (scope.collectionId) allow.collections = [this.group(scope.collectionId)];
    let videos = scope.videoId ? [scope.videoId] : null;
    if (req.allowShots) {
      // Label filter: only the listed videos, and inside them only the rows of the allowed shots.
      videos = (videos ?? [...req.allowShots.keys()]).filter((v) => req.allowShots!.has(v));
      const allowed = this.store.idsInShots(kind, req.allowShots);
      allow.excludeRowIds = new Set(videos.flatMap((v) => (ki.byVideo.get(v) ?? []).filter((id) => !allowed.has(id))));
    }
    if (videos) allow.videos = videos.map((v) => this.group(v));
    if (ki.index.partitionSize(scope.accountId) === 0 || allow.videos?.length === 0) return [];
    this.session = req.session ? { kind, vectors: this.sessionVectors(req.session, `${modelId}\u0000${kind}`) } : null;
    try {
      return ki.index.search(query, { partition: scope.accountId, k: req.k, allow }).map((r) => ({ id: r.rowId, raw: r.score }));
    } finally {
      this.session = null;
    }
  }

  private sessionVectors(session: object, key: string): Map<number, Float32Array> {
    let byKind = this.sessions.get(session);
    if (!byKind) this.sessions.set(session, (byKind = new Map()));
    let m = byKind.get(key);
    if (!m) byKind.set(key, (m = new Map()));
    return m;
  }

  onVideoIndexed(videoId: string, accountId: string | null): void {
    for (const [key, ki] of this.indexes) {
      const old = ki.byVideo.get(videoId);
      if (old) {
        ki.index.remove(old);
        ki.byVideo.delete(videoId);
      }
      if (!accountId || !ki.loaded.has(accountId)) continue;
      const [modelId, kind] = key.split("\u0000") as [string, VectorKind];
      this.addRows(ki, accountId, this.store.rowsForIndex(kind, { accountId, videoId }, modelId));
    }
  }

  onVideosDeleted(videoIds: string[]): void {
    for (const ki of this.indexes.values()) {
      for (const v of videoIds) {
        const old = ki.byVideo.get(v);
        if (!old) continue;
        ki.index.remove(old);
        ki.byVideo.delete(v);
      }
    }
    for (const v of videoIds) this.groupIds.delete(v);
  }
}
