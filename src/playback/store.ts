import type { Database } from "bun:sqlite";

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
  constructor(private readonly db: Database) {}

  /**
   * Records that a video wants a web rendition (its task is queued beside it, renditions.ts).
   * Idempotent: a re-indexed video keeps a finished rendition (its source has not changed); a
   * failed one is tried again. True when the row is (again) `pending`: a task must be queued.
   */
  enqueue(videoId: string, accountId: string, at: string): boolean {
    return (
      this.db
        .query<{ video_id: string }, [string, string, string, string]>(
          `INSERT INTO renditions (video_id, account_id, status, created_at, updated_at) VALUES (?, ?, 'pending', ?, ?)
           ON CONFLICT (video_id) DO UPDATE SET status = 'pending', reason = NULL, updated_at = excluded.updated_at
           WHERE renditions.status = 'failed'
           RETURNING video_id`,
        )
        .get(videoId, accountId, at, at) !== null
    );
  }

  /** Its task was claimed: the encode is under way. */
  markProcessing(videoId: string): void {
    this.db
      .query("UPDATE renditions SET status = 'processing', updated_at = ? WHERE video_id = ?")
      .run(new Date().toISOString(), videoId);
  }

  /**
   * Records the outcome (inside the task's outcome transaction, which has already made sure the
   * task is still this worker's). False when the video is gone (its row went with it).
   */
  finish(
    videoId: string,
    f: { status: "ready" | "failed" | "not_needed"; reason: string; path?: string; sizeBytes?: number },
  ): boolean {
    const done =
      this.db
        .query(
          `UPDATE renditions SET status = ?, reason = ?, path = ?, size_bytes = ?, updated_at = ?
            WHERE video_id = ? AND status IN ('pending', 'processing')`,
        )
        .run(f.status, f.reason, f.path ?? null, f.sizeBytes ?? null, new Date().toISOString(), videoId).changes > 0;
    if (done && f.sizeBytes)
      this.db.query("UPDATE videos SET storage_bytes = storage_bytes + ? WHERE id = ?").run(f.sizeBytes, videoId);
    return done;
  }

  get(videoId: string): RenditionRow | null {
    return this.db.query<RenditionRow, [string]>("SELECT * FROM renditions WHERE video_id = ?").get(videoId);
  }

  /** The rendition's relative path when it is ready (what playback links and the media route use). */
  readyPath(videoId: string): string | null {
    return (
      this.db
        .query<{ path: string }, [string]>("SELECT path FROM renditions WHERE video_id = ? AND status = 'ready'")
        .get(videoId)?.path ?? null
    );
  }

  sourcePath(videoId: string): string | null {
    return (
      this.db.query<{ source_path: string }, [string]>("SELECT source_path FROM videos WHERE id = ?").get(videoId)
        ?.source_path ?? null
    );
  }

  transcript(videoId: string): TranscriptSegmentRow[] {
    return this.db
      .query<TranscriptSegmentRow, [string]>(
        "SELECT start_secs, end_secs, text FROM transcript_segments WHERE video_id = ? ORDER BY start_secs, id",
      )
      .all(videoId);
  }
}
