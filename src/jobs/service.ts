import type { Database } from "bun:sqlite";
import { AppError, notFound } from "../core/errors.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import type { JobStore } from "./store.ts";
import { type Job, type JobStatus, toJob } from "./schema.ts";

export interface JobRetryHooks {
  /** Inside the retry's transaction: the video goes back to `queued` with its error cleared. */
  resetVideo(videoId: string): void;
  /** After commit: start the job now instead of at the next poll. */
  wake(): void;
}

export class JobService {
  constructor(
    private readonly store: JobStore,
    private readonly db?: Database,
    private readonly hooks?: JobRetryHooks,
  ) {}

  get(accountId: string, id: string): Job {
    const row = this.store.get(accountId, id);
    if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
    return toJob(row);
  }

  list(accountId: string, f: { status?: JobStatus; videoId?: string }, page: Page): { items: Job[]; total: number } {
    return { items: this.store.list(accountId, f, page.perPage, offsetOf(page)).map(toJob), total: this.store.count(accountId, f) };
  }

  /** The account a job belongs to (operator commands address jobs by id alone). */
  accountOf(id: string): string {
    const row = this.store.getById(id);
    if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
    return row.account_id;
  }

  /**
   * Runs a failed job again from the top (after the operator fixed the cause: freed disk,
   * installed a model, replaced a crashing one). The crash count starts over. Only failed jobs:
   * a queued or running job is already going to run, a done one has nothing to redo (`vsearch
   * reindex` re-indexes finished videos).
   */
  retry(accountId: string, id: string): Job {
    if (!this.db || !this.hooks) throw new Error("JobService.retry needs the database and hooks");
    const hooks = this.hooks;
    const row = this.db.transaction(() => {
      const current = this.store.get(accountId, id);
      if (!current) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
      if (current.status !== "failed") {
        throw new AppError(409, "JOB_NOT_RETRYABLE", `Job ${id} is ${current.status}; only failed jobs can be retried`);
      }
      const r = this.store.retry(accountId, id)!;
      hooks.resetVideo(r.video_id);
      return r;
    }).immediate();
    hooks.wake();
    return toJob(row);
  }
}
