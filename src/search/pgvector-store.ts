/**
 * The SQL of `vector_backend = "pgvector"` (PostgreSQL only): nearest neighbours asked of
 * PostgreSQL instead of the in-memory index. `frame_vectors.embedding` and `shot_vectors.embedding`
 * are `vector` columns without a fixed dimension (one column serves every model), so each
 * dimension gets its own HNSW index over an expression, partial to its rows:
 *
 *   CREATE INDEX frame_vectors_hnsw_512 ON frame_vectors
 *     USING hnsw ((embedding::vector(512)) vector_cosine_ops) WHERE vector_dims(embedding) = 512
 *
 * made (CONCURRENTLY: writes go on) the first time the backend meets a dimension, not by a
 * migration: which sizes an install uses is known only once its models are. A query uses it when
 * it orders by the same expression under the same predicate (`nearestHnsw`).
 */
import type { Executor, Param } from "../store/executor.ts";
import { embeddingParam } from "../indexing/embedding-sql.ts";
import type { SearchScope, VectorKind } from "./store.ts";

/** pgvector's HNSW indexes `vector` up to 2000 dimensions; larger models are scanned exactly. */
export const HNSW_MAX_DIM = 2000;

/** Search-time knobs of one HNSW look-up (pgvector 0.8 settings, each `SET LOCAL`). */
export interface HnswKnobs {
  /** `hnsw.ef_search`: the candidate list; at least k (pgvector returns at most ef_search rows per pass). */
  efSearch: number;
  /** `hnsw.max_scan_tuples`: how far an iterative scan may go before it gives up on a filter. */
  maxScanTuples: number;
  /**
   * Rows that pass the filter the walk is asked for (the inner LIMIT; default max(k, min(efSearch, 4k))),
   * the best k of them kept. A scope that is a fraction s of the index's rows makes the walk read
   * about candidates / s tuples: asking for ~efSearch in-scope rows gives a scoped look-up the
   * depth an unscoped one gets from efSearch.
   */
  candidates?: number;
}

export interface HnswIndexInfo {
  name: string;
  kind: VectorKind;
  dim: number;
  valid: boolean;
  /** Not valid yet because a build (CONCURRENTLY) is under way, here or in another process. */
  building: boolean;
}

const TABLES = {
  frames: { rows: "frames", vectors: "frame_vectors", key: "frame_id" },
  shots: { rows: "shots", vectors: "shot_vectors", key: "shot_id" },
} as const;

/** The HNSW index of a kind and dimension, as this store names them (the name is checked before any DDL). */
export const hnswIndexName = (kind: VectorKind, dim: number): string => `${TABLES[kind].vectors}_hnsw_${dim}`;

function checkDim(dim: number): number {
  if (!Number.isInteger(dim) || dim <= 0 || dim > 16_000) throw new Error(`not a vector dimension: ${dim}`);
  return dim;
}

export class PgVectorStore {
  constructor(private readonly db: Executor) {
    if (db.backend !== "postgres")
      throw new Error("vector_backend = pgvector needs the PostgreSQL store (database_url)");
  }

  private scopeSql(scope: SearchScope): { sql: string; args: string[] } {
    const parts = ["x.account_id = ?"];
    const args = [scope.accountId];
    if (scope.collectionId) {
      parts.push("x.collection_id = ?");
      args.push(scope.collectionId);
    }
    if (scope.videoId) {
      parts.push("x.video_id = ?");
      args.push(scope.videoId);
    }
    return { sql: parts.join(" AND "), args };
  }

  /**
   * Rows of a model in a scope, counted up to `cap` + 1 (the caller only asks "more than cap?": a
   * count that stops there stays cheap on a large account). `frames`/`shots` alone, not joined to
   * the vectors: a model has one dimension, and reading `vector_dims` of each vector fetched it from
   * TOAST (~4 µs a row: 820 ms for a 5 000-row collection of a 200 000-row account where this
   * count reads 50 ms, bench/pg-scope-bench.ts).
   */
  async countInScope(kind: VectorKind, scope: SearchScope, modelId: string, cap: number): Promise<number> {
    const t = TABLES[kind];
    const w = this.scopeSql(scope);
    return Number(
      (await this.db.get<{ n: number }>(
        `SELECT count(*) AS n FROM (SELECT 1 FROM ${t.rows} x WHERE ${w.sql} AND x.model_id = ? LIMIT ?) c`,
        ...w.args,
        modelId,
        cap + 1,
      ))!.n,
    );
  }

  /**
   * The rows of a dimension's HNSW index as PostgreSQL last counted them (`pg_class.reltuples`,
   * kept by VACUUM/ANALYZE and the build; a catalog read), or null without a valid, counted index.
   */
  async indexRows(kind: VectorKind, dim: number): Promise<number | null> {
    const row = await this.db.get<{ n: number }>(
      `SELECT c.reltuples AS n FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
        WHERE c.relname = ? AND i.indisvalid`,
      hnswIndexName(kind, checkDim(dim)),
    );
    const n = row ? Number(row.n) : -1;
    return n > 0 ? n : null;
  }

