import type { Executor } from "../store/executor.ts";
import { nowIso } from "../core/ids.ts";
import type { JobRow, JobStatus } from "./schema.ts";

/**
 * The job records users read (GET /v1/jobs). The work itself is queued, claimed and leased as
 * tasks (task-store.ts, lease-queue.ts); these rows follow it: `pending` when the ingest task is
 * claimed, `processing` with its stage and progress, `done` / `failed` when the job's last task ends.
 */
/** Listed, not `*`: PostgreSQL's `jobs` has a `rowid` column rows must not take into answers. */
const JOB_COLUMNS =
  "id, account_id, video_id, status, stage, progress_pct, stages_pending, error_code, error_message, attempts, created_at, updated_at";

export class JobStore {
  constructor(private readonly db: Executor) {}

  async insert(j: Pick<JobRow, "id" | "account_id" | "video_id" | "created_at">): Promise<void> {
    await this.db.run(
      "INSERT INTO jobs (id, account_id, video_id, status, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?)",
      j.id,
      j.account_id,
      j.video_id,
      j.created_at,
      j.created_at,
    );
  }

  async get(accountId: string, id: string): Promise<JobRow | null> {
    return await this.db.get<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE account_id = ? AND id = ?`, accountId, id);
  }

  async getById(id: string): Promise<JobRow | null> {
    return await this.db.get<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`, id);
  }

  private where(accountId: string, f: { status?: JobStatus; videoId?: string }) {
    const parts = ["account_id = ?"];
    const args: string[] = [accountId];
    if (f.status) parts.push("status = ?"), args.push(f.status);
    if (f.videoId) parts.push("video_id = ?"), args.push(f.videoId);
    return { sql: parts.join(" AND "), args };
  }

  async list(
    accountId: string,
    f: { status?: JobStatus; videoId?: string },
    limit: number,
    offset: number,
  ): Promise<JobRow[]> {
    const w = this.where(accountId, f);
    return await this.db.all<JobRow>(
      `SELECT ${JOB_COLUMNS} FROM jobs WHERE ${w.sql} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      ...w.args,
      limit,
      offset,
    );
  }

  async count(accountId: string, f: { status?: JobStatus; videoId?: string }): Promise<number> {
    const w = this.where(accountId, f);
    return (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE ${w.sql}`, ...w.args))!.n;
  }

  /** Its ingest task was claimed (jobs/lease-queue.ts): `pending`, and one more attempt. */
  async started(id: string): Promise<void> {
    await this.db.run(
      "UPDATE jobs SET status = 'pending', attempts = attempts + 1, updated_at = ? WHERE id = ?",
      nowIso(),
      id,
    );
  }

  /** Its ingest task went back to the queue unfinished (its worker stopped or died): `queued` again. */
  async requeued(id: string): Promise<void> {
    await this.db.run(
      "UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ? AND status IN ('pending', 'processing')",
      nowIso(),
      id,
    );
  }

  /** What the job is doing now (stage and progress; throttled by the caller). Only while it runs. */
  async progress(id: string, stage: string, progressPct: number): Promise<void> {
    await this.db.run(
      `UPDATE jobs SET status = 'processing', stage = ?, progress_pct = ?, updated_at = ?
          WHERE id = ? AND status IN ('pending', 'processing')`,
      stage,
      progressPct,
      nowIso(),
      id,
    );
  }

  /** The job ends. False when it had already ended (or is gone): nothing more may be announced. */
  async finish(id: string, status: "done" | "failed", error?: { code: string; message: string }): Promise<boolean> {
    return (
      (
        await this.db.run(
          `UPDATE jobs SET status = ?, progress_pct = CASE WHEN ? = 'done' THEN 100 ELSE progress_pct END,
                  error_code = ?, error_message = ?, stages_pending = '[]', updated_at = ?
            WHERE id = ? AND status NOT IN ('done', 'failed')`,
          status,
          status,
          error?.code ?? null,
          error?.message ?? null,
          nowIso(),
          id,
        )
      ).changes === 1
    );
  }

  /** A failed job runs again from the top with a fresh crash count. Returns the row, or null if it is not failed. */
  async retry(accountId: string, id: string): Promise<JobRow | null> {
    return (
      (
        await this.db.write<JobRow>(
          `UPDATE jobs SET status = 'queued', stage = NULL, progress_pct = 0, error_code = NULL, error_message = NULL, attempts = 0,
                stages_pending = '[]', updated_at = ?
          WHERE account_id = ? AND id = ? AND status = 'failed' RETURNING ${JOB_COLUMNS}`,
          nowIso(),
          accountId,
          id,
        )
      )[0] ?? null
    );
  }

  /** The stages this job still has to run after its video became searchable (progressive indexing). */
  async setPending(id: string, stages: readonly string[]): Promise<void> {
    await this.db.run(
      "UPDATE jobs SET stages_pending = ?, updated_at = ? WHERE id = ?",
      JSON.stringify(stages),
      nowIso(),
      id,
    );
  }

  async countsByStatus(): Promise<{ status: string; n: number }[]> {
    return await this.db.all<{ status: string; n: number }>("SELECT status, count(*) AS n FROM jobs GROUP BY status");
  }
}
