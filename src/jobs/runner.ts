import { randomBytes } from "node:crypto";
import type { Logger } from "../core/logger.ts";
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
}

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

  constructor(
    private readonly store: JobStore,
    private readonly handler: JobHandler,
    private readonly opts: JobRunnerOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 120_000;
    this.pollMs = opts.pollMs ?? 1000;
    this.maxAttempts = opts.maxAttempts ?? 3;
    this.now = opts.now ?? Date.now;
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
    while (this.running.size < this.opts.concurrency) {
      const job = this.store.claim(this.owner, this.leaseMs, this.now());
      if (!job) break;
      const abort = new AbortController();
      const done = this.run(job, abort.signal).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
      this.running.set(job.id, { abort, done });
    }
    if (!this.stopped) this.timer = setTimeout(() => this.fill(), this.pollMs);
  }

  private async run(job: JobRow, signal: AbortSignal): Promise<void> {
    const log = this.opts.logger.child({ job_id: job.id, video_id: job.video_id });
    if (job.attempts > this.maxAttempts) {
      log.error("job failed repeatedly; giving up", { attempts: job.attempts });
      this.handler.fail(job, this.owner, { code: "CRASHED_REPEATEDLY", message: `Indexing stopped unexpectedly ${job.attempts - 1} times` });
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
      if (!this.store.heartbeat(job.id, this.owner, stage, pct, t + this.leaseMs)) lost = true;
    };
    const started = this.now();
    try {
      progress("starting", 0);
      await this.handler.process(job, progress, signal);
      if (signal.aborted || lost) return; // shutting down, or someone else owns it now
      this.handler.complete(job, this.owner);
      log.info("job done", { took_ms: this.now() - started });
    } catch (e) {
      if (signal.aborted || lost) return; // leave it for the next claim; stages are idempotent
      const error = e instanceof JobFailure ? { code: e.code, message: e.message } : { code: "INTERNAL_ERROR", message: "Indexing failed unexpectedly" };
      if (!(e instanceof JobFailure)) log.error("job crashed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
      else log.warn("job failed", error);
      this.handler.fail(job, this.owner, error);
    }
  }

  /** Stops claiming and aborts running jobs; their leases are released at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const r of this.running.values()) r.abort.abort();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }
}