  /**
   * Exact k nearest by cosine inside a scope (optionally only `ids`): every row of the scope is
   * compared. The scope's rows are found first (`frames_account` / the video index / the ids) and
   * each one's vector fetched by key (the LATERAL … OFFSET 0 keeps that order): the vector table's
   * heap is small (the vectors sit in TOAST), so the planner otherwise estimates it at a few pages
   * and reads every vector of every account, ~1.3 s at 200 000 rows for a 5 000-row collection
   * (EXPLAIN ANALYZE, bench/pg-scope-bench.ts). The ORDER BY is not the HNSW index's expression.
   */
  async nearestExact(
    kind: VectorKind,
    scope: SearchScope,
    modelId: string,
    query: Float32Array,
    k: number,
    ids: readonly number[] | null,
  ): Promise<{ id: number; raw: number }[]> {
    const q = this.exactSql(kind, scope, modelId, query, k, ids);
    const rows = await this.withoutJit(async () => await this.db.all<{ id: number; raw: number }>(q.sql, ...q.args));
    return rows.map((r) => ({ id: Number(r.id), raw: Number(r.raw) }));
  }

  /** The plan `nearestExact` gets (tests check it fetches vectors by key; `EXPLAIN` only, nothing run). */
  async explainExact(kind: VectorKind, scope: SearchScope, modelId: string, query: Float32Array): Promise<string> {
    const q = this.exactSql(kind, scope, modelId, query, 10, null);
    const rows = await this.withoutJit(
      async () => await this.db.all<{ "QUERY PLAN": string }>(`EXPLAIN ${q.sql}`, ...q.args),
    );
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  }

  private exactSql(
    kind: VectorKind,
    scope: SearchScope,
    modelId: string,
    query: Float32Array,
    k: number,
    ids: readonly number[] | null,
  ): { sql: string; args: Param[] } {
    const t = TABLES[kind];
    const w = this.scopeSql(scope);
    const only = ids ? "AND x.id = ANY(?::bigint[])" : "";
    return {
      sql: `SELECT x.id, 1 - (v.embedding <=> ?::vector) AS raw
         FROM ${t.rows} x CROSS JOIN LATERAL (SELECT embedding FROM ${t.vectors} WHERE ${t.key} = x.id OFFSET 0) v
        WHERE ${w.sql} AND x.model_id = ? ${only} AND vector_dims(v.embedding) = ${checkDim(query.length)}
        ORDER BY raw DESC, x.id LIMIT ?`,
      args: [embeddingParam("postgres", query), ...w.args, modelId, ...(ids ? [`{${ids.join(",")}}`] : []), k],
    };
  }

  /**
   * Runs `fn` in a transaction with `jit = off`: a distance per row makes the planner's cost pass
   * jit_above_cost, and compiling the plan took ~700 ms where the look-up itself took ~70
   * (measured with EXPLAIN ANALYZE on 20 000 rows); `enable_sort = off` alone adds 10^10 to it.
   */
  private async withoutJit<T>(fn: () => Promise<T>): Promise<T> {
    return await this.db.transaction(async () => {
      await this.db.get("SELECT set_config('jit', 'off', true)");
      return await fn();
    });
  }

  /**
   * Approximate k nearest through the dimension's HNSW index, filtered by scope and model (and
   * `ids`). In one transaction: `hnsw.iterative_scan = relaxed_order` makes the index scan go on
   * past `ef_search` rows while the join's filter drops other accounts' rows, up to
   * `max_scan_tuples`; `enable_sort = off` keeps the planner on the index (the alternative plan,
   * sorting the whole scope, is the exact scan, chosen above by size instead); `jit = off`
   * (see withoutJit). relaxed_order may
   * hand rows slightly out of order: the materialized CTE is sorted again.
   */
  async nearestHnsw(
    kind: VectorKind,
    scope: SearchScope,
    modelId: string,
    query: Float32Array,
    k: number,
    ids: readonly number[] | null,
    knobs: HnswKnobs,
  ): Promise<{ id: number; raw: number }[]> {
    const t = TABLES[kind];
    const dim = checkDim(query.length);
    const w = this.scopeSql(scope);
    const only = ids ? "AND x.id = ANY(?::bigint[])" : "";
    return await this.db.transaction(async () => {
      await this.db.get(
        `SELECT set_config('hnsw.ef_search', ?, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
                set_config('hnsw.max_scan_tuples', ?, true), set_config('enable_sort', 'off', true),
                set_config('jit', 'off', true)`,
        String(knobs.efSearch),
        String(knobs.maxScanTuples),
      );
      const rows = await this.db.all<{ id: number; raw: number }>(
        `WITH near AS MATERIALIZED (
           SELECT x.id, (v.embedding::vector(${dim})) <=> ?::vector(${dim}) AS d
             FROM ${t.vectors} v JOIN ${t.rows} x ON x.id = v.${t.key}
            WHERE vector_dims(v.embedding) = ${dim} AND ${w.sql} AND x.model_id = ? ${only}
            ORDER BY (v.embedding::vector(${dim})) <=> ?::vector(${dim}) LIMIT ?)
         SELECT id, 1 - d AS raw FROM near ORDER BY d, id LIMIT ?`,
        embeddingParam("postgres", query),
        ...w.args,
        modelId,
        ...(ids ? [`{${ids.join(",")}}`] : []),
        embeddingParam("postgres", query),
        // The walk is asked for up to 4k rows that pass the filter, the best k of them kept:
        // relaxed_order hands rows in the graph's batches, and the first k to pass need not be the
        // k nearest. More would cost a selective filter (few rows of the walk pass) a longer walk.
        knobs.candidates ?? Math.max(k, Math.min(knobs.efSearch, 4 * k)),
        k,
      );
      return rows.map((r) => ({ id: Number(r.id), raw: Number(r.raw) }));
    });
  }

