import { dialect, type Executor } from "../store/executor.ts";
import type { VideoRow, VideoStatus } from "./schema.ts";

export interface VideoFilter {
  collectionId?: string;
  statuses?: VideoStatus[];
}

const SET_STAGE = dialect({
  sqlite: "UPDATE videos SET stages = json_set(coalesce(stages, '{}'), '$.' || ?, json(?)) WHERE id = ?",
  pg: "UPDATE videos SET stages = jsonb_set(coalesce(stages, '{}')::jsonb, ARRAY[?]::text[], ?::jsonb)::text WHERE id = ?",
});
const SET_STAGE_AND_PROGRESS = dialect({
  sqlite:
    "UPDATE videos SET stages = json_set(coalesce(stages, '{}'), '$.' || ?, json(?)), progress_pct = ? WHERE id = ?",
  pg: "UPDATE videos SET stages = jsonb_set(coalesce(stages, '{}')::jsonb, ARRAY[?]::text[], ?::jsonb)::text, progress_pct = ? WHERE id = ?",
});

/** Listed, not `*`: PostgreSQL's `videos` has a `rowid` column rows must not take into answers. */
const VIDEO_COLUMNS = `id, account_id, collection_id, filename, status, progress_pct, container, mime_type, duration_secs,
  width, height, fps, codec, audio_codec, has_audio, file_size_bytes, storage_bytes, source_path, poster_path, stages,
  error_code, error_message, content_hash, warning, created_at, updated_at`;

export class VideoStore {
  constructor(private readonly db: Executor) {}

  async insert(v: VideoRow): Promise<void> {
    const cols = Object.keys(v);
    await this.db.run(
      `INSERT INTO videos (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      ...(Object.values(v) as never[]),
    );
  }

  async get(accountId: string, id: string): Promise<VideoRow | null> {
    return await this.db.get<VideoRow>(
      `SELECT ${VIDEO_COLUMNS} FROM videos WHERE account_id = ? AND id = ?`,
      accountId,
      id,
    );
  }

  async getById(id: string): Promise<VideoRow | null> {
    return await this.db.get<VideoRow>(`SELECT ${VIDEO_COLUMNS} FROM videos WHERE id = ?`, id);
  }

  private where(accountId: string, f: VideoFilter): { sql: string; args: string[] } {
    const parts = ["account_id = ?"];
    const args = [accountId];
    if (f.collectionId) {
      parts.push("collection_id = ?");
      args.push(f.collectionId);
    }
    if (f.statuses?.length) {
      parts.push(`status IN (${f.statuses.map(() => "?").join(",")})`);
      args.push(...f.statuses);
    }
    return { sql: parts.join(" AND "), args };
  }

  async list(accountId: string, f: VideoFilter, limit: number, offset: number): Promise<VideoRow[]> {
    const w = this.where(accountId, f);
    return await this.db.all<VideoRow>(
      `SELECT ${VIDEO_COLUMNS} FROM videos WHERE ${w.sql} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      ...w.args,
      limit,
      offset,
    );
  }

  async count(accountId: string, f: VideoFilter): Promise<number> {
    const w = this.where(accountId, f);
    return (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM videos WHERE ${w.sql}`, ...w.args))!.n;
  }

  /**
   * Records one stage's outcome in `videos.stages` (and the progress, when given) in one statement
   * that changes only that stage's key: two runs recording different stages of one video at once
   * cannot overwrite each other's, as writing the whole JSON from an in-memory copy could.
   */
  async setStage(id: string, stage: string, outcome: unknown, progressPct?: number): Promise<void> {
    await this.db.run(
      progressPct === undefined ? SET_STAGE : SET_STAGE_AND_PROGRESS,
      stage,
      JSON.stringify(outcome),
      ...(progressPct === undefined ? [] : [progressPct]),
      id,
    );
  }

  async update(id: string, fields: Partial<VideoRow>): Promise<void> {
    const entries = Object.entries(fields);
    if (!entries.length) return;
    await this.db.run(
      `UPDATE videos SET ${entries.map(([k]) => `${k} = ?`).join(", ")}, updated_at = ? WHERE id = ?`,
      ...(entries.map(([, v]) => v) as never[]),
      new Date().toISOString(),
      id,
    );
  }

  async delete(id: string): Promise<void> {
    await this.db.run("DELETE FROM videos WHERE id = ?", id);
  }

  async segmentsCount(id: string): Promise<number> {
    return (await this.db.get<{ n: number }>(
      `SELECT (SELECT count(*) FROM frames WHERE video_id = ?) + (SELECT count(*) FROM shots WHERE video_id = ?)
              + (SELECT count(*) FROM transcript_segments WHERE video_id = ?) + (SELECT count(*) FROM ocr_lines WHERE video_id = ?) AS n`,
      id,
      id,
      id,
      id,
    ))!.n;
  }

  /** The collection's videos of exactly this size: the only ones an upload can be a byte-for-byte copy of. */
  async sameSize(accountId: string, collectionId: string, sizeBytes: number): Promise<VideoRow[]> {
    return await this.db.all<VideoRow>(
      `SELECT ${VIDEO_COLUMNS} FROM videos WHERE account_id = ? AND collection_id = ? AND file_size_bytes = ? ORDER BY rowid`,
      accountId,
      collectionId,
      sizeBytes,
    );
  }

  /** Records a source's SHA-256 computed later (an HTTP upload's, when a same-size upload needed it). */
  async setContentHash(id: string, hash: string): Promise<void> {
    await this.db.run("UPDATE videos SET content_hash = ? WHERE id = ? AND content_hash IS NULL", hash, id);
  }

  async findByContent(accountId: string, collectionId: string, hash: string): Promise<VideoRow | null> {
    return await this.db.get<VideoRow>(
      `SELECT ${VIDEO_COLUMNS} FROM videos WHERE account_id = ? AND collection_id = ? AND content_hash = ?`,
      accountId,
      collectionId,
      hash,
    );
  }

  async allIds(accountId?: string): Promise<string[]> {
    const where = accountId ? " WHERE account_id = ?" : "";
    return (await this.db.all<{ id: string }>(`SELECT id FROM videos${where}`, ...(accountId ? [accountId] : []))).map(
      (r) => r.id,
    );
  }
}
