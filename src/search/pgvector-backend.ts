import type { Logger } from "../core/logger.ts";
import type { NearestRequest, VectorBackend, VectorHit } from "./indexes.ts";
import { HNSW_MAX_DIM, type HnswIndexInfo, hnswIndexName, PgVectorStore } from "./pgvector-store.ts";
import type { SearchStore, VectorKind } from "./store.ts";

/** Tuning of `vector_backend = "pgvector"` (defaults: docs/POSTGRES.md, "Vectors in PostgreSQL"). */
export interface PgVectorOptions {
  /**
   * Scopes up to this many vectors are compared exactly. Unset: the crossover `exactCrossover`
   * works out from the index's size (never under 5 000).
   */
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
  /** Most `hnsw.max_scan_tuples` of an iterative (filtered) scan; a scope gets ~2 × ef_search / its share of the index. */
  maxScanTuples?: number;
  /** Build parameters of the HNSW indexes this backend makes (pgvector's defaults: 16, 64). */
  m?: number;
  efConstruction?: number;
  logger?: Logger;
}

/**
 * Below this many rows a scope is always compared exactly: a walk for so few in-scope rows reads
 * ~candidates / share tuples and its recall was the lowest measured (0.80 at 5 000 of 200 000 rows,
 * text-like queries, bench/pg-scope-bench.ts, BENCHMARKS.md "Scoped look-ups on pgvector").
 */
const EXACT_SCAN_MIN = 5_000;
/** Nor above this many: the exact scan grows with the scope (~7–18 µs a row), the walk does not (the count's cap too). */
const EXACT_SCAN_CAP = 50_000;
/**
 * The cost of a tuple the walk hands over (the graph's distances behind it, the join to the scope)
 * over that of a row of the exact scan (fetched by key from TOAST, compared in the executor), fitted
 * to bench/pg-scope-bench.ts at 200 000 rows (text-like, load 1.7–2.3): exact 54 / 141 / 385 ms for
 * 5 000 / 20 000 / 50 000 rows, the walk for 2 000 in-scope rows 141 / 136 / 123 ms at those shares
 * (61 ms unscoped): the two cost the same near 20 000 rows there, where the formula says 24 500.
 */
const WALK_TO_EXACT = 1.5;
/**
 * In-scope rows a walk is asked for, per ef_search: pgvector stops ef_search at 1 000, an iterative
 * scan asked for more goes on walking — at 200 000 rows text-like recall@10 went 0.74 → 0.92
 * unscoped (28 → 61 ms against 1 000 rows asked) and 0.87 → 0.89 on half the rows.
 */
const CANDIDATES_PER_EF = 2;
/**
 * hnsw.ef_search of an image query and of a text one: at 100 k clustered 512-d rows (bench/pg-bench.ts
 * (c), BENCHMARKS.md) recall@10 was 0.90 / 0.92 / 1.0 for image-like queries at 100 / 400 / 1000,
 * and 0.50 / 0.72 / 0.92 for text-like ones, for 67–134 ms under load (the in-memory index: 0.96
 * and 0.91).
 */
const EF_SEARCH = 400;
const TEXT_EF_SEARCH = 1000;
const EF_SEARCH_MAX = 1000;
/** The most tuples a filtered walk may read (its budget scales with the scope's share, up to this). */
const MAX_SCAN_TUPLES = 500_000;
/** The budget when the index's size is not known (no valid index yet: the planner scans exactly anyway). */
const MAX_SCAN_TUPLES_UNKNOWN = 100_000;

/**
 * The scope size up to which an exact scan is cheaper than the walk, for an index of `indexRows`
 * rows and a walk asked for `candidates` in-scope rows. A scope of n rows is a share n / N of the
 * index; the walk reads about candidates × N / n tuples to collect its candidates, the exact scan n
 * rows: equal at n = √(candidates × N × WALK_TO_EXACT). So ~24 500 at 200 000 rows and 50 000 (the
 * cap) from ~830 000 rows for a text query (2 000 candidates), kept within [EXACT_SCAN_MIN, EXACT_SCAN_CAP].
 */
