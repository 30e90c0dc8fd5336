import type { Executor } from "../store/executor.ts";
import { inChunks } from "../store/sql.ts";

export type RenditionStatus = "pending" | "processing" | "ready" | "failed" | "not_needed";

export interface RenditionRow {
  video_id: string;
  account_id: string;
  status: RenditionStatus;
  reason: string | null;
  path: string | null;
  size_bytes: number | null;
  created_at: string;
  updated_at: string;
}

export interface TranscriptSegmentRow {
  start_secs: number;
  end_secs: number;
  text: string;
}

/** All SQL of the playback domain: the rendition records (migration 007; their tasks: jobs/task-store.ts) and transcript reads. */
export class PlaybackStore {
  constructor(private readonly db: Executor) {}

  /**
   * Records that a video wants a web rendition (its task is queued beside it, renditions.ts).
   * Idempotent: a re-indexed video keeps a finished rendition (its source has not changed); a
   * failed one is tried again. True when the row is (again) `pending`: a task must be queued.
   */
  async enqueue(videoId: string, accountId: string, at: string): Promise<boolean> {
    return (
      ((
        await this.db.write<{ video_id: string }>(
          `INSERT INTO renditions (video_id, account_id, status, created_at, updated_at) VALUES (?, ?, 'pending', ?, ?)
           ON CONFLICT (video_id) DO UPDATE SET status = 'pending', reason = NULL, updated_at = excluded.updated_at
           WHERE renditions.status = 'failed'
           RETURNING video_id`,
          videoId,
          accountId,
          at,
          at,
        )
      )[0] ?? null) !== null
    );
  }

  /** Its task was claimed: the encode is under way. */
  async markProcessing(videoId: string): Promise<void> {
    await this.db.run(
      "UPDATE renditions SET status = 'processing', updated_at = ? WHERE video_id = ?",
      new Date().toISOString(),
      videoId,
    );
  }

  /**
   * Records the outcome (inside the task's outcome transaction, which has already made sure the
   * task is still this worker's). False when the video is gone (its row went with it).
   */
  async finish(
    videoId: string,
    f: { status: "ready" | "failed" | "not_needed"; reason: string; path?: string; sizeBytes?: number },
  ): Promise<boolean> {
    const done =
      (
        await this.db.run(
          `UPDATE renditions SET status = ?, reason = ?, path = ?, size_bytes = ?, updated_at = ?
            WHERE video_id = ? AND status IN ('pending', 'processing')`,
          f.status,
          f.reason,
          f.path ?? null,
          f.sizeBytes ?? null,
          new Date().toISOString(),
          videoId,
        )
      ).changes > 0;
    if (done && f.sizeBytes)
      await this.db.run("UPDATE videos SET storage_bytes = storage_bytes + ? WHERE id = ?", f.sizeBytes, videoId);
    return done;
  }

  async get(videoId: string): Promise<RenditionRow | null> {
    return await this.db.get<RenditionRow>("SELECT * FROM renditions WHERE video_id = ?", videoId);
  }

  /** The rendition's relative path when it is ready (what playback links and the media route use). */
  async readyPath(videoId: string): Promise<string | null> {
    return (
      (
        await this.db.get<{ path: string }>(
          "SELECT path FROM renditions WHERE video_id = ? AND status = 'ready'",
          videoId,
        )
      )?.path ?? null
    );
  }

  /** Which of `videoIds` have a ready web rendition (one look-up for a page of results). */
  async readyVideos(videoIds: readonly string[]): Promise<Set<string>> {
    const rows = await inChunks(videoIds, (part, marks) =>
      this.db.all<{ video_id: string }>(
        `SELECT video_id FROM renditions WHERE status = 'ready' AND video_id IN (${marks})`,
        ...part,
      ),
    );
    return new Set(rows.map((r) => r.video_id));
  }

  async sourcePath(videoId: string): Promise<string | null> {
    return (
      (await this.db.get<{ source_path: string }>("SELECT source_path FROM videos WHERE id = ?", videoId))
        ?.source_path ?? null
    );
  }

  async transcript(videoId: string): Promise<TranscriptSegmentRow[]> {
    return await this.db.all<TranscriptSegmentRow>(
      "SELECT start_secs, end_secs, text FROM transcript_segments WHERE video_id = ? ORDER BY start_secs, id",
      videoId,
    );
  }
}
