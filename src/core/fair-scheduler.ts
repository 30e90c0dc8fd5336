import type { ErrorCode } from "./error-codes.ts";
import { AppError } from "./errors.ts";

export interface FairSchedulerOptions {
  /** What the work is, for messages ("clip export", "frame grab", "image query decode"). */
  what: string;
  /** Tasks running at once, over all accounts. */
  concurrency: number;
  /** Distinct tasks one account may have running and waiting together; one more is a 429. */
  perAccount: number;
  /** Waiting tasks of all accounts together; one more is a 503 (a bound on memory, not fairness). */
  maxWaiting: number;
  /** The 503's code (e.g. SEARCH_UNAVAILABLE for image queries). */
  busyCode: ErrorCode;
  /** Seconds a refused caller is told to wait (Retry-After). */
  retryAfterSecs?: number;
}

export interface RunOptions {
  /**
   * Identical work: a caller asking for a key that is already waiting or running joins that task
   * instead of adding one (and does not count against its account's cap again). The task is
   * stopped only when every caller that joined it has left.
   */
  key?: string;
  /** A label to stop work by (`abortTagged`), e.g. the video the work reads. */
  tag?: string;
  /** The caller leaving (client closed the connection, request timed out): it stops waiting, and the work stops once nobody waits for it. */
  signal?: AbortSignal;
}

interface Task {
  account: string;
  key: string | undefined;
  tag: string | undefined;
  work: (signal: AbortSignal) => Promise<unknown>;
  abort: AbortController;
  /** Callers still waiting for the result. */
  callers: number;
  state: "waiting" | "running" | "done";
  result: Promise<unknown>;
  settle: { resolve(v: unknown): void; reject(e: unknown): void };
}

/** What a caller gets when it left (or its work was stopped) before the result. */
export class WorkCancelled extends Error {
  override name = "WorkCancelled";
}

/**
 * Per-account fair scheduling of short, shared, in-process work — clip encodes, frame grabs,
 * query-image decodes — so one account's backlog delays another's task by at most the length of
 * one task (SPEC §8). A free slot goes to the waiting account with the fewest tasks running (so an
 * account with nothing running goes ahead of one that already holds slots, whatever it queued
 * first), ties in turn (round robin: an account served goes to the back of the line); each
 * account holds at most `perAccount` tasks running and waiting
 * (past it: 429 RATE_LIMIT_EXCEEDED with Retry-After), and all accounts together at most
 * `maxWaiting` waiting ones (past it: 503 with Retry-After). A task's work gets an AbortSignal:
 * aborted when every caller that waits for it has left, or when its tag is stopped.
 *
 * In process on purpose: these tasks answer one request each and die with it; the work a queue
 * must keep across restarts (ingest stages, renditions) is the job queue's.
 */
export class FairScheduler {
  private running = 0;
  private waiting = 0;
  /** Accounts with waiting tasks, in turn order. */
  private readonly turns: string[] = [];
  private readonly queues = new Map<string, Task[]>();
  /** Running + waiting tasks per account. */
  private readonly held = new Map<string, number>();
  /** Running tasks per account. */
  private readonly busy = new Map<string, number>();
  private readonly byKey = new Map<string, Task>();
  private readonly live = new Set<Task>();

  constructor(private readonly o: FairSchedulerOptions) {}

  get stats(): { running: number; waiting: number; accounts: number } {
    return { running: this.running, waiting: this.waiting, accounts: this.held.size };
  }

  /** Runs `work` for `account` when its turn comes; rejects with WorkCancelled if the caller leaves first. */
  run<T>(account: string, work: (signal: AbortSignal) => Promise<T>, opts: RunOptions = {}): Promise<T> {
    if (opts.signal?.aborted) return Promise.reject(new WorkCancelled(`${this.o.what}: the caller left`));
    const existing = opts.key === undefined ? undefined : this.byKey.get(opts.key);
    const task = existing && existing.account === account ? existing : this.admit(account, work, opts);
    task.callers++;
    return this.follow(task, opts.signal) as Promise<T>;
  }

  /** Stops every task with this tag (waiting ones never start); their callers get WorkCancelled. */
  abortTagged(tags: Iterable<string>): number {
    const set = new Set(tags);
    let n = 0;
    for (const t of [...this.live]) {
      if (t.tag !== undefined && set.has(t.tag)) {
        this.stop(t, `${this.o.what}: stopped (its video was deleted)`);
        n++;
      }
    }
    return n;
  }