export function exactCrossover(indexRows: number | null, candidates: number): number {
  if (indexRows === null) return EXACT_SCAN_MIN;
  const n = Math.sqrt(candidates * indexRows * WALK_TO_EXACT);
  return Math.round(Math.min(EXACT_SCAN_CAP, Math.max(EXACT_SCAN_MIN, n)));
}

/**
 * max_scan_tuples of a walk over a scope of at least `inScope` rows (a count stopped at its cap:
 * a lower bound, so the budget errs long): twice what the walk should read to collect its
 * candidates. The walk stops at its LIMIT, so a wider scope reads fewer; the budget only bounds a
 * scope whose rows sit far from the query in the graph.
 */
export function scanBudget(indexRows: number | null, inScope: number, candidates: number, most: number): number {
  if (indexRows === null) return Math.max(candidates, Math.min(most, MAX_SCAN_TUPLES_UNKNOWN));
  const share = Math.min(1, Math.max(1, inScope) / indexRows);
  return Math.max(candidates, Math.min(most, Math.ceil((2 * candidates) / share)));
}

/**
 * Nearest neighbours asked of PostgreSQL (pgvector), for servers that keep no index of their own:
 * no warm-up, no snapshot, nothing to keep in step after commits — every `serve` process answers
 * from the same HNSW indexes. A small scope (one video, a collection or account below the
 * crossover, a label filter naming few rows) is compared exactly in the database; a larger one goes
 * through the dimension's HNSW index with an iterative scan that filters by scope and model as it
 * walks, asked for 2 × ef_search rows of the scope (not 4k): a walk that stops at its first 4k
 * in-scope rows is as shallow as an unscoped walk with ef_search × the scope's share, and lost a
 * third of the true top-10 on a collection of a tenth of the rows (recall 0.69, bench/pg-scope-bench.ts).
 * Cosine similarity, as the in-memory index returns it.
 */
export class PgVectorBackend implements VectorBackend {
  readonly name = "pgvector";
  private readonly pg: PgVectorStore;
  /** Index builds started by this process, per `kind:dim` (each dimension's is asked for once). */
  private readonly builds = new Map<string, Promise<void>>();

  constructor(
    private readonly store: SearchStore,
    pg: PgVectorStore,
    private readonly o: PgVectorOptions = {},
  ) {
    this.pg = pg;
  }

  async nearest(req: NearestRequest): Promise<VectorHit[]> {
    const { kind, scope, modelId, query, k } = req;
    const dim = query.length;
    const ids = req.allowShots ? [...(await this.store.idsInShots(kind, req.allowShots))] : null;
    if (ids && !ids.length) return [];
    if (dim > HNSW_MAX_DIM || scope.videoId !== undefined)
      return await this.pg.nearestExact(kind, scope, modelId, query, k, ids);
    const imageOnly = req.probe !== undefined && req.probe.growth === undefined;
    const floor = imageOnly ? (this.o.efSearch ?? EF_SEARCH) : (this.o.textEfSearch ?? TEXT_EF_SEARCH);
    const efSearch = Math.min(EF_SEARCH_MAX, Math.max(floor, 2 * k));
    const candidates = CANDIDATES_PER_EF * efSearch;
    const indexRows = await this.pg.indexRows(kind, dim);
    const crossover = this.o.exactScanMax ?? exactCrossover(indexRows, candidates);
    if (ids !== null && ids.length <= crossover) return await this.pg.nearestExact(kind, scope, modelId, query, k, ids);
    const counted = await this.pg.countInScope(kind, scope, modelId, crossover);
    if (counted <= crossover) return await this.pg.nearestExact(kind, scope, modelId, query, k, ids);
    this.ensureIndex(kind, dim);
    const inScope = ids ? Math.min(ids.length, counted) : counted;
    return await this.pg.nearestHnsw(kind, scope, modelId, query, k, ids, {
      efSearch,
      maxScanTuples: scanBudget(indexRows, inScope, candidates, this.o.maxScanTuples ?? MAX_SCAN_TUPLES),
      candidates,
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
