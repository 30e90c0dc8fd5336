import type { Database } from "bun:sqlite";
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
export class IndexStore {
  private readonly vecTables = new Set<string>();

  constructor(
    private readonly db: Database,
    private readonly vecEnabled: boolean,
  ) {}

  /** vec0 tables have a fixed dimension, so there is one per embedding size (`vec_frames_512`). */
  private vecTable(kind: "frames" | "shots", dim: number): string | null {
    if (!this.vecEnabled) return null;
    const name = `vec_${kind}_${dim}`;
    if (!this.vecTables.has(name)) {
      this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING vec0(
           id INTEGER PRIMARY KEY, account_id TEXT PARTITION KEY,
           embedding float[${dim}] distance_metric=cosine, chunk_size=${VEC_CHUNK_SIZE})`,
      );
      this.vecTables.add(name);
    }
    return name;
  }

  private existingVecTables(kind: "frames" | "shots"): string[] {
    return this.db
      .query<{ name: string }, [string]>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ?")
      .all(`vec_${kind}_[0-9]*`)
      .map((r) => r.name)
      .filter((n) => /^vec_(frames|shots)_\d+$/.test(n));
  }

  private deleteVectors(kind: "frames" | "shots", ids: number[]): void {
    if (!this.vecEnabled || ids.length === 0) return;
    for (const table of this.existingVecTables(kind)) {
      for (let i = 0; i < ids.length; i += 500) {
        const part = ids.slice(i, i + 500);
        this.db.query(`DELETE FROM ${table} WHERE id IN (${part.map(() => "?").join(",")})`).run(...part);
      }
    }
  }

  private ids(sql: string, videoId: string): number[] {
    return this.db
      .query<{ id: number }, [string]>(sql)
      .all(videoId)
      .map((r) => r.id);
  }

  replaceFrames(scope: VideoScope, frames: FrameInput[], modelId: string): number[] {
    return this.db.transaction(() => {
      this.deleteVectors("frames", this.ids("SELECT id FROM frames WHERE video_id = ?", scope.videoId));
      this.db.query("DELETE FROM frames WHERE video_id = ?").run(scope.videoId);
      const insert = this.db.query<{ id: number }, [string, string, string, number, number, string]>(
        "INSERT INTO frames (video_id, account_id, collection_id, shot_index, timestamp, model_id) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
      );
      const vec = this.db.query("INSERT INTO frame_vectors (frame_id, embedding) VALUES (?, ?)");
      const table = frames.length ? this.vecTable("frames", frames[0].embedding.length) : null;
      const vecIndex = table
        ? this.db.query(`INSERT INTO ${table} (id, account_id, embedding) VALUES (?, ?, ?)`)
        : null;
      const ids: number[] = [];
      for (const f of frames) {
        const { id } = insert.get(
          scope.videoId,
          scope.accountId,
          scope.collectionId,
          f.shotIndex,
          f.timestamp,
          modelId,
        )!;
        vec.run(id, blob(f.embedding));
        vecIndex?.run(id, scope.accountId, blob(f.embedding));
        ids.push(id);
      }
      return ids;
    })();
  }

  replaceShots(scope: VideoScope, shots: ShotInput[], modelId: string | null): number[] {
    return this.db.transaction(() => {
      this.deleteVectors("shots", this.ids("SELECT id FROM shots WHERE video_id = ?", scope.videoId));
      this.db.query("DELETE FROM shots WHERE video_id = ?").run(scope.videoId);
      const insert = this.db.query<{ id: number }, (string | number | null)[]>(
        `INSERT INTO shots (video_id, account_id, collection_id, shot_index, start_secs, end_secs, keyframe_secs,
                            thumbnail_path, labels, caption, model_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      );
      const vec = this.db.query("INSERT INTO shot_vectors (shot_id, embedding) VALUES (?, ?)");
      const withVec = shots.find((s) => s.embedding);
      const table = withVec ? this.vecTable("shots", withVec.embedding!.length) : null;
      const vecIndex = table
        ? this.db.query(`INSERT INTO ${table} (id, account_id, embedding) VALUES (?, ?, ?)`)
        : null;
      const ids: number[] = [];
      for (const s of shots) {
        const { id } = insert.get(
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
        )!;
        if (s.embedding) {
          vec.run(id, blob(s.embedding));
          vecIndex?.run(id, scope.accountId, blob(s.embedding));
        }
        ids.push(id);
      }
      return ids;
    })();
  }

  replaceTranscript(scope: VideoScope, segments: TranscriptInput[], modelId: string): void {
    this.db.transaction(() => {
      this.db.query("DELETE FROM transcript_segments WHERE video_id = ?").run(scope.videoId);
      const insert = this.db.query(
        "INSERT INTO transcript_segments (video_id, account_id, collection_id, start_secs, end_secs, text, model_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
      );
      for (const s of segments)
        insert.run(scope.videoId, scope.accountId, scope.collectionId, s.start, s.end, s.text, modelId);
    })();
  }

  /** The video's on-screen text lines (the `ocr` stage); replaces what an earlier run wrote. */
  replaceOcrLines(scope: VideoScope, lines: OcrLineInput[]): void {
    this.db.transaction(() => {
      this.db.query("DELETE FROM ocr_lines WHERE video_id = ?").run(scope.videoId);
      const insert = this.db.query(
        `INSERT INTO ocr_lines (video_id, account_id, collection_id, start_secs, end_secs, text, search_text, confidence, box_x, box_y, box_w, box_h)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const l of lines) {
        insert.run(
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
        );
      }
    })();
  }

  /** The video's shots in order (a resumed run's enrichment stages need them). */
  shotSpans(videoId: string): { index: number; start: number; end: number }[] {
    return this.db
      .query<{ index: number; start: number; end: number }, [string]>(
        "SELECT shot_index AS [index], start_secs AS start, end_secs AS end FROM shots WHERE video_id = ? ORDER BY shot_index",
      )
      .all(videoId);
  }

  /** The video's frames in time order, with their model and whether the exact vector is stored (checks and tests). */
  framesOf(
    videoId: string,
  ): { id: number; timestamp: number; shot_index: number; model_id: string; has_vector: boolean }[] {
    return this.db
      .query<{ id: number; timestamp: number; shot_index: number; model_id: string; has_vector: number }, [string]>(
        `SELECT f.id, f.timestamp, f.shot_index, f.model_id, EXISTS (SELECT 1 FROM frame_vectors v WHERE v.frame_id = f.id) AS has_vector
         FROM frames f WHERE f.video_id = ? ORDER BY f.timestamp`,
      )
      .all(videoId)
      .map((r) => ({ ...r, has_vector: r.has_vector === 1 }));
  }

  /** Removes the rows SQLite cannot cascade (vec0 virtual tables); call before deleting the video row. */
  deleteVideoVectors(videoId: string): void {
    this.deleteVectors("frames", this.ids("SELECT id FROM frames WHERE video_id = ?", videoId));
    this.deleteVectors("shots", this.ids("SELECT id FROM shots WHERE video_id = ?", videoId));
  }

  /**
   * Ready videos indexed with a model other than the active one — or not indexed for a role at
   * all while a model for it is installed now (its stage was skipped for lack of one).
   */
  staleVideos(active: { imageText: string | null; speech: string | null }, accountId?: string): string[] {
    const r = this.modelCoverage(active, accountId);
    return [...new Set([...r["image-text"].stale, ...r.speech.stale])].sort();
  }

  /**
   * Per role, over ready (and failed) videos: `without` = indexed with no model for the role (its
   * stage skipped; for speech only videos that have audio), `stale` = would change with the active
   * model (`vsearch reindex`): indexed without one or with another version. One pass, for
   * `reindex`, `doctor` and the model commands' hints.
   */
  modelCoverage(
    active: { imageText: string | null; speech: string | null },
    accountId?: string,
  ): Record<"image-text" | "speech", { without: string[]; stale: string[] }> {
    const rows = this.db
      .query<
        {
          id: string;
          stages: string;
          has_audio: number;
          frame_models: string | null;
          transcript_models: string | null;
        },
        string[]
      >(
        `SELECT v.id, v.stages, v.has_audio,
                (SELECT group_concat(DISTINCT model_id) FROM frames f WHERE f.video_id = v.id) AS frame_models,
                (SELECT group_concat(DISTINCT model_id) FROM transcript_segments t WHERE t.video_id = v.id) AS transcript_models
           FROM videos v WHERE v.status IN ('ready', 'failed') ${accountId ? "AND v.account_id = ?" : ""} ORDER BY v.id`,
      )
      .all(...(accountId ? [accountId] : []));
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
