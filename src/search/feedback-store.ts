import type { Executor } from "../store/executor.ts";
import { inChunks, lockAccount } from "../store/sql.ts";

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
  constructor(private readonly db: Executor) {}

  /** Locks the account's row for this unit of work (store/sql.ts lockAccount): thresholds move one writer at a time. */
  async lockAccount(accountId: string): Promise<boolean> {
    return await lockAccount(this.db, accountId);
  }

  async findFeedback(accountId: string, videoId: string, t: number): Promise<FeedbackRow | null> {
    return await this.db.get<FeedbackRow>(
      `SELECT * FROM search_feedback WHERE account_id = ? AND video_id = ? AND abs(timestamp_start - ?) <= ${TOLERANCE}
         ORDER BY abs(timestamp_start - ?) LIMIT 1`,
      accountId,
      videoId,
      t,
      t,
    );
  }

  async insertFeedback(r: Omit<FeedbackRow, "id">): Promise<void> {
    await this.db.run(
      `INSERT INTO search_feedback (account_id, video_id, timestamp_start, signal, query, raw_score, threshold_key, threshold_delta, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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

  async updateFeedback(
    id: number,
    r: Pick<FeedbackRow, "signal" | "query" | "raw_score" | "threshold_key" | "threshold_delta" | "updated_at">,
  ): Promise<void> {
    await this.db.run(
      "UPDATE search_feedback SET signal = ?, query = ?, raw_score = ?, threshold_key = ?, threshold_delta = ?, updated_at = ? WHERE id = ?",
      r.signal,
      r.query,
      r.raw_score,
      r.threshold_key,
      r.threshold_delta,
      r.updated_at,
      id,
    );
  }

  async deleteFeedback(id: number): Promise<void> {
    await this.db.run("DELETE FROM search_feedback WHERE id = ?", id);
  }

  /** Starts of the account's hidden (`down`) segments per video. */
  async hiddenStarts(accountId: string, videoIds: string[]): Promise<Map<string, number[]>> {
    const rows = await inChunks(
      videoIds,
      async (part, marks) =>
        await this.db.all<{ video_id: string; timestamp_start: number }>(
          `SELECT video_id, timestamp_start FROM search_feedback WHERE account_id = ? AND signal = 'down' AND video_id IN (${marks})`,
          accountId,
          ...part,
        ),
    );
    const out = new Map<string, number[]>();
    for (const r of rows) {
      let l = out.get(r.video_id);
      if (!l) out.set(r.video_id, (l = []));
      l.push(r.timestamp_start);
    }
    return out;
  }

  async thresholds(accountId: string): Promise<Map<string, ThresholdRow>> {
    const rows = await this.db.all<ThresholdRow>(
      "SELECT key, value, ups, downs FROM search_thresholds WHERE account_id = ?",
      accountId,
    );
    return new Map(rows.map((r) => [r.key, r]));
  }

  async upsertThreshold(
    accountId: string,
    key: string,
    value: number,
    ups: number,
    downs: number,
    at: string,
  ): Promise<void> {
    await this.db.run(
      `INSERT INTO search_thresholds (account_id, key, value, ups, downs, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (account_id, key) DO UPDATE SET value = excluded.value, ups = excluded.ups, downs = excluded.downs, updated_at = excluded.updated_at`,
      accountId,
      key,
      value,
      ups,
      downs,
      at,
    );
  }
}
