/*
 * Just over the ~450-line guide (~480): one queue's claim, heartbeat, give-back and stop are one
 * state machine over the same leases; the connection-error give-back and the stop that waits for
 * a claim in flight (issue 26) joined it there.
 */
import { randomBytes } from "node:crypto";
import { AppError, isMediaStoreUnavailable } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { isStorageError } from "../core/storage.ts";
import { isStoreError } from "../store/errors.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import { type JobError, JobFailure } from "./failure.ts";
import type { NewTask, TaskKind, TaskRow, TaskStore } from "./task-store.ts";

/** What a handler gets while its task runs. */
export interface TaskContext {
  /**
   * Aborted when the task must stop: the queue is stopping, the task's video was deleted (in this
   * process: `videos.deleted`; in another: the heartbeat finds the row gone), or its lease was lost.
   */
  readonly signal: AbortSignal;
}

/** One kind of work (docs/ARCHITECTURE.md "The task queue"); registered with `LeaseQueue.handle`. */
export interface TaskHandler {
  /** In the claim's transaction (the job turns `pending`, the rendition `processing`). */
  claimed?(task: TaskRow): Promise<void>;
  /** In the transaction that gives a task back to the queue unfinished (the job is `queued` again). */
  released?(task: TaskRow): Promise<void>;
  /**
   * Does the work and returns the write that records its outcome. The queue runs that write in
   * one transaction that first ends the task, and writes nothing if the task is no longer this
   * worker's (deleted with its video, or taken over); a full disk makes it retry. Throwing fails
   * the task (`fail`), except when the task was told to stop or the disk is full.
   */
  run(task: TaskRow, ctx: TaskContext): Promise<() => Promise<void> | void>;
  /** The failure's write, same rules: the run threw, or its workers died `maxAttempts` times. */
  fail(task: TaskRow, error: JobError): Promise<void>;
}

/** A set of kinds that share slots on this node. */
export interface Lane {
  name: string;
  kinds: readonly TaskKind[];
  /** Tasks of this lane this node runs at once. */
  slots: number;
  /** Claims only while this holds (renditions: while nothing is indexed here, and the disk has room). */
  when?: () => boolean;
}

export interface LeaseQueueOptions {
  /** This node's stable id (one per data dir, src/jobs/node-id.ts): its next start frees what it held. */
  node: string;
  lanes: Lane[];
  logger: Logger;
  leaseMs?: number;
  pollMs?: number;
  /** A task whose worker died this many times is failed instead of retried forever. */
  maxAttempts?: number;
  /** Most tasks one account may have running at once across every node; 0: no cap. */
  maxRunningPerAccount?: number;
  /** Most uploads one account may have waiting; past it `assertRoom` answers 429. 0: no cap. */
  maxWaitingPerAccount?: number;
  /** Longest wait between tries while the store keeps failing (disk full, I/O error). */
  maxBackoffMs?: number;
  /** Told about every store failure the queue rides out (disk-full bookkeeping for /readyz). */
  onStoreError?: (e: unknown) => void;
  /**
   * Whether the data dir is out of space now. A task that fails while it is failed for that
   * reason, not because of its video: it is given back instead of failed.
   */
  diskFull?: () => boolean;
  /** After every task ends, however it ended (a cancelled task's video folder is swept here). */
  afterTask?: (task: TaskRow) => Promise<void>;
}

/** The task is not this worker's any more (deleted with its video, or taken over after its lease ran out). */
export class TaskLost extends Error {
  constructor(task: TaskRow) {
    super(`task ${task.id} (${task.kind} of ${task.video_id}) is no longer held`);
    this.name = "TaskLost";
  }
}

type StopReason = "stop" | "lost" | "cancelled";
interface Running {
  task: TaskRow;
  lane: string;
  abort: AbortController;
  why: StopReason | null;
  done: Promise<void>;
}

/**
 * The one lease queue: ingest, OCR and web renditions are kinds of one durable queue (table
 * `tasks`), with one claim (fair across accounts, TaskStore.claim), one heartbeat (a timer that
 * renews every lease this process holds, whatever its tasks report) and one expiry rule (a lease
 * not renewed for `leaseMs` on the database's clock is free). Nothing lives only in memory: a
 * crashed worker's tasks are claimed again, by this node at its next start or by any node once
 * their leases run out; every handler's work is idempotent.
 */
