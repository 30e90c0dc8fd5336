import { randomBytes } from "node:crypto";
import type { Logger } from "../core/logger.ts";
import { isStorageError } from "../core/storage.ts";
import type { JobRow } from "./schema.ts";
import type { JobStore } from "./store.ts";

export interface JobError {
  code: string;
  message: string;
}

export interface JobHandler {
  /** Runs every stage; `progress` renews the lease. Throws a JobFailure (or anything) to fail the job. */
  process(job: JobRow, progress: (stage: string, pct: number) => void, signal: AbortSignal): Promise<void>;
  /** Marks the job done with its side effects (video ready, `job.completed`) in one transaction. */
  complete(job: JobRow, owner: string): void;
  fail(job: JobRow, owner: string, error: JobError): void;
}

export class JobFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "JobFailure";
  }
}

export interface JobRunnerOptions {
  concurrency: number;
  leaseMs?: number;
  pollMs?: number;
  /** A job whose worker died this many times is failed instead of retried forever. */
  maxAttempts?: number;
  logger: Logger;
  now?: () => number;
  /** Longest wait between tries while the store keeps failing (disk full, I/O error). */
  maxBackoffMs?: number;
  /** Told about every store failure the runner rides out (disk-full bookkeeping for /readyz). */
  onStoreError?: (e: unknown) => void;
  /**
   * Whether the data dir is out of space now. A stage that fails while it is (ffmpeg cannot write
   * a thumbnail, a model cache cannot grow) failed for that reason, not because of the video: the
   * job is given back instead of failed.
   */
  diskFull?: () => boolean;
}

/** What a failed job tells its owner to do; `vsearch jobs retry` / POST /v1/jobs/{id}/retry re-run it. */
export const CRASHED_REPEATEDLY_HINT =
  "The file may crash the decoder or a model; check the server log for this job, then retry it with `vsearch jobs retry ID` or POST /v1/jobs/{id}/retry (or delete the video)";

/**
 * Claims queued jobs and runs them, `concurrency` at a time. Nothing is kept only in memory:
 * a job is claimed with a lease in the database, so after a crash it is claimed again and its
 * (idempotent) stages re-run.
 */
