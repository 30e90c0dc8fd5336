import type { Logger } from "../core/logger.ts";
import type { NearestRequest, VectorBackend, VectorHit } from "./indexes.ts";
import { HNSW_MAX_DIM, type HnswIndexInfo, PgVectorStore } from "./pgvector-store.ts";
import type { SearchStore, VectorKind } from "./store.ts";

/** Tuning of `vector_backend = "pgvector"` (defaults: docs/POSTGRES.md, "Vectors in PostgreSQL"). */
export interface PgVectorOptions {
  /** Scopes up to this many vectors are compared exactly (as the in-memory index does below its `exactBelow`). */
  exactScanMax?: number;
  /** `hnsw.ef_search` floor; a look-up uses max(this, 2k), at most 1000 (pgvector's limit). */
  efSearch?: number;
  /** `hnsw.max_scan_tuples` of an iterative (filtered) scan. */
  maxScanTuples?: number;
  /** Build parameters of the HNSW indexes this backend makes (pgvector's defaults: 16, 64). */
  m?: number;
  efConstruction?: number;
  logger?: Logger;
}

/**
 * Smaller than the in-memory index's 20 000: an exact scan in PostgreSQL reads each row through
 * the join and computes its distance in the executor, ~10 µs a row on the bench box (20 000 rows
 * ≈ 200 ms under load, bench/pg-bench.ts), where the HNSW walk costs about the same at any size.
 */
const EXACT_SCAN_MAX = 5_000;
const EF_SEARCH = 100;
const EF_SEARCH_MAX = 1000;
const MAX_SCAN_TUPLES = 100_000;

/**
 * Nearest neighbours asked of PostgreSQL (pgvector), for servers that keep no index of their own:
 * no warm-up, no snapshot, nothing to keep in step after commits — every `serve` process answers
 * from the same HNSW indexes. A small scope (one video, a small collection or account, a label
 * filter naming few rows) is compared exactly in the database; a larger one goes through the
 * dimension's HNSW index with an iterative scan that filters by scope and model as it walks.
 * Cosine similarity, as the in-memory index returns it.
 */
export class PgVectorBackend implements VectorBackend {
  readonly name = "pgvector";
  private readonly pg: PgVectorStore;
  private readonly exactScanMax: number;
  /** Index builds started by this process, per `kind:dim` (each dimension's is asked for once). */
  private readonly builds = new Map<string, Promise<void>>();

  constructor(
    private readonly store: SearchStore,
    pg: PgVectorStore,
    private readonly o: PgVectorOptions = {},
  ) {
    this.pg = pg;
    this.exactScanMax = o.exactScanMax ?? EXACT_SCAN_MAX;
  }

  async nearest(req: NearestRequest): Promise<VectorHit[]> {
    const { kind, scope, modelId, query, k } = req;
    const dim = query.length;
    const ids = req.allowShots ? [...(await this.store.idsInShots(kind, req.allowShots))] : null;
    if (ids && !ids.length) return [];
    const small =
      dim > HNSW_MAX_DIM ||
      scope.videoId !== undefined ||
      (ids !== null && ids.length <= this.exactScanMax) ||
      (await this.pg.countInScope(kind, scope, modelId, dim, this.exactScanMax)) <= this.exactScanMax;
    if (small) return await this.pg.nearestExact(kind, scope, modelId, query, k, ids);
    this.ensureIndex(kind, dim);
    const efSearch = Math.min(EF_SEARCH_MAX, Math.max(this.o.efSearch ?? EF_SEARCH, 2 * k));
    return await this.pg.nearestHnsw(kind, scope, modelId, query, k, ids, {
      efSearch,
      maxScanTuples: Math.max(this.o.maxScanTuples ?? MAX_SCAN_TUPLES, efSearch),
    });
  }

  /**
   * Starts building the HNSW index of a kind and dimension once per process (IF NOT EXISTS: other
   * processes' builds and earlier starts are left alone). Not awaited by searches: until it is
   * valid they are exact scans, slower but right.
   */
  private ensureIndex(kind: VectorKind, dim: number): void {
    if (dim > HNSW_MAX_DIM) return;
    const key = `${kind}:${dim}`;
    if (this.builds.has(key)) return;
    const build = this.pg
      .createHnswIndex(kind, dim, { m: this.o.m ?? 16, efConstruction: this.o.efConstruction ?? 64 })
      .catch((e: Error) => {
        // Asked again on the next look-up that needs it.
        this.builds.delete(key);
        this.o.logger?.warn("could not build the pgvector HNSW index", { kind, dim, err: e.message });
      });
    this.builds.set(key, build);
  }

  /** Resolves once the index builds this process started are over. */
  async whenIdle(): Promise<void> {
    await Promise.all([...this.builds.values()]);
  }

  rows(): number {
    return 0;
  }

  /** A new video may bring a new dimension (a newly installed model): its index is started now, not on the first large search. */
  async onVideoIndexed(videoId: string): Promise<void> {
    for (const kind of ["frames", "shots"] as const)
      for (const dim of await this.pg.dimsOfVideo(kind, videoId)) this.ensureIndex(kind, dim);
  }

  /** Rows go with their videos (ON DELETE CASCADE); the HNSW indexes follow the table. */
  async onVideosDeleted(): Promise<void> {}

  /** What /readyz and doctor say: the indexes there are and whether each is usable. */
  async indexes(): Promise<HnswIndexInfo[]> {
    return await this.pg.hnswIndexes();
  }

  statusLine(): string {
    return "pgvector: HNSW indexes in PostgreSQL (no in-memory index, no warm-up)";
  }
}
