import { notFound } from "../core/errors.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import type { JobStore } from "./store.ts";
import { type Job, type JobStatus, toJob } from "./schema.ts";

export class JobService {
  constructor(private readonly store: JobStore) {}

  get(accountId: string, id: string): Job {
    const row = this.store.get(accountId, id);
    if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
    return toJob(row);
  }

  list(accountId: string, f: { status?: JobStatus; videoId?: string }, page: Page): { items: Job[]; total: number } {
    return { items: this.store.list(accountId, f, page.perPage, offsetOf(page)).map(toJob), total: this.store.count(accountId, f) };
  }
}
