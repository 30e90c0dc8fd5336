/**
 * All SQL of search (scopes, vectors, shots, transcripts and the exact rows rescoring reads): the
 * house keeps a domain's SQL in its store. Over the ~450-line guide for that reason; the OCR text
 * (ocr-store.ts), feedback (feedback-store.ts) and the change log (vector-change-store.ts) are apart.
 */
import { dialect, type Executor } from "../store/executor.ts";
import { selectingEmbedding, withEmbeddingBytes } from "../indexing/embedding-sql.ts";
import { ftsToTsquery } from "../store/fts-tsquery.ts";
import { ftsMatching, inChunks, pgDocFreq, pgRank, type WeightedUnit } from "../store/sql.ts";

/** Which part of an account a search covers. */
export interface SearchScope {
  accountId: string;
  collectionId?: string;
  videoId?: string;
}

export type VectorKind = "frames" | "shots";

export interface VideoInfoRow {
  id: string;
  filename: string;
  collection_id: string;
  status: string;
  duration_secs: number | null;
  poster_path: string | null;
}

export interface FrameMetaRow {
  id: number;
  video_id: string;
  timestamp: number;
  shot_index: number;
  next_timestamp: number | null;
}

export interface ShotRow {
  id: number;
  video_id: string;
  shot_index: number;
  start_secs: number;
  end_secs: number;
  labels: string;
  caption: string | null;
  thumbnail_path: string | null;
}

export interface TranscriptHitRow {
  id: number;
  video_id: string;
  start_secs: number;
  end_secs: number;
  text: string;
  /** FTS5 bm25(): lower is better (negative). */
  bm25: number;
  /**
   * PostgreSQL, searched with units (store/sql.ts `pgRank`): bit i set where the row matches
   * units[i]. Absent (SQLite) or null (no units): ask `matching` per unit.
   */
  unit_mask?: number | null;
}

/**
 * The label strings of a shot row (`labels` is JSON `[{label, score}]`, best first). Rows kept by
 * SearchIndexes.shotsOfVideos carry them parsed already.
 */
export function labelsOf(s: (Pick<ShotRow, "labels"> & { parsedLabels?: string[] }) | null): string[] {
  if (!s) return [];
  if (s.parsedLabels) return s.parsedLabels;
  try {
    const parsed = JSON.parse(s.labels) as { label?: unknown }[];
    return Array.isArray(parsed) ? parsed.map((l) => l?.label).filter((l): l is string => typeof l === "string") : [];
  } catch {
    return [];
  }
}

/** A row of the in-memory index as the warm-up reads it: any account, any model. */
export interface IndexRow {
  id: number;
  account_id: string;
  video_id: string;
  collection_id: string;
  model_id: string;
  embedding: Uint8Array;
}

const TOLERANCE = 0.0100001;

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(",");

/** An account's distinct shot labels (SearchStore.sceneVocabulary). */
const SCENE_LABELS = dialect({
  sqlite: `SELECT DISTINCT lower(json_extract(j.value, '$.label')) AS label FROM shots s, json_each(s.labels) j
         WHERE s.account_id = ? AND json_extract(j.value, '$.label') IS NOT NULL`,
  pg: `SELECT DISTINCT lower(j.value->>'label') AS label FROM shots s, jsonb_array_elements(s.labels::jsonb) j
         WHERE s.account_id = ? AND j.value->>'label' IS NOT NULL`,
});

/** The vec0 table of a kind and dimension, as IndexStore names them; null for anything else. */
/** Rows in the shot text index: FTS5's rows; on PostgreSQL the shots whose generated tsvector holds a word. */
const SHOT_TEXT_ROWS = dialect({
  sqlite: "SELECT count(*) AS n FROM shot_text_fts",
  pg: "SELECT count(*) AS n FROM shots WHERE length(text_tsv) > 0",
});

export const vecTableName = (kind: VectorKind, dim: number): string | null =>
  Number.isInteger(dim) && dim > 0 && dim <= 65536 ? `vec_${kind}_${dim}` : null;

/** The search domain's reads of the index tables (feedback and thresholds: feedback-store.ts). */
export class SearchStore {
  constructor(private readonly db: Executor) {}

  private scopeSql(alias: string, scope: SearchScope): { sql: string; args: string[] } {
    const parts = [`${alias}.account_id = ?`];
    const args = [scope.accountId];
    if (scope.collectionId) {
      parts.push(`${alias}.collection_id = ?`);
      args.push(scope.collectionId);
    }
    if (scope.videoId) {
      parts.push(`${alias}.video_id = ?`);
      args.push(scope.videoId);
    }
    return { sql: parts.join(" AND "), args };
  }