export class JobRunner {
  readonly owner = `worker-${process.pid}-${randomBytes(4).toString("hex")}`;
  private running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  private readonly now: () => number;
  private readonly maxBackoffMs: number;
  /** Current wait after store failures; 0 while the store answers. */
  private backoffMs = 0;
  /** No claims before this time (epoch ms, real clock) after a store failure. */
  private resumeAt = 0;
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly store: JobStore,
    private readonly handler: JobHandler,
    private readonly opts: JobRunnerOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 120_000;
    this.pollMs = opts.pollMs ?? 1000;
    this.maxAttempts = opts.maxAttempts ?? 3;
    this.now = opts.now ?? Date.now;
    this.maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  }

  start(): void {
    this.stopped = false;
    this.wake();
  }

  /** Called after an upload so a new job starts at once instead of at the next poll. */
  wake(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fill(), 0);
  }

  get active(): number {
    return this.running.size;
  }

  private fill(): void {
    this.timer = null;
    if (this.stopped) return;
    const wait = this.resumeAt - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => this.fill(), wait);
      return;
    }
    while (this.running.size < this.opts.concurrency) {
      let job: JobRow | null;
      try {
        job = this.store.claim(this.owner, this.leaseMs, this.now());
        this.backoffMs = 0;
      } catch (e) {
        // A claim is a write: a full disk fails it. Keep polling (slower) instead of dying.
        this.storeFailed("claiming a job", e);
        break;
      }
      if (!job) break;
      const abort = new AbortController();
      const done = this.run(job, abort.signal).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
      this.running.set(job.id, { abort, done });
    }
    if (!this.stopped) this.timer = setTimeout(() => this.fill(), Math.max(this.pollMs, this.backoffMs));
  }

  private storeFailed(what: string, e: unknown): void {
    this.backoffMs = Math.min(this.maxBackoffMs, this.backoffMs ? this.backoffMs * 2 : this.pollMs);
    this.resumeAt = Date.now() + this.backoffMs;
    this.opts.onStoreError?.(e);
    this.opts.logger.warn("store error; backing off", {
      while: what,
      err: (e as Error)?.message,
      retry_in_ms: this.backoffMs,
      disk_full: isStorageError(e),
    });
  }

  /**
   * Writes a job's outcome, retrying with backoff while the store fails (a full disk frees up; a
   * job must not sit out its lease because one write failed). Gives up only when stopping: the
   * lease is then released at the next start and the job runs again.
   */
  private async settle(what: string, write: () => void): Promise<boolean> {
    for (;;) {
      try {
        write();
        this.backoffMs = 0;
        return true;
      } catch (e) {
        if (!isStorageError(e)) throw e;
        this.storeFailed(what, e);
        if (this.stopped) return false;
        await this.sleep(this.backoffMs);
        if (this.stopped) return false;
      }
    }
  }

  /** A backoff wait that `stop()` cuts short (a shutdown must not wait out a 30 s backoff). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  private async run(job: JobRow, signal: AbortSignal): Promise<void> {
    const log = this.opts.logger.child({ job_id: job.id, video_id: job.video_id });
    if (job.attempts > this.maxAttempts) {
      log.error("job failed repeatedly; giving up", { attempts: job.attempts });
      await this.finishFailed(
        job,
        {
          code: "CRASHED_REPEATEDLY",
          message: `Indexing stopped unexpectedly ${job.attempts - 1} times. ${CRASHED_REPEATEDLY_HINT}`,
        },
        log,
      );
      return;
    }
    let lastBeat = 0;
    let lastStage = "";
    let lost = false;
    const progress = (stage: string, pct: number) => {
      const t = this.now();
      // Throttled within a stage; a new stage is always written so `stage` is never stale.
      if (t - lastBeat < 500 && stage === lastStage) return;
      lastBeat = t;
      lastStage = stage;
      try {
        if (!this.store.heartbeat(job.id, this.owner, stage, pct, t + this.leaseMs)) lost = true;
      } catch (e) {
        // Progress is advisory; the stage's own writes decide whether the job can go on.
        this.storeFailed("renewing a lease", e);
      }
    };
    const started = this.now();
    try {
      progress("starting", 0);
      await this.handler.process(job, progress, signal);
      if (signal.aborted || lost) return; // shutting down, or someone else owns it now
    } catch (e) {
      if (signal.aborted || lost) return; // leave it for the next claim; stages are idempotent
      if (isStorageError(e) || this.opts.diskFull?.()) {
        // Out of space mid-stage: nothing is wrong with the video. Give the job back (its
        // stages are idempotent) and run it again once writes succeed.
        log.warn("job interrupted: disk full; it will run again", { err: (e as Error)?.message });
        this.storeFailed("running a job", e);
        await this.settle("re-queueing a job", () => this.store.requeue(job.id, this.owner)).catch((err) =>
          log.error("re-queueing the job failed", { err: (err as Error)?.message }),
        );
        return;
      }
      const error =
        e instanceof JobFailure
          ? { code: e.code, message: e.message }
          : { code: "INTERNAL_ERROR", message: "Indexing failed unexpectedly" };
      if (!(e instanceof JobFailure))
        log.error("job crashed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
      else log.warn("job failed", error);
      await this.finishFailed(job, error, log);
      return;
    }
    try {
      if (await this.settle("completing a job", () => this.handler.complete(job, this.owner)))
        log.info("job done", { took_ms: this.now() - started });
    } catch (e) {
      log.error("completing the job failed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
      await this.finishFailed(job, { code: "INTERNAL_ERROR", message: "Indexing failed unexpectedly" }, log);
    }
  }

  private async finishFailed(job: JobRow, error: JobError, log: Logger): Promise<void> {
    try {
      await this.settle("failing a job", () => this.handler.fail(job, this.owner, error));
    } catch (e) {
      // Not a storage problem and not retryable here: the lease runs out and the job is claimed again.
      log.error("recording the job's failure failed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
    }
  }

  /** Stops claiming and aborts running jobs; their leases are released at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const r of this.running.values()) r.abort.abort();
    for (const wake of [...this.sleepers]) wake();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }
}