export class LeaseQueue {
  /** This process: the node, and a fresh incarnation (a restarted node is another owner). */
  readonly owner: string;
  private readonly handlers = new Map<TaskKind, TaskHandler>();
  private readonly running = new Map<number, Running>();
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private beat: ReturnType<typeof setInterval> | null = null;
  /** A fill is claiming (see fill); another was asked for meanwhile. */
  private filling = false;
  private fillAgain = false;
  /** The fill in progress (its claims): `stop` waits for it, so no claim lands after it returned. */
  private fillDone: Promise<void> = Promise.resolve();
  /** A lease renewal is in flight. */
  private beating = false;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  private readonly maxBackoffMs: number;
  /** Current wait after store failures; 0 while the store answers. */
  private backoffMs = 0;
  /** No claims before this time (epoch ms, this process's clock: a local back-off) after a store failure. */
  private resumeAt = 0;
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly store: TaskStore,
    private readonly uow: UnitOfWork,
    private readonly opts: LeaseQueueOptions,
  ) {
    this.owner = `${opts.node}/${randomBytes(4).toString("hex")}`;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.pollMs = opts.pollMs ?? 1000;
    this.maxAttempts = opts.maxAttempts ?? 3;
    this.maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  }

  /** Who runs `kind` (handlers live above jobs/; app.ts registers them). */
  handle(kind: TaskKind, handler: TaskHandler): void {
    this.handlers.set(kind, handler);
  }

  /**
   * Queues a task. Call it inside the transaction that creates the work, so the task exists if
   * and only if the work does; this process starts looking once it commits (others poll).
   */
  async enqueue(task: NewTask): Promise<boolean> {
    const added = await this.store.enqueue(task);
    if (added) this.uow.afterCommit(() => this.wake());
    return added;
  }

  /**
   * The per-account cap on waiting work: an account with `maxWaitingPerAccount` uploads waiting
   * is told to come back (429 QUEUE_FULL with Retry-After: about one of its tasks' length).
   */
  async assertRoom(accountId: string): Promise<void> {
    const max = this.opts.maxWaitingPerAccount ?? 0;
    if (max <= 0 || (await this.store.waiting(accountId, "ingest")) < max) return;
    const secs = Math.min(600, Math.max(1, Math.ceil(((await this.store.typicalMs(accountId)) ?? 30_000) / 1000)));
    throw new AppError(
      "QUEUE_FULL",
      `This account already has ${max} videos waiting to be indexed (the per-account cap); try again in about ${secs} s`,
      { "Retry-After": String(secs) },
    );
  }

  /**
   * Starts claiming. Tasks this node held when its previous incarnation died (same data dir, and
   * the instance lock says that process is gone) are queued again at once; every other lease is
   * left to run out. Returns how many were queued again.
   */
  async start(): Promise<number> {
    if (!this.stopped) {
      this.wake(); // already running: its own tasks are not a previous incarnation's
      return 0;
    }
    try {
      return await this.uow.run(async () => {
        const back = await this.store.releaseNode(this.opts.node);
        for (const task of back) await this.handlers.get(task.kind)?.released?.(task);
        return back.length;
      });
    } finally {
      // Claims start even when that write failed (a full disk): those tasks then wait for their leases.
      this.stopped = false;
      this.wake();
    }
  }

  /** Claims on the next tick instead of at the next poll (new work, a free slot). */
  wake(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.fill(), 0);
  }

  /** Tasks running in this process (all lanes, or one). */
  get active(): number {
    return this.running.size;
  }

  activeIn(lane: string): number {
    let n = 0;
    for (const r of this.running.values()) if (r.lane === lane) n++;
    return n;
  }

  /** Stops this process's tasks of these videos at once (they were deleted; their rows went with them). */
  cancelVideos(videoIds: readonly string[]): void {
    const ids = new Set(videoIds);
    for (const r of this.running.values()) if (ids.has(r.task.video_id)) this.halt(r, "cancelled");
  }

  /**
   * Claims for every lane with a free slot. One fill at a time (claims await the store): a wake
   * arriving meanwhile runs one more fill after it, so two fills never both claim the last slot.
   */
  private async fill(): Promise<void> {
    this.timer = null;
    if (this.stopped) return;
    if (this.filling) {
      this.fillAgain = true;
      return;
    }
    this.filling = true;
    const run = this.fillLanes();
    this.fillDone = run.catch(() => {});
    try {
      await run;
    } finally {
      this.filling = false;
      if (this.fillAgain && !this.stopped) {
        this.fillAgain = false;
        this.wake();
      }
    }
  }

  private async fillLanes(): Promise<void> {
    const wait = this.resumeAt - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => void this.fill(), wait);
      return;
    }
    lanes: for (const lane of this.opts.lanes) {
      while (!this.stopped && this.activeIn(lane.name) < lane.slots && (lane.when?.() ?? true)) {
        let task: TaskRow | null;
        try {
          task = await this.claim(lane);
          this.backoffMs = 0;
        } catch (e) {
          // A claim is a write: a full disk fails it. Keep polling (slower) instead of dying.
          this.storeFailed("claiming a task", e);
          break lanes;
        }
        if (!task) break;
        if (this.stopped) {
          // Stopped while this claim was in flight: hand the task back now rather than hold its
          // lease to the end with nothing running it.
          try {
            await this.giveBack(task, this.handlers.get(task.kind)!);
          } catch (e) {
            this.storeFailed("giving a task back", e); // its lease runs out instead
          }
          break lanes;
        }
        this.launch(task, lane.name);
      }
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.fill(), Math.max(this.pollMs, this.backoffMs));
  }

  private async claim(lane: Lane): Promise<TaskRow | null> {
    const kinds = lane.kinds.filter((k) => this.handlers.has(k));
    if (!kinds.length) return null;
    return await this.uow.run(async () => {
      const task = await this.store.claim({
        kinds,
        owner: this.owner,
        node: this.opts.node,
        leaseMs: this.leaseMs,
        maxRunningPerAccount: this.opts.maxRunningPerAccount ?? 0,
      });
      if (task) await this.handlers.get(task.kind)!.claimed?.(task);
      return task;
    });
  }

  private launch(task: TaskRow, lane: string): void {
    const entry: Running = { task, lane, abort: new AbortController(), why: null, done: Promise.resolve() };
    entry.done = this.run(entry).finally(() => {
      this.running.delete(task.id);
      if (this.running.size === 0 && this.beat) {
        clearInterval(this.beat);
        this.beat = null;
      }
      this.wake();
    });
    this.running.set(task.id, entry);
    // One heartbeat for every task of this process, on its own timer: a stage that reports no
    // progress for minutes (one long ffmpeg step, one huge frame to read) keeps its lease.
    this.beat ??= setInterval(() => void this.heartbeat(), Math.max(50, Math.floor(this.leaseMs / 3)));
  }

  private async heartbeat(): Promise<void> {
    // One renewal at a time: a slow store must not pile them up.
    if (this.beating) return;
    this.beating = true;
    try {
      await this.renewLeases();
    } finally {
      this.beating = false;
    }
  }

  private async renewLeases(): Promise<void> {
    let held: Set<number>;
    try {
      held = await this.store.renew(this.owner, this.leaseMs);
    } catch (e) {
      this.storeFailed("renewing leases", e); // the leases last; the next beat tries again
      return;
    }
    // A task missing here was deleted (its video was, perhaps by another process) or taken over.
    for (const r of this.running.values()) if (!held.has(r.task.id)) this.halt(r, "lost");
  }

  private halt(r: Running, why: StopReason): void {
    r.why ??= why;
    r.abort.abort();
  }

  private async run(r: Running): Promise<void> {
    const { task } = r;
    const handler = this.handlers.get(task.kind)!;
    const log = this.opts.logger.child({
      task: task.id,
      kind: task.kind,
      video_id: task.video_id,
      job_id: task.job_id,
    });
    const ctx: TaskContext = { signal: r.abort.signal };
    /** The outcome's transaction: the task ends first, and nothing is written if it was not ours any more. */
    const outcome = async (write: () => Promise<void> | void) =>
      await this.uow.run(async () => {
        if (!(await this.store.finish(task.id, this.owner))) throw new TaskLost(task);
        await write();
      });
    const started = Date.now();
    try {
      if (task.attempts > this.maxAttempts) {
        log.error("task's worker died repeatedly; giving up", { attempts: task.attempts });
        const error = { code: "CRASHED_REPEATEDLY", message: `stopped unexpectedly ${task.attempts - 1} times` };
        await this.settle("failing a task", async () => await outcome(async () => await handler.fail(task, error)));
        return;
      }
      let commit: () => void;
      try {
        commit = await handler.run(task, ctx);
      } catch (e) {
        if (r.why) return; // stopped, cancelled or lost: nothing to record here
        // Nothing is wrong with the video when the database, the media's bucket (s3_bucket) or the
        // disk fails mid-task (a restart, a network cut, a full disk): the task is given back (its
        // work is idempotent) and runs again once they answer; backing off keeps a long outage from
        // spinning through the queue (or its lease runs out meanwhile).
        const away = isStoreError(e, "unavailable")
          ? "database unreachable"
          : isMediaStoreUnavailable(e)
            ? "media store unreachable"
            : isStorageError(e) || this.opts.diskFull?.()
              ? "disk full"
              : null;
        if (away) {
          log.warn(`task interrupted: ${away}; it will run again`, { err: (e as Error)?.message });
          this.storeFailed("running a task", e);
          await this.settle("giving a task back", async () => await this.giveBack(task, handler));
          return;
        }
        const error =
          e instanceof JobFailure
            ? { code: e.code, message: e.message }
            : { code: "INTERNAL_ERROR", message: "the task failed unexpectedly" };
        if (e instanceof JobFailure) log.warn("task failed", error);
        else log.error("task crashed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
        await this.settle("failing a task", async () => await outcome(async () => await handler.fail(task, error)));
        return;
      }
      // Done before the stop reached it: record it. Cancelled or lost: the outcome belongs to no one.
      if (r.why === "cancelled" || r.why === "lost") return;
      if (await this.settle("completing a task", async () => await outcome(commit)))
        log.info("task done", { took_ms: Date.now() - started });
    } catch (e) {
      if (e instanceof TaskLost) log.info("task ended elsewhere (its video was deleted, or its lease ran out)");
      else log.error("recording the task's outcome failed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
    } finally {
      if (r.why === "stop") {
        // Shutting down: hand it back now (not a crash) rather than make the next claimer wait out the lease.
        try {
          await this.giveBack(task, handler);
        } catch (e) {
          this.storeFailed("giving a task back", e); // its lease runs out instead
        }
      }
      try {
        await this.opts.afterTask?.(task);
      } catch (e) {
        log.warn("clean-up after a task failed", { err: (e as Error)?.message });
      }
    }
  }

  /** Hands a task this process holds back to the queue, not counted as a crash (stopping, disk full). */
  private async giveBack(task: TaskRow, handler: TaskHandler): Promise<void> {
    await this.uow.run(async () => {
      if (await this.store.release(task.id, this.owner, true)) await handler.released?.(task);
    });
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
   * Writes a task's outcome, retrying with backoff while the store fails (a full disk frees up; a
   * task must not sit out its lease because one write failed). Gives up only when stopping: the
   * task is then handed back and runs again.
   */
  private async settle(what: string, write: () => Promise<unknown>): Promise<boolean> {
    for (;;) {
      try {
        await write();
        this.backoffMs = 0;
        return true;
      } catch (e) {
        // A full disk frees up; an unreachable database comes back (connection errors are retried, not failed).
        if (!isStorageError(e) && !isStoreError(e, "unavailable")) throw e;
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

  /** Stops claiming, stops the running tasks and hands them back (not counted as crashes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const r of this.running.values()) this.halt(r, "stop");
    for (const wake of [...this.sleepers]) wake();
    // A claim in flight ends first (and hands back what it got); bounded, should the database hang.
    let bound: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.fillDone, new Promise<void>((r) => (bound = setTimeout(r, 10_000)))]);
    clearTimeout(bound);
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }
}