  private admit(account: string, work: (signal: AbortSignal) => Promise<unknown>, opts: RunOptions): Task {
    const retry = String(this.o.retryAfterSecs ?? 1);
    const mine = this.held.get(account) ?? 0;
    if (mine >= this.o.perAccount) {
      throw new AppError(
        "RATE_LIMIT_EXCEEDED",
        `This account already has ${mine} ${this.o.what}s running or waiting (at most ${this.o.perAccount}); retry in ${retry} s`,
        { "Retry-After": retry },
      );
    }
    const mustWait = this.running >= this.o.concurrency;
    if (mustWait && this.waiting >= this.o.maxWaiting) {
      throw new AppError(this.o.busyCode, `Too many ${this.o.what}s are waiting; retry in ${retry} s`, {
        "Retry-After": retry,
      });
    }
    let settle!: Task["settle"];
    const result = new Promise<unknown>((resolve, reject) => (settle = { resolve, reject }));
    result.catch(() => {}); // a task nobody follows any more must not be an unhandled rejection
    const task: Task = {
      account,
      key: opts.key,
      tag: opts.tag,
      work,
      abort: new AbortController(),
      callers: 0,
      state: "waiting",
      result,
      settle,
    };
    this.held.set(account, mine + 1);
    this.live.add(task);
    if (task.key !== undefined) this.byKey.set(task.key, task);
    if (mustWait) {
      let q = this.queues.get(account);
      if (!q) this.queues.set(account, (q = []));
      if (q.length === 0) this.turns.push(account);
      q.push(task);
      this.waiting++;
    } else this.start(task);
    return task;
  }

  /** The caller's view of a task: its result, or WorkCancelled as soon as the caller leaves. */
  private follow(task: Task, signal: AbortSignal | undefined): Promise<unknown> {
    if (!signal) return task.result;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        reject(new WorkCancelled(`${this.o.what}: the caller left`));
        if (--task.callers === 0) this.stop(task, `${this.o.what}: nobody waits for it any more`);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      task.result.then(
        (v) => {
          signal.removeEventListener("abort", onAbort);
          resolve(v);
        },
        (e) => {
          signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      );
    });
  }

  private start(task: Task): void {
    task.state = "running";
    this.running++;
    this.busy.set(task.account, (this.busy.get(task.account) ?? 0) + 1);
    let p: Promise<unknown>;
    try {
      p = task.work(task.abort.signal);
    } catch (e) {
      p = Promise.reject(e);
    }
    // Work that was stopped has not done its job, however it ended.
    const cancelled = () => new WorkCancelled(String(task.abort.signal.reason));
    p.then(
      (v) =>
        this.finish(task, () => (task.abort.signal.aborted ? task.settle.reject(cancelled()) : task.settle.resolve(v))),
      (e) => this.finish(task, () => task.settle.reject(task.abort.signal.aborted ? cancelled() : e)),
    );
  }

  private finish(task: Task, settle: () => void): void {
    if (task.state !== "running") return;
    task.state = "done";
    this.running--;
    const b = (this.busy.get(task.account) ?? 1) - 1;
    if (b > 0) this.busy.set(task.account, b);
    else this.busy.delete(task.account);
    this.release(task);
    settle();
    this.dispatch();
  }

  /** Aborts a running task (its work sees the signal) or drops a waiting one. */
  private stop(task: Task, why: string): void {
    if (task.state === "done") return;
    if (task.state === "running") {
      task.abort.abort(why);
      return; // finish() runs when the work notices
    }
    const q = this.queues.get(task.account) ?? [];
    q.splice(q.indexOf(task), 1);
    if (q.length === 0) {
      this.queues.delete(task.account);
      this.turns.splice(this.turns.indexOf(task.account), 1);
    }
    this.waiting--;
    task.state = "done";
    this.release(task);
    task.settle.reject(new WorkCancelled(why));
  }

  private release(task: Task): void {
    this.live.delete(task);
    if (task.key !== undefined && this.byKey.get(task.key) === task) this.byKey.delete(task.key);
    const n = (this.held.get(task.account) ?? 1) - 1;
    if (n > 0) this.held.set(task.account, n);
    else this.held.delete(task.account);
  }

  /** Fills free slots: the waiting account with the fewest tasks running first, ties in turn. */
  private dispatch(): void {
    while (this.running < this.o.concurrency && this.turns.length > 0) {
      let pick = 0;
      for (let i = 1; i < this.turns.length; i++)
        if ((this.busy.get(this.turns[i]) ?? 0) < (this.busy.get(this.turns[pick]) ?? 0)) pick = i;
      const [account] = this.turns.splice(pick, 1);
      const q = this.queues.get(account)!;
      const task = q.shift()!;
      this.waiting--;
      if (q.length > 0) this.turns.push(account);
      else this.queues.delete(account);
      this.start(task);
    }
  }
}
