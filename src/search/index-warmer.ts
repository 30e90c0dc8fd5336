import type { Logger } from "../core/logger.ts";

/** What a warm-up pass has done so far. */
export interface WarmProgress {
  /** Rows the pass put in the index. */
  rows: number;
  /** Share of the rows present when the pass began that it has read (by row id), 0…1. */
  fraction: number;
  done: boolean;
}

/** An index that can load every account's rows a page at a time (memory-backend.ts). */
export interface WarmableIndex {
  beginWarm(): Promise<void>;
  /** Loads one page of at most `maxRows` rows; false once every row is in. */
  warmStep(maxRows: number): Promise<boolean>;
  readonly warmProgress: WarmProgress | null;
  /** Whether every vector of this account and model is in already (the pass is past its rows), though others' are not. */
  accountWarm(accountId: string, modelId: string): Promise<boolean>;
}

export const isWarmable = (b: object): b is WarmableIndex =>
  typeof (b as Partial<WarmableIndex>).warmStep === "function";

export interface IndexWarmOptions {
  /** A slice reads pages until this much time has passed, then yields to the event loop (default 8 ms). */
  sliceMs?: number;
  /** Rows per page (one short statement each; default 512). */
  pageRows?: number;
  /** How long a search waits for the warm-up before it answers 503 (default 2000 ms). */
  waitMs?: number;
  /**
   * Awaited before each slice with the progress so far: a test seam that holds the pass at a point
   * while the test changes the store (on PostgreSQL every page is a round trip, so a pass paced in
   * event-loop turns cannot be caught mid-way by polling). Unset in production.
   */
  beforeSlice?: (progress: WarmProgress) => Promise<void>;
}

export type WarmState = "idle" | "warming" | "warm" | "stopped";

export interface WarmStatus extends WarmProgress {
  state: WarmState;
  /** Seconds the rest should take at the rate so far (null before the first page). */
  etaSecs: number | null;
  /** The longest slice so far: how long the pass held the event loop at once (wall time). */
  longestSliceMs: number;
  /** The process CPU time of that slice: near its wall time, the work was ours; far below, the machine made us wait. */
  longestSliceCpuMs: number;
  /** Searches waiting for the pass right now (each answers, or 503s, within its wait). */
  waiting: number;
}

const SLICE_MS = 8;
const PAGE_ROWS = 512;
/**
 * After a failed page (the store erred: disk, lock), the next try waits this long, doubling on
 * each failure in a row up to RETRY_MAX_MS (a page that always fails must not log every second).
 */
const RETRY_MS = 1000;
const RETRY_MAX_MS = 30_000;

/**
 * Loads every account's vectors into the in-memory index in the background after the app
 * starts: slices of pages, each slice ending after `sliceMs` and the next one queued with
 * setImmediate, so requests (health checks, uploads, other tenants' searches) run between them.
 * At ~8 µs a row a 1 M-frame server takes ~8 s to warm; read synchronously on the first search it
 * held the event loop that long. Searches wait for it (bounded) through `whenWarm`.
 */
export class IndexWarmer {
  private state: WarmState = "idle";
  private next: ReturnType<typeof setImmediate> | ReturnType<typeof setTimeout> | null = null;
  private readonly waiters = new Set<() => void>();
  private startedAt = 0;
  private longestSliceMs = 0;
  private failuresInARow = 0;
  private longestSliceCpuMs = 0;
  private readonly sliceMs: number;
  private readonly pageRows: number;
  private readonly beforeSlice?: (progress: WarmProgress) => Promise<void>;

  constructor(
    private readonly index: WarmableIndex,
    opts: IndexWarmOptions = {},
    private readonly logger?: Logger,
  ) {
    this.sliceMs = opts.sliceMs ?? SLICE_MS;
    this.pageRows = Math.max(1, opts.pageRows ?? PAGE_ROWS);
    this.beforeSlice = opts.beforeSlice;
  }

  async start(): Promise<void> {
    if (this.state !== "idle") return;
    this.state = "warming";
    this.startedAt = performance.now();
    await this.index.beginWarm();
    this.next = setImmediate(() => void this.slice());
  }

  /** Stops the pass (app close): no further page is read; waiting searches are answered at once. */
  stop(): void {
    if (this.state === "warming") this.state = "stopped";
    if (this.next) {
      clearImmediate(this.next as ReturnType<typeof setImmediate>);
      clearTimeout(this.next as ReturnType<typeof setTimeout>);
      this.next = null;
    }
    this.wake();
  }

  status(): WarmStatus {
    const p = this.index.warmProgress ?? { rows: 0, fraction: 0, done: false };
    const secs = (performance.now() - this.startedAt) / 1000;
    const etaSecs = this.state === "warming" && p.fraction > 0 ? (secs * (1 - p.fraction)) / p.fraction : null;
    return {
      ...p,
      state: this.state,
      etaSecs,
      longestSliceMs: this.longestSliceMs,
      longestSliceCpuMs: this.longestSliceCpuMs,
      waiting: this.waiters.size,
    };
  }

  /**
   * Resolves true once every row is in (at once when warm, or when no pass was started: the index
   * then loads an account on its first search), false after `ms` or when the pass was stopped.
   */
  whenWarm(ms: number): Promise<boolean> {
    if (this.state !== "warming") return Promise.resolve(this.state !== "stopped");
    if (ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(this.state === "warm");
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  private async slice(): Promise<void> {
    this.next = null;
    if (this.state !== "warming") return;
    if (this.beforeSlice) {
      await this.beforeSlice(this.index.warmProgress ?? { rows: 0, fraction: 0, done: false });
      if (this.state !== "warming") return; // stopped while held
    }
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    let more = true;
    try {
      // Pages one after another within a slice: each page is added before the next is read.
      do {
        more = await this.index.warmStep(this.pageRows);
        this.failuresInARow = 0; // a page loaded: the next failure waits the shortest time again
      } while (more && performance.now() - t0 < this.sliceMs);
    } catch (e) {
      // The pass resumes from its cursor; the page is read before anything of it is added.
      const retryMs = Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** this.failuresInARow++);
      this.logger?.error("search index warm-up: a page failed; retrying", {
        err: e instanceof Error ? e.message : String(e),
        retry_ms: retryMs,
      });
      this.next = setTimeout(() => void this.slice(), retryMs);
      return;
    }
    const ms = performance.now() - t0;
    if (ms > this.longestSliceMs) {
      const cpu = process.cpuUsage(cpu0);
      this.longestSliceMs = ms;
      this.longestSliceCpuMs = (cpu.user + cpu.system) / 1000;
    }
    if (more) {
      this.next = setImmediate(() => void this.slice());
      return;
    }
    this.state = "warm";
    const p = this.index.warmProgress;
    this.logger?.info("search index warm", {
      rows: p?.rows ?? 0,
      secs: Math.round(performance.now() - this.startedAt) / 1000,
    });
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
