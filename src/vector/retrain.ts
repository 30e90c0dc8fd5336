/**
 * Runs retrains in the background: each retrain is a generator of small steps (rows.ts
 * `retrain`, lists.ts `trainCentroids`), and one event-loop turn (setImmediate) runs steps
 * until SLICE_MS passed, so searches and adds interleave with a retrain instead of waiting
 * seconds for it (a retrain used to run inside the `add` that triggered it: 14 s for the batch
 * crossing 262 144 rows on the shared box). The server's budget per turn is ~50 ms.
 */

/** Longest run of retrain steps in one event-loop turn. */
export const SLICE_MS = 8;

/** Background retraining so far (VectorIndex.training). */
export interface TrainingStats {
  /** Retrains started (automatic, chained after one another, and `rebuild`). */
  retrains: number;
  /** Retrains under way now. */
  pending: number;
  /** Event-loop turns spent retraining, and the longest one in ms (wall clock). */
  slices: number;
  maxSliceMs: number;
  /**
   * CPU time of the longest slice and of all slices (ms, this process): on a loaded box a slice's
   * wall time includes the time the OS gave other processes, so this is the work it held the loop for.
   */
  maxSliceCpuMs: number;
  cpuMs: number;
  errors: number;
  lastError?: string;
}

export class Retrainer<K> {
  private readonly jobs = new Map<K, Generator<void, void>>();
  /** Jobs that have run at least one step (a generator's body starts at its first step). */
  private readonly begun = new Set<Generator<void, void>>();
  private queued = false;
  private waiters: (() => void)[] = [];
  readonly stats: TrainingStats = {
    retrains: 0,
    pending: 0,
    slices: 0,
    maxSliceMs: 0,
    maxSliceCpuMs: 0,
    cpuMs: 0,
    errors: 0,
  };

  /** `afterSteps` runs after any steps ran (the store bumps its version: rows moved). */
  constructor(private readonly afterSteps: () => void) {}

  has(key: K): boolean {
    return this.jobs.has(key);
  }

  /**
   * A retrain of `key` is queued but has not run a step yet: its training has not looked at the
   * rows, so running it now trains on the rows as they are now (what `rebuild` asks for).
   */
  queuedOnly(key: K): boolean {
    const job = this.jobs.get(key);
    return job !== undefined && !this.begun.has(job);
  }

  /** Queues a retrain to run in slices. */
  start(key: K, job: Generator<void, void>): void {
    if (this.jobs.has(key)) return;
    this.jobs.set(key, job);
    this.stats.retrains++;
    this.stats.pending = this.jobs.size;
    this.schedule();
  }

  /** Runs the retrain of `key`, if any, to its end now (synchronously). */
  finish(key: K): void {
    const job = this.jobs.get(key);
    if (!job) return;
    this.begun.add(job);
    try {
      while (!job.next().done);
    } finally {
      this.drop(key);
      this.afterSteps();
    }
  }

  /** Abandons the retrain of `key` (its generator's finally blocks give back what it holds). */
  abort(key: K): void {
    const job = this.jobs.get(key);
    if (!job) return;
    this.drop(key);
    job.return();
  }

  flush(): void {
    for (const key of [...this.jobs.keys()]) this.finish(key);
  }

  /** Resolves once no retrain is under way. */
  idle(): Promise<void> {
    if (this.jobs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private drop(key: K): void {
    const job = this.jobs.get(key);
    if (job) this.begun.delete(job);
    this.jobs.delete(key);
    this.stats.pending = this.jobs.size;
    if (this.jobs.size === 0) for (const w of this.waiters.splice(0)) w();
  }

  private schedule(): void {
    if (this.queued || this.jobs.size === 0) return;
    this.queued = true;
    setImmediate(() => this.slice());
  }

  /** One turn: steps of the retrains under way until SLICE_MS passed; the rest waits for a later turn. */
  private slice(): void {
    this.queued = false;
    if (this.jobs.size === 0) return;
    const t0 = performance.now(),
      c0 = process.cpuUsage();
    let now = t0;
    for (const [key, job] of [...this.jobs]) {
      while (now - t0 < SLICE_MS && this.jobs.get(key) === job) {
        let done: boolean | undefined;
        this.begun.add(job);
        try {
          done = job.next().done;
        } catch (e) {
          // Every step leaves the partition consistent (each row in exactly one list): keep serving.
          this.stats.errors++;
          this.stats.lastError = e instanceof Error ? e.message : String(e);
          done = true;
        }
        now = performance.now();
        if (done) this.drop(key);
      }
      if (now - t0 >= SLICE_MS) break;
    }
    this.afterSteps();
    this.stats.slices++;
    this.stats.maxSliceMs = Math.max(this.stats.maxSliceMs, now - t0);
    const cpu = process.cpuUsage(c0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    this.stats.cpuMs += cpuMs;
    this.stats.maxSliceCpuMs = Math.max(this.stats.maxSliceCpuMs, cpuMs);
    this.schedule();
  }
}
