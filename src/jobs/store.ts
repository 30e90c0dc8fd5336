import type { Database } from "bun:sqlite";
import { nowIso } from "../core/ids.ts";
import type { JobRow, JobStatus } from "./schema.ts";

/**
 * The durable queue. Claiming is one UPDATE … RETURNING, so two workers (threads today,
 * processes on other machines later) can never take the same job. A claim is a lease: a worker
 * that dies stops renewing it and the job becomes claimable again.
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

  claim(owner: string, leaseMs: number, nowMs: number): JobRow | null {
    return this.db
      .query<JobRow, [string, number, string, number]>(
        `UPDATE jobs SET status = 'pending', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1, updated_at = ?
          WHERE id = (SELECT id FROM jobs
                       WHERE status = 'queued' OR (status IN ('pending', 'processing') AND lease_expires_at < ?)
                       ORDER BY created_at, rowid LIMIT 1)
          RETURNING *`,
      )
      .get(owner, nowMs + leaseMs, nowIso(nowMs), nowMs);
  }

  /** Progress + lease renewal. Returns false if the lease was lost (the job belongs to someone else now). */
  heartbeat(id: string, owner: string, stage: string, progressPct: number, leaseUntil: number): boolean {
    return (
      this.db
        .query(
          `UPDATE jobs SET status = 'processing', stage = ?, progress_pct = ?, lease_expires_at = ?, updated_at = ?
            WHERE id = ? AND lease_owner = ? AND status IN ('pending', 'processing')`,
        )
        .run(stage, progressPct, leaseUntil, nowIso(), id, owner).changes === 1
    );
  }

  finish(id: string, owner: string, status: "done" | "failed", error?: { code: string; message: string }): boolean {
    return (
      this.db
        .query(
          `UPDATE jobs SET status = ?, progress_pct = CASE WHEN ? = 'done' THEN 100 ELSE progress_pct END,
                  error_code = ?, error_message = ?, stages_pending = '[]', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
            WHERE id = ? AND lease_owner = ?`,
        )
        .run(status, status, error?.code ?? null, error?.message ?? null, nowIso(), id, owner).changes === 1
    );
  }

  /** Gives a claimed job back (disk full mid-run): queued again, and this claim does not count as a crash. */
  requeue(id: string, owner: string): boolean {
    return (
      this.db
        .query(
          `UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, attempts = max(attempts - 1, 0), updated_at = ?
            WHERE id = ? AND lease_owner = ?`,
        )
        .run(nowIso(), id, owner).changes === 1
    );
  }

  /** A failed job runs again from the top with a fresh crash count. Returns the row, or null if it is not failed. */
  retry(accountId: string, id: string): JobRow | null {
    return this.db
      .query<JobRow, [string, string, string]>(
        `UPDATE jobs SET status = 'queued', stage = NULL, progress_pct = 0, error_code = NULL, error_message = NULL, attempts = 0, stages_pending = '[]',
                lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
          WHERE account_id = ? AND id = ? AND status = 'failed' RETURNING *`,
      )
      .get(nowIso(), accountId, id);
  }

  /** The stages this job still has to run after its video became searchable (progressive indexing). */
  setPending(id: string, owner: string, stages: readonly string[]): void {
    this.db
      .query("UPDATE jobs SET stages_pending = ?, updated_at = ? WHERE id = ? AND lease_owner = ?")
      .run(JSON.stringify(stages), nowIso(), id, owner);
  }

  /** At `serve` start (the instance lock is held, so no other worker is alive): release every lease. */
  releaseAllLeases(): number {
    return this.db
      .query(
        "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL WHERE status IN ('pending', 'processing')",
      )
      .run().changes;
  }

  countsByStatus(): { status: string; n: number }[] {
    return this.db
      .query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM jobs GROUP BY status")
      .all();
  }
}
