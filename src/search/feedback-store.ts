import type { Database } from "bun:sqlite";
import { inChunks } from "../store/sql.ts";

export interface FeedbackRow {
  id: number;
  account_id: string;
  video_id: string;
  timestamp_start: number;
  signal: "up" | "down";
  query: string | null;
  raw_score: number | null;
  threshold_key: string | null;
  threshold_delta: number;
  created_at: string;
  updated_at: string;
}

export interface ThresholdRow {
  key: string;
  value: number;
  ups: number;
  downs: number;
}

/** Feedback matches a segment whose start is within 0.01 s (SPEC §6). */
const TOLERANCE = 0.0100001;

/** Search feedback and the per-account thresholds it tunes (read/write). */
export class FeedbackStore {
  constructor(private readonly db: Database) {}

  findFeedback(accountId: string, videoId: string, t: number): FeedbackRow | null {
    return this.db
      .query<FeedbackRow, [string, string, number, number]>(
        `SELECT * FROM search_feedback WHERE account_id = ? AND video_id = ? AND abs(timestamp_start - ?) <= ${TOLERANCE}
         ORDER BY abs(timestamp_start - ?) LIMIT 1`,
      )
      .get(accountId, videoId, t, t);
  }

  insertFeedback(r: Omit<FeedbackRow, "id">): void {
    this.db
      .query(
        `INSERT INTO search_feedback (account_id, video_id, timestamp_start, signal, query, raw_score, threshold_key, threshold_delta, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        r.account_id,
        r.video_id,
        r.timestamp_start,
        r.signal,
        r.query,
        r.raw_score,
        r.threshold_key,
        r.threshold_delta,
        r.created_at,
        r.updated_at,
      );
  }

  updateFeedback(
    id: number,
    r: Pick<FeedbackRow, "signal" | "query" | "raw_score" | "threshold_key" | "threshold_delta" | "updated_at">,
  ): void {
    this.db
      .query(
        "UPDATE search_feedback SET signal = ?, query = ?, raw_score = ?, threshold_key = ?, threshold_delta = ?, updated_at = ? WHERE id = ?",
      )
      .run(r.signal, r.query, r.raw_score, r.threshold_key, r.threshold_delta, r.updated_at, id);
  }

  deleteFeedback(id: number): void {
    this.db.query("DELETE FROM search_feedback WHERE id = ?").run(id);
  }

  /** Starts of the account's hidden (`down`) segments per video. */
  hiddenStarts(accountId: string, videoIds: string[]): Map<string, number[]> {
    const rows = inChunks(videoIds, (part, marks) =>
      this.db
        .query<{ video_id: string; timestamp_start: number }, string[]>(
          `SELECT video_id, timestamp_start FROM search_feedback WHERE account_id = ? AND signal = 'down' AND video_id IN (${marks})`,
        )
        .all(accountId, ...part),
    );
    const out = new Map<string, number[]>();
    for (const r of rows) {
      let l = out.get(r.video_id);
      if (!l) out.set(r.video_id, (l = []));
      l.push(r.timestamp_start);
    }
    return out;
  }

  thresholds(accountId: string): Map<string, ThresholdRow> {
    const rows = this.db
      .query<ThresholdRow, [string]>("SELECT key, value, ups, downs FROM search_thresholds WHERE account_id = ?")
      .all(accountId);
    return new Map(rows.map((r) => [r.key, r]));
  }

  upsertThreshold(accountId: string, key: string, value: number, ups: number, downs: number, at: string): void {
    this.db
      .query(
        `INSERT INTO search_thresholds (account_id, key, value, ups, downs, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (account_id, key) DO UPDATE SET value = excluded.value, ups = excluded.ups, downs = excluded.downs, updated_at = excluded.updated_at`,
      )
      .run(accountId, key, value, ups, downs, at);
  }
}
