import { dialect, type Executor } from "../store/executor.ts";
import { embeddingParam } from "./embedding-sql.ts";
import { ftsText } from "./fts-text.ts";

export interface VideoScope {
  videoId: string;
  accountId: string;
  collectionId: string;
}

export interface FrameInput {
  shotIndex: number;
  timestamp: number;
  embedding: Float32Array;
}

export interface ShotInput {
  shotIndex: number;
  start: number;
  end: number;
  keyframe: number;
  thumbnailPath: string | null;
  labels: { label: string; score: number }[];
  caption: string | null;
  embedding: Float32Array | null;
}

export interface TranscriptInput {
  start: number;
  end: number;
  text: string;
}

export interface OcrLineInput {
  start: number;
  end: number;
  text: string;
  confidence: number;
  box: { x: number; y: number; w: number; h: number };
}

/** sqlite-vec reserves a chunk per partition; small chunks keep small accounts cheap. */
const VEC_CHUNK_SIZE = 256;

const blob = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
export const toFloat32 = (b: Uint8Array) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/**
 * Everything the pipeline writes about a video's content: frames, shots, transcript segments
 * and their vectors. Each `replace*` deletes the video's previous rows of that kind first, so a
 * re-run stage (after a crash, or `reindex`) never duplicates anything.
 */
/** The models a ready video's rows were made with (IndexStore.modelCoverage), comma-joined per role. */
const coverage = (where: string) => {
  const text = (concat: (col: string) => string) => `SELECT v.id, v.stages, v.has_audio,
                (SELECT ${concat("model_id")} FROM frames f WHERE f.video_id = v.id) AS frame_models,
                (SELECT ${concat("model_id")} FROM transcript_segments t WHERE t.video_id = v.id) AS transcript_models
           FROM videos v WHERE v.status IN ('ready', 'failed') ${where} ORDER BY v.id`;
  return dialect({
    sqlite: text((c) => `group_concat(DISTINCT ${c})`),
    pg: text((c) => `string_agg(DISTINCT ${c}, ',')`),
  });
};
const COVERAGE = coverage("");
/** vec0 tables exist only in the embedded store's sqlite-vec mode. */
const VEC_TABLES = dialect({
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ?",
  pg: { unsupported: "embedded only: sqlite-vec (vec0) tables" },
});
const COVERAGE_OF_ACCOUNT = coverage("AND v.account_id = ?");

export class IndexStore {
  private readonly vecTables = new Set<string>();

  constructor(
    private readonly db: Executor,
    private readonly vecEnabled: boolean,
  ) {}

