/**
 * One leader among the processes on one PostgreSQL database (issue 26), for the duties that must
 * run once per cluster, not once per process: the cluster-wide gauges (queue depth: every node
 * reading it would multiply it in a sum over instances), and periodic clean-ups (expired rate
 * windows). The leader is whoever holds the `leader` session advisory lock (store/pg/advisory-lock.ts,
 * on a connection of its own): PostgreSQL ends the session of a process that dies (SIGKILL, a lost
 * machine: when its socket closes or TCP keepalive gives up) and the lock with it, and every other
 * process tries to take it each `intervalMs`, so another takes over within one interval of the
 * server noticing. A leader that lost its session (the connection dropped) stops acting at its
 * next check and tries again like the others.
 *
 * On the embedded store there is one process per data dir: it is the leader, no lock.
 */
import type { Logger } from "../core/logger.ts";

/** A held lock (HeldAdvisoryLock's shape, without the driver). */
export interface LeaderLock {
  /** False once its session was lost. */
  readonly held: boolean;
  /** Asks the server whether the session still holds the lock. */
  stillHeld(): Promise<boolean>;
  release(): Promise<void>;
}

/** A leader-only duty: run when this process becomes the leader, then every `everyMs` while it stays one. */
export interface LeaderDuty {
  name: string;
  everyMs: number;
  run(): Promise<void>;
}

export class LeaderElection {
  private lock: LeaderLock | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private tick: Promise<void> | null = null;
  private readonly lastRun = new Map<string, number>();
  /** Times this process became the leader (tests, logs). */
  terms = 0;

  constructor(
    /** Takes the lock without waiting (null: another process holds it); null `tryAcquire`: always the leader. */
    private readonly tryAcquire: (() => Promise<LeaderLock | null>) | null,
    private readonly opts: { intervalMs: number; duties: LeaderDuty[]; logger: Logger; now?: () => number },
  ) {}

  private started = false;

  /**
   * Whether this process runs the cluster-wide duties. One that takes no part in the election (a
   * CLI command, an app whose start() was not called) answers for itself, as the embedded store's does.
   */
  get isLeader(): boolean {
    return this.tryAcquire === null || !this.started || (this.lock?.held ?? false);
  }

  /** Tries once at once, then every interval. */
  async start(): Promise<void> {
    this.started = true;
    await this.step();
    this.timer = setInterval(() => {
      this.tick ??= this.step().finally(() => (this.tick = null));
    }, this.opts.intervalMs);
    this.timer.unref?.();
  }

  /** Stops trying and lets the lock go (the next process takes it at its next try). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.tick;
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }

  private async step(): Promise<void> {
    try {
      if (this.tryAcquire && this.lock && !(this.lock.held && (await this.lock.stillHeld()))) {
        this.opts.logger.warn("lost the leader lock (its database session ended); trying again");
        await this.lock.release();
        this.lock = null;
        this.lastRun.clear();
      }
      if (this.tryAcquire && !this.lock) {
        this.lock = await this.tryAcquire();
        if (!this.lock) return;
        this.terms++;
        this.opts.logger.info("this process is the leader now");
      }
      if (!this.tryAcquire && this.terms === 0) this.terms = 1;
      await this.runDuties();
    } catch (err) {
      this.opts.logger.warn("leader election step failed", { err: err instanceof Error ? err.message : String(err) });
    }
  }

  private async runDuties(): Promise<void> {
    const now = (this.opts.now ?? Date.now)();
    for (const d of this.opts.duties) {
      const last = this.lastRun.get(d.name);
      if (last !== undefined && now - last < d.everyMs) continue;
      this.lastRun.set(d.name, now);
      try {
        await d.run();
      } catch (err) {
        this.opts.logger.warn("leader duty failed", {
          duty: d.name,
          err: err instanceof Error ? err.message : String(err),
        });
      }
    }
  }
}