  // ---- videos --------------------------------------------------------------------------------

  async videos(accountId: string, ids: string[]): Promise<Map<string, VideoInfoRow>> {
    const rows = await inChunks(
      ids,
      async (part, marks) =>
        await this.db.allAside<VideoInfoRow>(
          `SELECT id, filename, collection_id, status, duration_secs, poster_path FROM videos WHERE account_id = ? AND id IN (${marks})`,
          accountId,
          ...part,
        ),
    );
    return new Map(rows.map((r) => [r.id, r]));
  }

  async accountOfVideo(videoId: string): Promise<string | null> {
    return (
      (await this.db.get<{ account_id: string }>("SELECT account_id FROM videos WHERE id = ?", videoId))?.account_id ??
      null
    );
  }

  /** Which of these videos exist (in chunks: SQLite binds at most 32 766 parameters). */
  async existingVideoIds(videoIds: readonly string[]): Promise<Set<string>> {
    const rows = await inChunks(videoIds, (part, marks) =>
      this.db.all<{ id: string }>(`SELECT id FROM videos WHERE id IN (${marks})`, ...part),
    );
    return new Set(rows.map((r) => r.id));
  }

  // ---- vectors -------------------------------------------------------------------------------

  /** Ids of an account's vectors of one model, in id order (for the calibration sample). */
  async vectorIds(kind: VectorKind, accountId: string, modelId: string): Promise<number[]> {
    const sql =
      kind === "frames"
        ? "SELECT f.id FROM frames f WHERE f.account_id = ? AND f.model_id = ? ORDER BY f.id"
        : "SELECT s.id FROM shots s JOIN shot_vectors v ON v.shot_id = s.id WHERE s.account_id = ? AND s.model_id = ? ORDER BY s.id";
    return (await this.db.all<{ id: number }>(sql, accountId, modelId)).map((r) => r.id);
  }

  /** Exact vectors by id (frame_vectors / shot_vectors). Read in rowid order (B-tree locality). */
  async vectors(kind: VectorKind, ids: number[]): Promise<Map<number, Uint8Array>> {
    const [table, col] = kind === "frames" ? ["frame_vectors", "frame_id"] : ["shot_vectors", "shot_id"];
    const out = new Map<number, Uint8Array>();
    const sorted = Array.from(Float64Array.from(ids).sort());
    const rows = await inChunks(sorted, async (part, marks) =>
      withEmbeddingBytes(
        this.db.backend,
        await this.db.all<{ id: number; embedding: Uint8Array }>(
          selectingEmbedding((e) => `SELECT ${col} AS id, ${e("embedding")} FROM ${table} WHERE ${col} IN (${marks})`),
          ...part,
        ),
      ),
    );
    for (const r of rows) out.set(r.id, r.embedding);
    return out;
  }

  /** Every vector of one model inside a scope, with the id (exact scan of a small scope). */
  async vectorsInScope(
    kind: VectorKind,
    scope: SearchScope,
    modelId: string,
  ): Promise<{ id: number; embedding: Uint8Array }[]> {
    const w = this.scopeSql("x", scope);
    const sql = selectingEmbedding((e) =>
      kind === "frames"
        ? `SELECT x.id, ${e("v.embedding")} FROM frames x JOIN frame_vectors v ON v.frame_id = x.id WHERE ${w.sql} AND x.model_id = ?`
        : `SELECT x.id, ${e("v.embedding")} FROM shots x JOIN shot_vectors v ON v.shot_id = x.id WHERE ${w.sql} AND x.model_id = ?`,
    );
    return withEmbeddingBytes(
      this.db.backend,
      await this.db.all<{ id: number; embedding: Uint8Array }>(sql, ...w.args, modelId),
    );
  }

