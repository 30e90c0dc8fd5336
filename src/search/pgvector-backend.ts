import type { Logger } from "../core/logger.ts";
import type { NearestRequest, VectorBackend, VectorHit } from "./indexes.ts";
import { HNSW_MAX_DIM, type HnswIndexInfo, hnswIndexName, PgVectorStore } from "./pgvector-store.ts";
import type { SearchStore, VectorKind } from "./store.ts";

/** Tuning of `vector_backend = "pgvector"` (defaults: docs/POSTGRES.md, "Vectors in PostgreSQL"). */
export interface PgVectorOptions {
  /** Scopes up to this many vectors are compared exactly (as the in-memory index does below its `exactBelow`). */
  exactScanMax?: number;
  /** `hnsw.ef_search` floor of an image query; a look-up uses max(this, 2k), at most 1000 (pgvector's limit). */
  efSearch?: number;
  /**
   * The same for a text query, or one whose kind the request does not say (its probe policy tells:
   * search/probe-policy.ts; a filtered or exact request has none). A text embedding sits off the
   * image manifold (CLIP's modality gap), where the graph's greedy walk loses its way: it needs a
   * longer candidate list for the same recall (bench/pg-bench.ts, BENCHMARKS.md).
   */
  textEfSearch?: number;
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
/**
 * hnsw.ef_search of an image query and of a text one: at 100 k clustered 512-d rows (bench/pg-bench.ts
 * (c), BENCHMARKS.md) recall@10 was 0.90 / 0.92 / 1.0 for image-like queries at 100 / 400 / 1000,
 * and 0.50 / 0.72 / 0.92 for text-like ones, for 67–134 ms under load (the in-memory index: 0.96
 * and 0.91).
 */
const EF_SEARCH = 400;
const TEXT_EF_SEARCH = 1000;
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
    const imageOnly = req.probe !== undefined && req.probe.growth === undefined;
    const floor = imageOnly ? (this.o.efSearch ?? EF_SEARCH) : (this.o.textEfSearch ?? TEXT_EF_SEARCH);
    const efSearch = Math.min(EF_SEARCH_MAX, Math.max(floor, 2 * k));
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
    const build = this.build(kind, dim).catch((e: Error) => {
      // Asked again on the next look-up that needs it.
      this.builds.delete(key);
      this.o.logger?.warn("could not build the pgvector HNSW index", { kind, dim, err: e.message });
    });
    this.builds.set(key, build);
  }

  /**
   * One index build, unless the index is there or being built (by this process or another: the
   * builds of two servers would wait for each other, and PostgreSQL ends one as a deadlock). A
   * leftover of a failed build (INVALID, nobody building it) is dropped and built again; a build
   * that lost such a race leaves one, so the state is checked again after each try (3 at most).
   */
  private async build(kind: VectorKind, dim: number): Promise<void> {
    const name = hnswIndexName(kind, dim);
    let failure: unknown = null;
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = (await this.pg.hnswIndexes()).find((i) => i.name === name);
      if (found?.valid || found?.building) return;
      if (found) await this.pg.dropHnswIndex(kind, dim);
      try {
        await this.pg.createHnswIndex(kind, dim, { m: this.o.m ?? 16, efConstruction: this.o.efConstruction ?? 64 });
      } catch (e) {
        failure = e;
      }
    }
    const found = (await this.pg.hnswIndexes()).find((i) => i.name === name);
    if (!found?.valid && !found?.building) throw failure ?? new Error(`${name} is still not valid after 3 builds`);
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
