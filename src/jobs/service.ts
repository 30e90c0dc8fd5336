import { AppError, notFound } from "../core/errors.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import type { EventPublisher } from "../events/bus.ts";
import type { EventStore } from "../events/store.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { JobError } from "./failure.ts";
import type { LeaseQueue } from "./lease-queue.ts";
import type { JobStore } from "./store.ts";
import { type Job, type JobRow, type JobStatus, toJob } from "./schema.ts";

/**
 * What a job's changes do to the rest of the appliance. jobs/ sits below videos/ and credits/
 * (test/architecture/layers.ts), so those writes come in as hooks, wired in app.ts.
 */
export interface JobHooks {
  /** Inside the retry's transaction: the video goes back to `queued` with its error cleared. */
  resetVideo(videoId: string): Promise<void>;
  /**
   * Inside the completion transaction: the video becomes `ready` at 100 % with its storage
   * counted. Null when the video is gone (deleted meanwhile): nothing more happens.
   */
  videoDone(videoId: string): Promise<{ durationSecs: number } | null>;
  /** Inside the failure transaction: the video becomes `failed` with the job's error. */
  videoFailed(videoId: string, error: JobError): Promise<void>;
  /** Inside the completion transaction (credits are charged with the change they pay for). */
  charge(accountId: string, durationSecs: number): Promise<void>;
  /**
   * Inside the transaction that makes the video searchable (its ingest task's end): work that
   * must follow it durably but never delay it (the web rendition, SPEC §11).
   */
  searchable(videoId: string, accountId: string): Promise<void>;
  /** job.retried, job.completed: delivered once their transaction commits (events/bus.ts). */
  bus: EventPublisher;
}

export class JobService {
  constructor(
    private readonly store: JobStore,
    private readonly uow?: UnitOfWork,
    private readonly hooks?: JobHooks,
    private readonly events?: EventStore,
    /** Where a retried job's ingest task is queued. */
    private readonly tasks?: Pick<LeaseQueue, "enqueue">,
  ) {}

  async get(accountId: string, id: string): Promise<Job> {
    const row = await this.store.get(accountId, id);
    if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
    return toJob(row);
  }

  async list(
    accountId: string,
    f: { status?: JobStatus; videoId?: string },
    page: Page,
  ): Promise<{ items: Job[]; total: number }> {
    return {
      items: (await this.store.list(accountId, f, page.perPage, offsetOf(page))).map(toJob),
      total: await this.store.count(accountId, f),
    };
  }

  /** A job's row by id alone (its tasks carry the id), or null once it is gone. */
  async row(id: string): Promise<JobRow | null> {
    return await this.store.getById(id);
  }

  /** The account a job belongs to (operator commands address jobs by id alone). */
  async accountOf(id: string): Promise<string> {
    const row = await this.store.getById(id);
    if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
    return row.account_id;
  }

  /**
   * Runs a failed job again from the top (after the operator fixed the cause: freed disk,
   * installed a model, replaced a crashing one). The crash count starts over. Only failed jobs:
   * a queued or running job is already going to run, a done one has nothing to redo (`vsearch
   * reindex` re-indexes finished videos).
   */
  async retry(accountId: string, id: string): Promise<Job> {
    if (!this.uow || !this.hooks || !this.tasks)
      throw new Error("JobService.retry needs the unit of work, hooks and the task queue");
    const { hooks, tasks } = this;
    const row = await this.uow.run(async () => {
      const current = await this.store.get(accountId, id);
      if (!current) throw notFound("JOB_NOT_FOUND", `Job ${id}`);
      if (current.status !== "failed") {
        throw new AppError("JOB_NOT_RETRYABLE", `Job ${id} is ${current.status}; only failed jobs can be retried`);
      }
      const r = (await this.store.retry(accountId, id))!;
      await hooks.resetVideo(r.video_id);
      await tasks.enqueue({ kind: "ingest", accountId, videoId: r.video_id, jobId: r.id });
      return r;
    });
    hooks.bus.publish({ type: "job.retried", jobId: row.id });
    return toJob(row);
  }

  /** Its ingest task was claimed: `pending`, one more attempt (in the claim's transaction). */
  async started(job: JobRow): Promise<void> {
    await this.store.started(job.id);
  }

  /** Its ingest task went back to the queue unfinished (a stop, a full disk, a crash found at start): `queued`. */
  async requeued(job: JobRow): Promise<void> {
    await this.store.requeued(job.id);
  }

  /** Stage and progress of a running job (the pipeline reports them, throttled). */
  async progress(jobId: string, stage: string, pct: number): Promise<void> {
    await this.store.progress(jobId, stage, pct);
  }

  /** The stages still to come after the video is searchable (`stages_pending`). */
  async setPending(jobId: string, stages: readonly string[]): Promise<void> {
    await this.store.setPending(jobId, stages);
  }

  /**
   * Inside the transaction that makes the job's video searchable (the ingest task's end): what
   * follows the video durably (its web rendition).
   */
  async searchable(job: JobRow): Promise<void> {
    await this.completionParts().hooks.searchable(job.video_id, job.account_id);
  }

  /**
   * The job's last task ended well, inside that task's outcome transaction: the job is `done`,
   * its video `ready` at 100 %, the indexing is charged and job.completed is recorded for the
   * webhook outbox. A job that had already ended (or was deleted) changes nothing.
   */
  async complete(job: JobRow): Promise<void> {
    const { uow, hooks, events } = this.completionParts();
    await uow.run(async () => {
      if (!(await this.store.finish(job.id, "done"))) return;
      const video = await hooks.videoDone(job.video_id);
      if (!video) return;
      await events.record(job.account_id, "job.completed", { job_id: job.id, video_id: job.video_id });
      await hooks.charge(job.account_id, video.durationSecs);
      hooks.bus.publish({ type: "job.completed", jobId: job.id, videoId: job.video_id, accountId: job.account_id });
    });
  }

  /** The job failed for good: the job and its video are `failed` and job.failed is recorded, in one transaction. */
  async fail(job: JobRow, error: JobError): Promise<void> {
    const { uow, hooks, events } = this.completionParts();
    await uow.run(async () => {
      if (!(await this.store.finish(job.id, "failed", error))) return; // ended or deleted meanwhile: nothing to announce
      await hooks.videoFailed(job.video_id, error);
      await events.record(job.account_id, "job.failed", { job_id: job.id, video_id: job.video_id, error });
    });
  }

  private completionParts(): { uow: UnitOfWork; hooks: JobHooks; events: EventStore } {
    if (!this.uow || !this.hooks || !this.events)
      throw new Error("JobService completion needs the unit of work, hooks and event store");
    return { uow: this.uow, hooks: this.hooks, events: this.events };
  }
}