  /** vec0 tables have a fixed dimension, so there is one per embedding size (`vec_frames_512`). */
  private async vecTable(kind: "frames" | "shots", dim: number): Promise<string | null> {
    if (!this.vecEnabled) return null;
    const name = `vec_${kind}_${dim}`;
    if (!this.vecTables.has(name)) {
      await this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING vec0(
           id INTEGER PRIMARY KEY, account_id TEXT PARTITION KEY,
           embedding float[${dim}] distance_metric=cosine, chunk_size=${VEC_CHUNK_SIZE})`,
      );
      this.vecTables.add(name);
    }
    return name;
  }

  private async existingVecTables(kind: "frames" | "shots"): Promise<string[]> {
    return (await this.db.all<{ name: string }>(VEC_TABLES, `vec_${kind}_[0-9]*`))
      .map((r) => r.name)
      .filter((n) => /^vec_(frames|shots)_\d+$/.test(n));
  }

  private async deleteVectors(kind: "frames" | "shots", ids: number[]): Promise<void> {
    if (!this.vecEnabled || ids.length === 0) return;
    // Per vec0 table and 500-id list, one statement after another: sqlite-vec only (this store's
    // vec0 mode), where each statement is a synchronous call anyway.
    for (const table of await this.existingVecTables(kind)) {
      for (let i = 0; i < ids.length; i += 500) {
        const part = ids.slice(i, i + 500);
        await this.db.run(`DELETE FROM ${table} WHERE id IN (${part.map(() => "?").join(",")})`, ...part);
      }
    }
  }

  private async ids(sql: string, videoId: string): Promise<number[]> {
    return (await this.db.all<{ id: number }>(sql, videoId)).map((r) => r.id);
  }

  async replaceFrames(scope: VideoScope, frames: FrameInput[], modelId: string): Promise<number[]> {
    return await this.db.transaction(async () => {
      await this.deleteVectors("frames", await this.ids("SELECT id FROM frames WHERE video_id = ?", scope.videoId));
      await this.db.run("DELETE FROM frames WHERE video_id = ?", scope.videoId);
      const ids = (
        await this.db.insertMany<{ id: number }>(
          {
            table: "frames",
            columns: ["video_id", "account_id", "collection_id", "shot_index", "timestamp", "model_id"],
            returning: "id",
          },
          frames.map((f) => [scope.videoId, scope.accountId, scope.collectionId, f.shotIndex, f.timestamp, modelId]),
        )
      ).map((r) => r.id);
      await this.db.insertMany(
        { table: "frame_vectors", columns: ["frame_id", "embedding"] },
        frames.map((f, i) => [ids[i], embeddingParam(this.db.backend, f.embedding)]),
      );
      const table = frames.length ? await this.vecTable("frames", frames[0].embedding.length) : null;
      if (table) {
        await this.db.insertMany(
          { table, columns: ["id", "account_id", "embedding"] },
          frames.map((f, i) => [ids[i], scope.accountId, blob(f.embedding)]),
        );
      }
      return ids;
    });
  }

  async replaceShots(scope: VideoScope, shots: ShotInput[], modelId: string | null): Promise<number[]> {
    return await this.db.transaction(async () => {
      await this.deleteVectors("shots", await this.ids("SELECT id FROM shots WHERE video_id = ?", scope.videoId));
      await this.db.run("DELETE FROM shots WHERE video_id = ?", scope.videoId);
      const ids = (
        await this.db.insertMany<{ id: number }>(
          {
            table: "shots",
            columns: [
              "video_id",
              "account_id",
              "collection_id",
              "shot_index",
              "start_secs",
              "end_secs",
              "keyframe_secs",
              "thumbnail_path",
              "labels",
              "caption",
              "model_id",
            ],
            returning: "id",
          },
          shots.map((s) => [
            scope.videoId,
            scope.accountId,
            scope.collectionId,
            s.shotIndex,
            s.start,
            s.end,
            s.keyframe,
            s.thumbnailPath,
            JSON.stringify(s.labels),
            s.caption,
            s.embedding ? modelId : null,
          ]),
        )
      ).map((r) => r.id);
      const withVec = shots.flatMap((s, i) => (s.embedding ? [{ id: ids[i], embedding: s.embedding }] : []));
      await this.db.insertMany(
        { table: "shot_vectors", columns: ["shot_id", "embedding"] },
        withVec.map((s) => [s.id, embeddingParam(this.db.backend, s.embedding)]),
      );
      const table = withVec.length ? await this.vecTable("shots", withVec[0].embedding.length) : null;
      if (table) {
        await this.db.insertMany(
          { table, columns: ["id", "account_id", "embedding"] },
          withVec.map((s) => [s.id, scope.accountId, blob(s.embedding)]),
        );
      }
      return ids;
    });
  }

  async replaceTranscript(scope: VideoScope, segments: TranscriptInput[], modelId: string): Promise<void> {
    return await this.db.transaction(async () => {
      await this.db.run("DELETE FROM transcript_segments WHERE video_id = ?", scope.videoId);
      await this.db.insertMany(
        {
          table: "transcript_segments",
          columns: ["video_id", "account_id", "collection_id", "start_secs", "end_secs", "text", "model_id"],
        },
        segments.map((s) => [scope.videoId, scope.accountId, scope.collectionId, s.start, s.end, s.text, modelId]),
      );
    });
  }

  /** The video's on-screen text lines (the `ocr` stage); replaces what an earlier run wrote. */
  async replaceOcrLines(scope: VideoScope, lines: OcrLineInput[]): Promise<void> {
    return await this.db.transaction(async () => {
      await this.db.run("DELETE FROM ocr_lines WHERE video_id = ?", scope.videoId);
      await this.db.insertMany(
        {
          table: "ocr_lines",
          columns: [
            "video_id",
            "account_id",
            "collection_id",
            "start_secs",
            "end_secs",
            "text",
            "search_text",
            "confidence",
            "box_x",
            "box_y",
            "box_w",
            "box_h",
          ],
        },
        lines.map((l) => [
          scope.videoId,
          scope.accountId,
          scope.collectionId,
          l.start,
          l.end,
          l.text,
          // What the full-text index holds: CJK runs as character pairs (migration 012).
          ftsText(l.text),
          l.confidence,
          l.box.x,
          l.box.y,
          l.box.w,
          l.box.h,
        ]),
      );
    });
  }

  /** The video's shots in order (a resumed run's enrichment stages need them). */
  async shotSpans(videoId: string): Promise<{ index: number; start: number; end: number }[]> {
    return await this.db.all<{ index: number; start: number; end: number }>(
      'SELECT shot_index AS "index", start_secs AS start, end_secs AS end FROM shots WHERE video_id = ? ORDER BY shot_index',
      videoId,
    );
  }

  /** The video's frames in time order, with their model and whether the exact vector is stored (checks and tests). */
  async framesOf(
    videoId: string,
  ): Promise<{ id: number; timestamp: number; shot_index: number; model_id: string; has_vector: boolean }[]> {
    return (
      await this.db.all<{ id: number; timestamp: number; shot_index: number; model_id: string; has_vector: number }>(
        `SELECT f.id, f.timestamp, f.shot_index, f.model_id, CASE WHEN EXISTS (SELECT 1 FROM frame_vectors v WHERE v.frame_id = f.id) THEN 1 ELSE 0 END AS has_vector
         FROM frames f WHERE f.video_id = ? ORDER BY f.timestamp`,
        videoId,
      )
    ).map((r) => ({ ...r, has_vector: r.has_vector === 1 }));
  }

  /** Removes the rows SQLite cannot cascade (vec0 virtual tables); call before deleting the video row. */
  async deleteVideoVectors(videoId: string): Promise<void> {
    await this.deleteVectors("frames", await this.ids("SELECT id FROM frames WHERE video_id = ?", videoId));
    await this.deleteVectors("shots", await this.ids("SELECT id FROM shots WHERE video_id = ?", videoId));
  }

  /**
   * Ready videos indexed with a model other than the active one — or not indexed for a role at
   * all while a model for it is installed now (its stage was skipped for lack of one).
   */
  async staleVideos(
    active: { imageText: string | null; speech: string | null },
    accountId?: string,
  ): Promise<string[]> {
    const r = await this.modelCoverage(active, accountId);
    return [...new Set([...r["image-text"].stale, ...r.speech.stale])].sort();
  }

  /**
   * Per role, over ready (and failed) videos: `without` = indexed with no model for the role (its
   * stage skipped; for speech only videos that have audio), `stale` = would change with the active
   * model (`vsearch reindex`): indexed without one or with another version. One pass, for
   * `reindex`, `doctor` and the model commands' hints.
   */
  async modelCoverage(
    active: { imageText: string | null; speech: string | null },
    accountId?: string,
  ): Promise<Record<"image-text" | "speech", { without: string[]; stale: string[] }>> {
    const rows = await this.db.all<{
      id: string;
      stages: string;
      has_audio: number;
      frame_models: string | null;
      transcript_models: string | null;
    }>(accountId ? COVERAGE_OF_ACCOUNT : COVERAGE, ...(accountId ? [accountId] : []));
    const out = {
      "image-text": { without: [] as string[], stale: [] as string[] },
      speech: { without: [] as string[], stale: [] as string[] },
    };
    for (const r of rows) {
      const stages = JSON.parse(r.stages) as Record<string, { status: string; model_id?: string }>;
      const imageModel = stages.embeddings?.model_id ?? r.frame_models;
      const speechModel = stages.transcript?.model_id ?? r.transcript_models;
      if (!imageModel) out["image-text"].without.push(r.id);
      if (active.imageText !== null && imageModel !== active.imageText) out["image-text"].stale.push(r.id);
      if (r.has_audio === 1) {
        if (!speechModel || speechModel === "none") out.speech.without.push(r.id);
        if (active.speech !== null && speechModel !== active.speech) out.speech.stale.push(r.id);
      }
    }
    return out;
  }
}