  /**
   * Rows for the in-memory index (id, video, collection, vector) of one model inside a scope, in
   * keyset pages of `page` rows so a large account is never held as one array and no read stays
   * open across an await (an open cursor would pin the reader's snapshot for every other read).
   */
  async *rowsForIndex(
    kind: VectorKind,
    scope: SearchScope,
    modelId: string,
    page = 4096,
  ): AsyncGenerator<{ id: number; video_id: string; collection_id: string; embedding: Uint8Array }> {
    const w = this.scopeSql("x", scope);
    const sql = selectingEmbedding((e) =>
      kind === "frames"
        ? `SELECT x.id, x.video_id, x.collection_id, ${e("v.embedding")} FROM frames x JOIN frame_vectors v ON v.frame_id = x.id WHERE ${w.sql} AND x.model_id = ? AND x.id > ? ORDER BY x.id LIMIT ?`
        : `SELECT x.id, x.video_id, x.collection_id, ${e("v.embedding")} FROM shots x JOIN shot_vectors v ON v.shot_id = x.id WHERE ${w.sql} AND x.model_id = ? AND x.id > ? ORDER BY x.id LIMIT ?`,
    );
    let after = 0;
    // Bounded: every page moves `after` past its last id, and a short page ends the walk.
    for (;;) {
      const rows = withEmbeddingBytes(
        this.db.backend,
        await this.db.all<{ id: number; video_id: string; collection_id: string; embedding: Uint8Array }>(
          sql,
          ...w.args,
          modelId,
          after,
          page,
        ),
      );
      yield* rows;
      if (rows.length < page) return;
      after = rows[rows.length - 1].id;
    }
  }

  /**
   * One page of every account's index rows of a kind (any model), ids above `afterId`, ascending:
   * the background warm-up of the in-memory index walks the table with these, one short statement
   * per page, so no read stays open while the server does other work between pages.
   */
  async indexRowsAfter(kind: VectorKind, afterId: number, limit: number): Promise<IndexRow[]> {
    const sql = selectingEmbedding((e) =>
      kind === "frames"
        ? `SELECT x.id, x.account_id, x.video_id, x.collection_id, x.model_id, ${e("v.embedding")} FROM frames x JOIN frame_vectors v ON v.frame_id = x.id WHERE x.id > ? ORDER BY x.id LIMIT ?`
        : `SELECT x.id, x.account_id, x.video_id, x.collection_id, x.model_id, ${e("v.embedding")} FROM shots x JOIN shot_vectors v ON v.shot_id = x.id WHERE x.id > ? AND x.model_id IS NOT NULL ORDER BY x.id LIMIT ?`,
    );
    return withEmbeddingBytes(this.db.backend, await this.db.all<IndexRow>(sql, afterId, limit));
  }

  /** A video's index rows of a kind, every model (its rows replaced while the index warms up). */
  async indexRowsOfVideo(kind: VectorKind, videoId: string): Promise<IndexRow[]> {
    const sql = selectingEmbedding((e) =>
      kind === "frames"
        ? `SELECT x.id, x.account_id, x.video_id, x.collection_id, x.model_id, ${e("v.embedding")} FROM frames x JOIN frame_vectors v ON v.frame_id = x.id WHERE x.video_id = ?`
        : `SELECT x.id, x.account_id, x.video_id, x.collection_id, x.model_id, ${e("v.embedding")} FROM shots x JOIN shot_vectors v ON v.shot_id = x.id WHERE x.video_id = ? AND x.model_id IS NOT NULL`,
    );
    return withEmbeddingBytes(this.db.backend, await this.db.all<IndexRow>(sql, videoId));
  }

  /** The highest row id of a kind, 0 when there is none (the warm-up's progress is measured against it). */
  async lastIndexRowId(kind: VectorKind): Promise<number> {
    return (
      (await this.db.get<{ n: number | null }>(`SELECT max(id) AS n FROM ${kind === "frames" ? "frames" : "shots"}`))!
        .n ?? 0
    );
  }

  /**
   * The highest row id of an account's vectors of one model, 0 when it has none: the warm-up has
   * loaded all of them once its cursor passed it. One index seek (frames_account / shots_account).
   */
  async lastIndexRowIdOf(kind: VectorKind, accountId: string, modelId: string): Promise<number> {
    const table = kind === "frames" ? "frames" : "shots";
    return (
      (await this.db.get<{ n: number | null }>(
        `SELECT max(id) AS n FROM ${table} WHERE account_id = ? AND model_id = ?`,
        accountId,
        modelId,
      ))!.n ?? 0
    );
  }

  /** Number of an account's vectors of one model inside a scope. */
  async countInScope(kind: VectorKind, scope: SearchScope, modelId: string): Promise<number> {
    const w = this.scopeSql("x", scope);
    const sql =
      kind === "frames"
        ? `SELECT count(*) AS n FROM frames x WHERE ${w.sql} AND x.model_id = ?`
        : `SELECT count(*) AS n FROM shots x JOIN shot_vectors v ON v.shot_id = x.id WHERE ${w.sql} AND x.model_id = ?`;
    return (await this.db.get<{ n: number }>(sql, ...w.args, modelId))!.n;
  }

