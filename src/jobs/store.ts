import type { Database } from "bun:sqlite";
import { nowIso } from "../core/ids.ts";
import type { JobRow, JobStatus } from "./schema.ts";

/**
 * The job records users read (GET /v1/jobs). The work itself is queued, claimed and leased as
 * tasks (task-store.ts, lease-queue.ts); these rows follow it: `pending` when the ingest task is
 * claimed, `processing` with its stage and progress, `done` / `failed` when the job's last task ends.
 */
export class JobStore {
  constructor(private readonly db: Database) {}

  insert(j: Pick<JobRow, "id" | "account_id" | "video_id" | "created_at">): void {
    this.db
      .query(
        "INSERT INTO jobs (id, account_id, video_id, status, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?)",
      )
      .run(j.id, j.account_id, j.video_id, j.created_at, j.created_at);
  }

  get(accountId: string, id: string): JobRow | null {
    return this.db
      .query<JobRow, [string, string]>("SELECT * FROM jobs WHERE account_id = ? AND id = ?")
      .get(accountId, id);
  }

  getById(id: string): JobRow | null {
    return this.db.query<JobRow, [string]>("SELECT * FROM jobs WHERE id = ?").get(id);
  }

  private where(accountId: string, f: { status?: JobStatus; videoId?: string }) {
    const parts = ["account_id = ?"];
    const args: string[] = [accountId];
    if (f.status) parts.push("status = ?"), args.push(f.status);
    if (f.videoId) parts.push("video_id = ?"), args.push(f.videoId);
    return { sql: parts.join(" AND "), args };
  }

  list(accountId: string, f: { status?: JobStatus; videoId?: string }, limit: number, offset: number): JobRow[] {
    const w = this.where(accountId, f);
    return this.db
      .query<JobRow, (string | number)[]>(
        `SELECT * FROM jobs WHERE ${w.sql} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      )
      .all(...w.args, limit, offset);
  }

  count(accountId: string, f: { status?: JobStatus; videoId?: string }): number {
    const w = this.where(accountId, f);
    return this.db.query<{ n: number }, string[]>(`SELECT count(*) AS n FROM jobs WHERE ${w.sql}`).get(...w.args)!.n;
  }

  /** Its ingest task was claimed (jobs/lease-queue.ts): `pending`, and one more attempt. */
  started(id: string): void {
    this.db
      .query("UPDATE jobs SET status = 'pending', attempts = attempts + 1, updated_at = ? WHERE id = ?")
      .run(nowIso(), id);
  }

  /** Its ingest task went back to the queue unfinished (its worker stopped or died): `queued` again. */
  requeued(id: string): void {
    this.db
      .query("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ? AND status IN ('pending', 'processing')")
      .run(nowIso(), id);
  }

  /** What the job is doing now (stage and progress; throttled by the caller). Only while it runs. */
  progress(id: string, stage: string, progressPct: number): void {
    this.db
      .query(
        `UPDATE jobs SET status = 'processing', stage = ?, progress_pct = ?, updated_at = ?
          WHERE id = ? AND status IN ('pending', 'processing')`,
      )
      .run(stage, progressPct, nowIso(), id);
  }

  /** The job ends. False when it had already ended (or is gone): nothing more may be announced. */
  finish(id: string, status: "done" | "failed", error?: { code: string; message: string }): boolean {
    return (
      this.db
        .query(
          `UPDATE jobs SET status = ?, progress_pct = CASE WHEN ? = 'done' THEN 100 ELSE progress_pct END,
                  error_code = ?, error_message = ?, stages_pending = '[]', updated_at = ?
            WHERE id = ? AND status NOT IN ('done', 'failed')`,
        )
        .run(status, status, error?.code ?? null, error?.message ?? null, nowIso(), id).changes === 1
    );
  }

  /** A failed job runs again from the top with a fresh crash count. Returns the row, or null if it is not failed. */
  retry(accountId: string, id: string): JobRow | null {
    return this.db
      .query<JobRow, [string, string, string]>(
        `UPDATE jobs SET status = 'queued', stage = NULL, progress_pct = 0, error_code = NULL, error_message = NULL, attempts = 0,
                stages_pending = '[]', updated_at = ?
          WHERE account_id = ? AND id = ? AND status = 'failed' RETURNING *`,
      )
      .get(nowIso(), accountId, id);
  }

  /** The stages this job still has to run after its video became searchable (progressive indexing). */
  setPending(id: string, stages: readonly string[]): void {
    this.db
      .query("UPDATE jobs SET stages_pending = ?, updated_at = ? WHERE id = ?")
      .run(JSON.stringify(stages), nowIso(), id);
  }

  countsByStatus(): { status: string; n: number }[] {
    return this.db
      .query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM jobs GROUP BY status")
      .all();
  }
}
