import type { Database } from "bun:sqlite";

export type RenditionStatus = "pending" | "processing" | "ready" | "failed" | "not_needed";

export interface RenditionRow {
  video_id: string;
  account_id: string;
  status: RenditionStatus;
  reason: string | null;
  path: string | null;
  size_bytes: number | null;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  created_at: string;
  updated_at: string;
}

export interface TranscriptSegmentRow {
  start_secs: number;
  end_secs: number;
  text: string;
}

/** All SQL of the playback domain: the rendition queue (migration 007) and transcript reads. */
export class PlaybackStore {
  constructor(private readonly db: Database) {}

  /**
   * Queues a video for the rendition worker. Idempotent: a re-indexed video keeps a finished
   * rendition (its source has not changed); a failed one is tried again.
   */
  enqueue(videoId: string, accountId: string, at: string): void {
    this.db
      .query(
        `INSERT INTO renditions (video_id, account_id, status, created_at, updated_at) VALUES (?, ?, 'pending', ?, ?)
         ON CONFLICT (video_id) DO UPDATE SET status = 'pending', attempts = 0, reason = NULL, updated_at = excluded.updated_at
         WHERE renditions.status = 'failed'`,
      )
      .run(videoId, accountId, at, at);
  }

  /** Claims the oldest pending row, or one whose encoder's lease ran out, with a lease. */
  claim(owner: string, leaseMs: number, now: number): RenditionRow | null {
    return this.db
      .query<RenditionRow, [string, number, string, number]>(
        `UPDATE renditions SET status = 'processing', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1, updated_at = ?
         WHERE video_id = (SELECT video_id FROM renditions
                           WHERE status = 'pending' OR (status = 'processing' AND lease_expires_at < ?)
                           ORDER BY created_at LIMIT 1)
         RETURNING *`,
      )
      .get(owner, now + leaseMs, new Date(now).toISOString(), now);
  }

  renew(videoId: string, owner: string, until: number): boolean {
    return (
      this.db
        .query(
          "UPDATE renditions SET lease_expires_at = ? WHERE video_id = ? AND lease_owner = ? AND status = 'processing'",
        )
        .run(until, videoId, owner).changes > 0
    );
  }

  /** Records the outcome if this owner still holds the row (a deleted video has none). */
  finish(
    videoId: string,
    owner: string,
    f: { status: "ready" | "failed" | "not_needed" | "pending"; reason: string; path?: string; sizeBytes?: number },
  ): boolean {
    return this.db.transaction(() => {
      const done =
        this.db
          .query(
            `UPDATE renditions SET status = ?, reason = ?, path = ?, size_bytes = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
           WHERE video_id = ? AND lease_owner = ? AND status = 'processing'`,
          )
          .run(f.status, f.reason, f.path ?? null, f.sizeBytes ?? null, new Date().toISOString(), videoId, owner)
          .changes > 0;
      if (done && f.sizeBytes)
        this.db.query("UPDATE videos SET storage_bytes = storage_bytes + ? WHERE id = ?").run(f.sizeBytes, videoId);
      return done;
    })();
  }

  /** At server start (the instance lock is held): encodes of a previous process are queued again. */
  releaseAllLeases(): number {
    return this.db
      .query(
        "UPDATE renditions SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL WHERE status = 'processing'",
      )
      .run().changes;
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