  /** The plan `nearestHnsw` gets (tests check it uses the index; `EXPLAIN` only, nothing run). */
  async explainHnsw(kind: VectorKind, scope: SearchScope, modelId: string, query: Float32Array): Promise<string> {
    const t = TABLES[kind];
    const dim = checkDim(query.length);
    const w = this.scopeSql(scope);
    return await this.db.transaction(async () => {
      await this.db.get("SELECT set_config('enable_sort', 'off', true)");
      const rows = await this.db.all<{ "QUERY PLAN": string }>(
        `EXPLAIN SELECT x.id FROM ${t.vectors} v JOIN ${t.rows} x ON x.id = v.${t.key}
          WHERE vector_dims(v.embedding) = ${dim} AND ${w.sql} AND x.model_id = ?
          ORDER BY (v.embedding::vector(${dim})) <=> ?::vector(${dim}) LIMIT 10`,
        ...w.args,
        modelId,
        embeddingParam("postgres", query),
      );
      return rows.map((r) => r["QUERY PLAN"]).join("\n");
    });
  }

  /** The dimensions of a video's vectors (a newly indexed video may bring a new one). */
  async dimsOfVideo(kind: VectorKind, videoId: string): Promise<number[]> {
    const t = TABLES[kind];
    const rows = await this.db.all<{ dim: number }>(
      `SELECT DISTINCT vector_dims(v.embedding) AS dim FROM ${t.rows} x JOIN ${t.vectors} v ON v.${t.key} = x.id WHERE x.video_id = ?`,
      videoId,
    );
    return rows.map((r) => Number(r.dim));
  }

  /** The HNSW indexes this store made, with whether each is usable (a failed CONCURRENTLY build leaves an invalid one). */
  async hnswIndexes(): Promise<HnswIndexInfo[]> {
    const rows = await this.db.all<{ name: string; valid: boolean; building: boolean }>(
      `SELECT c.relname AS name, i.indisvalid AS valid,
              EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid) AS building
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname LIKE 'frame\\_vectors\\_hnsw\\_%' OR c.relname LIKE 'shot\\_vectors\\_hnsw\\_%' ORDER BY c.relname`,
    );
    return rows.map((r) => {
      const kind: VectorKind = r.name.startsWith("frame") ? "frames" : "shots";
      const dim = Number(r.name.slice(r.name.lastIndexOf("_") + 1));
      return { name: r.name, kind, dim, valid: !!r.valid, building: !r.valid && !!r.building };
    });
  }

  /** Drops a failed build's leftover (an INVALID index no build is working on), without blocking writes. */
  async dropHnswIndex(kind: VectorKind, dim: number): Promise<void> {
    await this.db.exec(`DROP INDEX CONCURRENTLY IF EXISTS ${hnswIndexName(kind, checkDim(dim))}`);
  }

  /**
   * Makes the HNSW index of a kind and dimension unless it exists: CONCURRENTLY, so ingest goes
   * on while it builds (minutes at a million rows); until it is valid the planner does not use it
   * and look-ups are exact scans. Must run outside a transaction (the executor's `exec` is).
   */
  async createHnswIndex(kind: VectorKind, dim: number, o: { m: number; efConstruction: number }): Promise<void> {
    const t = TABLES[kind];
    const d = checkDim(dim);
    await this.db.exec(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${hnswIndexName(kind, d)} ON ${t.vectors}
         USING hnsw ((embedding::vector(${d})) vector_cosine_ops) WITH (m = ${Math.trunc(o.m)}, ef_construction = ${Math.trunc(o.efConstruction)})
         WHERE vector_dims(embedding) = ${d}`,
    );
  }
}