  async hasVecTable(kind: VectorKind, dim: number): Promise<boolean> {
    const name = vecTableName(kind, dim);
    // vec0 tables are sqlite-vec's: PostgreSQL has none (its nearest neighbours: the in-memory index or pgvector).
    if (this.db.backend !== "sqlite") return false;
    return !!name && !!(await this.db.get("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name));
  }

  /** k nearest by cosine in the account's vec0 partition: `[{id, distance}]`, nearest first. */
  async vecNearest(
    kind: VectorKind,
    dim: number,
    accountId: string,
    query: Float32Array,
    k: number,
  ): Promise<{ id: number; distance: number }[]> {
    const table = vecTableName(kind, dim);
    if (!table) return [];
    return await this.db.all<{ id: number; distance: number }>(
      `SELECT id, distance FROM ${table} WHERE embedding MATCH ? AND k = ? AND account_id = ? ORDER BY distance`,
      new Uint8Array(query.buffer, query.byteOffset, query.byteLength),
      k,
      accountId,
    );
  }

  /** Which of `ids` are in the scope and of the model (vec0 partitions hold every model of a size). */
  async filterIds(kind: VectorKind, ids: number[], scope: SearchScope, modelId: string): Promise<Set<number>> {
    const table = kind === "frames" ? "frames" : "shots";
    const w = this.scopeSql("x", scope);
    const rows = await inChunks(
      ids,
      async (part, marks) =>
        await this.db.all<{ id: number }>(
          `SELECT x.id FROM ${table} x WHERE x.id IN (${marks}) AND ${w.sql} AND x.model_id = ?`,
          ...part,
          ...w.args,
          modelId,
        ),
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Ids of the frames inside (or of) the given shots: `video_id` → shot indexes. */
  async idsInShots(kind: VectorKind, shots: Map<string, Set<number>>): Promise<Set<number>> {
    const table = kind === "frames" ? "frames" : "shots";
    const out = new Set<number>();
    // One statement per video of a label filter (the filter names few videos; each a short IN list).
    for (const [videoId, idx] of shots) {
      const rows = await inChunks(
        [...idx],
        async (part, marks) =>
          await this.db.all<{ id: number }>(
            `SELECT id FROM ${table} WHERE video_id = ? AND shot_index IN (${marks})`,
            videoId,
            ...part,
          ),
      );
      for (const r of rows) out.add(r.id);
    }
    return out;
  }

  // ---- frames and shots ----------------------------------------------------------------------

  /**
   * Frames by id, each with the time of its video's next sampled frame (same model), if any. On a
   * reader thread: ~3 µs a frame, and a search reads ~100–1000.
   */
  async frames(ids: number[]): Promise<FrameMetaRow[]> {
    return await inChunks(
      ids,
      async (part, marks) =>
        await this.db.allAside<FrameMetaRow>(
          `SELECT f.id, f.video_id, f.timestamp, f.shot_index,
                  (SELECT g.timestamp FROM frames g WHERE g.video_id = f.video_id AND g.timestamp > f.timestamp AND g.model_id = f.model_id
                   ORDER BY g.timestamp LIMIT 1) AS next_timestamp
           FROM frames f WHERE f.id IN (${marks})`,
          ...part,
        ),
    );
  }

  async shotsById(ids: number[]): Promise<ShotRow[]> {
    return await inChunks(
      ids,
      async (part, marks) =>
        await this.db.all<ShotRow>(
          `SELECT id, video_id, shot_index, start_secs, end_secs, labels, caption, thumbnail_path FROM shots WHERE id IN (${marks})`,
          ...part,
        ),
    );
  }

  /** Shots of the given videos, in time order. */
  async shotsOfVideos(videoIds: string[]): Promise<Map<string, ShotRow[]>> {
    const rows = await inChunks(
      videoIds,
      async (part, marks) =>
        await this.db.allAside<ShotRow>(
          `SELECT id, video_id, shot_index, start_secs, end_secs, labels, caption, thumbnail_path FROM shots
           WHERE video_id IN (${marks}) ORDER BY video_id, start_secs`,
          ...part,
        ),
    );
    const out = new Map<string, ShotRow[]>();
    for (const r of rows) {
      let l = out.get(r.video_id);
      if (!l) out.set(r.video_id, (l = []));
      l.push(r);
    }
    return out;
  }

  /** Shots in scope carrying any of `labels` (case-insensitive): `video_id` → shot indexes. */
  async shotsWithLabels(scope: SearchScope, labels: string[]): Promise<Map<string, Set<number>>> {
    const w = this.scopeSql("s", scope);
    const wanted = labels.map((l) => l.toLowerCase());
    const text = (
      elements: string,
      label: string,
    ) => `SELECT s.video_id, s.shot_index FROM shots s WHERE ${w.sql} AND EXISTS (
           SELECT 1 FROM ${elements} j WHERE lower(${label}) IN (${placeholders(wanted.length)}))`;
    const rows = await this.db.all<{ video_id: string; shot_index: number }>(
      dialect({
        sqlite: text("json_each(s.labels)", "json_extract(j.value, '$.label')"),
        pg: text("jsonb_array_elements(s.labels::jsonb)", "j.value->>'label'"),
      }),
      ...w.args,
      ...wanted,
    );
    const out = new Map<string, Set<number>>();
    for (const r of rows) {
      let s = out.get(r.video_id);
      if (!s) out.set(r.video_id, (s = new Set()));
      s.add(r.shot_index);
    }
    return out;
  }

  /**
   * Shots whose labels or caption mention any of `terms` (FTS prefix match, porter-stemmed on
   * both sides), in id order. A superset for the caller's exact word check, never a scan.
   */
  async shotsMentioning(scope: SearchScope, terms: string[], limit: number): Promise<ShotRow[]> {
    const clean = [...new Set(terms.map((t) => t.replace(/"/g, "").trim()).filter(Boolean))];
    if (!clean.length) return [];
    const w = this.scopeSql("s", scope);
    const match = clean.map((t) => `"${t}"*`).join(" OR ");
    if (this.db.backend === "postgres") {
      const q = ftsToTsquery(match);
      if (!q) return [];
      return await this.db.all<ShotRow>(
        `SELECT s.id, s.video_id, s.shot_index, s.start_secs, s.end_secs, s.labels, s.caption, s.thumbnail_path
           FROM shots s WHERE s.text_tsv @@ to_tsquery('vs_english', ?) AND ${w.sql} ORDER BY s.id LIMIT ?`,
        q,
        ...w.args,
        limit,
      );
    }
    return await this.db.allAside<ShotRow>(
      `SELECT s.id, s.video_id, s.shot_index, s.start_secs, s.end_secs, s.labels, s.caption, s.thumbnail_path
         FROM shot_text_fts f JOIN shots s ON s.id = f.rowid
         WHERE shot_text_fts MATCH ? AND ${w.sql} ORDER BY s.id LIMIT ?`,
      match,
      ...w.args,
      limit,
    );
  }

  /** Rows in the shot text index (its triggers keep one per shot with labels or a caption; checks and tests). */
  async shotTextRows(): Promise<number> {
    return (await this.db.get<{ n: number }>(SHOT_TEXT_ROWS))!.n;
  }

  /** The account's distinct shot labels and how many of its shots have a caption. */
  async sceneVocabulary(accountId: string): Promise<{ labels: string[]; captions: number }> {
    const labels = (await this.db.allAside<{ label: string }>(SCENE_LABELS, accountId)).map((r) => r.label);
    const captions = (
      await this.db.allAside<{ n: number }>(
        "SELECT count(*) AS n FROM shots WHERE account_id = ? AND caption IS NOT NULL AND caption != ''",
        accountId,
      )
    )[0].n;
    return { labels, captions };
  }

  async shotAt(videoId: string, t: number): Promise<ShotRow | null> {
    const cols = "id, video_id, shot_index, start_secs, end_secs, labels, caption, thumbnail_path";
    return (
      (await this.db.get<ShotRow>(
        `SELECT ${cols} FROM shots WHERE video_id = ? AND start_secs <= ? AND ? < end_secs ORDER BY start_secs DESC LIMIT 1`,
        videoId,
        t + 1e-6,
        t,
      )) ??
      // The last shot's end is inclusive; a time in a gap belongs to the shot before it.
      (await this.db.get<ShotRow>(
        `SELECT ${cols} FROM shots WHERE video_id = ? AND start_secs <= ? ORDER BY start_secs DESC LIMIT 1`,
        videoId,
        t + 1e-6,
      ))
    );
  }

  async shotByIndex(videoId: string, shotIndex: number): Promise<ShotRow | null> {
    return await this.db.get<ShotRow>(
      "SELECT id, video_id, shot_index, start_secs, end_secs, labels, caption, thumbnail_path FROM shots WHERE video_id = ? AND shot_index = ?",
      videoId,
      shotIndex,
    );
  }

  // ---- transcript ----------------------------------------------------------------------------

  /**
   * BM25-ranked transcript segments in scope matching an (already sanitized) FTS5 expression.
   * `units` (the expression's units and their IDF) rank them on PostgreSQL (store/sql.ts `pgRank`).
   */
  async transcriptSearch(
    scope: SearchScope,
    match: string,
    limit: number,
    units?: WeightedUnit[],
  ): Promise<TranscriptHitRow[]> {
    const w = this.scopeSql("t", scope);
    if (this.db.backend === "postgres") {
      const q = ftsToTsquery(match);
      if (!q) return [];
      const rank = pgRank("t.tsv", units);
      return await this.db.all<TranscriptHitRow>(
        `SELECT t.id, t.video_id, t.start_secs, t.end_secs, t.text, ${rank.sql} AS bm25, ${rank.mask ?? "NULL"} AS unit_mask
           FROM transcript_segments t CROSS JOIN to_tsquery('vs_english', ?) AS q (q) ${rank.from}
           WHERE t.tsv @@ q.q AND ${w.sql} ORDER BY bm25, t.id LIMIT ?`,
        ...rank.args,
        q,
        ...rank.fromArgs,
        ...w.args,
        limit,
      );
    }
    return await this.db.allAside<TranscriptHitRow>(
      `SELECT t.id, t.video_id, t.start_secs, t.end_secs, t.text, bm25(transcript_fts) AS bm25
         FROM transcript_fts JOIN transcript_segments t ON t.id = transcript_fts.rowid
         WHERE transcript_fts MATCH ? AND ${w.sql} ORDER BY bm25 LIMIT ?`,
      match,
      ...w.args,
      limit,
    );
  }

  /** Which of `ids` match `match` (store/sql.ts `ftsMatching`). */
  async transcriptMatching(match: string, ids: number[]): Promise<Set<number>> {
    return await ftsMatching(this.db, "transcript_fts", match, ids);
  }

  async transcriptDocFreq(accountId: string, match: string): Promise<number> {
    if (this.db.backend === "postgres") return await pgDocFreq(this.db, "transcript_fts", accountId, match);
    return (
      await this.db.allAside<{ n: number }>(
        `SELECT count(*) AS n FROM transcript_fts JOIN transcript_segments t ON t.id = transcript_fts.rowid
         WHERE transcript_fts MATCH ? AND t.account_id = ?`,
        match,
        accountId,
      )
    )[0].n;
  }

  async transcriptCount(accountId: string): Promise<number> {
    return (
      await this.db.allAside<{ n: number }>(
        "SELECT count(*) AS n FROM transcript_segments WHERE account_id = ?",
        accountId,
      )
    )[0].n;
  }

  async transcriptOverlapping(
    videoId: string,
    start: number,
    end: number,
  ): Promise<{ start_secs: number; end_secs: number; text: string }[]> {
    return await this.db.all<{ start_secs: number; end_secs: number; text: string }>(
      "SELECT start_secs, end_secs, text FROM transcript_segments WHERE video_id = ? AND start_secs < ? AND end_secs > ? ORDER BY start_secs",
      videoId,
      end,
      start,
    );
  }

  /** Whether any segment of the video (frame, shot, transcript or on-screen text) starts within 0.01 s of `t`. */
  async segmentStartsAt(videoId: string, t: number): Promise<boolean> {
    return !!(await this.db.get<{ one: number }>(
      `SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM frames WHERE video_id = ? AND abs(timestamp - ?) <= ${TOLERANCE})
            OR EXISTS (SELECT 1 FROM shots WHERE video_id = ? AND abs(start_secs - ?) <= ${TOLERANCE})
            OR EXISTS (SELECT 1 FROM transcript_segments WHERE video_id = ? AND abs(start_secs - ?) <= ${TOLERANCE})
            OR EXISTS (SELECT 1 FROM ocr_lines WHERE video_id = ? AND abs(start_secs - ?) <= ${TOLERANCE})`,
      videoId,
      t,
      videoId,
      t,
      videoId,
      t,
      videoId,
      t,
    ));
  }
}
