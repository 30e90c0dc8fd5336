import type { Logger } from "../core/logger.ts";
import { dropLibraryPages, trimNativeHeap } from "../inference/native-heap.ts";

/** Something cheap to rebuild that an idle server lets go of (a cache, SQLite's page cache). */
export interface IdleRelease {
  name: string;
  run: () => Promise<void>;
}

export interface IdleMemoryOptions {
  /** True while work is in flight (a job, an inference task, a frame being read): no pass runs then. */
  busy: () => boolean;
  /** Released on every pass, in order. */
  release: IdleRelease[];
  /**
   * The native libraries whose code pages go too, asked for only when it is true that nothing uses
   * them (every inference pool and OCR worker closed): src/inference/native-heap.ts, dropLibraryPages.
   */
  libraries?: { path: RegExp; unused: () => boolean };
  logger: Logger;
  /** After the last unload, when to pass (ms). Default 1 s and 10 s (see `schedule`). */
  passesMs?: number[];
}

/** What one pass did, for logs, metrics and bench/idle-rss.ts. */
export interface IdlePass {
  at: number;
  rssBefore: number;
  rssAfter: number;
  libraryBytesDropped: number;
}

/**
 * Gives memory back once the heavy parts have unloaded on idle (inference pools, OCR workers;
 * each calls `schedule` after it closed). A pass, when nothing is in flight: drop what is cheap to
 * rebuild (search caches, SQLite's page cache), a full garbage collection, glibc's `malloc_trim`
 * (the worker threads' arenas), and the code pages of the libraries only those threads ran.
 *
 * Two passes: worker threads release their heaps shortly after they report closed (measured:
 * trimming at once left 150–290 MB, a second later ~110 MB), and on a busy machine thread
 * teardown can lag further, so one at +1 s and one at +10 s. A later unload (the OCR worker
 * closing after the models) starts the count again. A pass that finds work in flight is skipped:
 * the work has its memory in use, and the next unload schedules again.
 */
export class IdleMemory {
  private timers: ReturnType<typeof setTimeout>[] = [];
  private left = 0;
  private count = 0;
  private readonly passes: IdlePass[] = [];
  private closed = false;

  constructor(private readonly opts: IdleMemoryOptions) {}

  /** Plans the passes from now (replacing any still pending). */
  schedule(): void {
    if (this.closed) return;
    this.cancel();
    for (const ms of this.opts.passesMs ?? [1000, 10_000]) {
      this.left++;
      const t = setTimeout(() => {
        this.left--;
        void this.pass(); // it reports its own failures
      }, ms);
      t.unref?.();
      this.timers.push(t);
    }
  }

  /** Runs one pass now unless work is in flight; returns it, or null when skipped. */
  async pass(): Promise<IdlePass | null> {
    if (this.closed || this.opts.busy()) return null;
    const rssBefore = process.memoryUsage().rss;
    for (const r of this.opts.release) {
      try {
        await r.run();
      } catch (e) {
        this.opts.logger.warn("idle release failed", {
          release: r.name,
          err: e instanceof Error ? e.message : String(e),
        });
      }
    }
    Bun.gc(true);
    const trimmed = trimNativeHeap();
    const lib = this.opts.libraries;
    const libraryBytesDropped = lib && lib.unused() ? dropLibraryPages(lib.path) : 0;
    const p: IdlePass = { at: Date.now(), rssBefore, rssAfter: process.memoryUsage().rss, libraryBytesDropped };
    this.count++;
    this.passes.push(p);
    if (this.passes.length > 16) this.passes.shift();
    this.opts.logger.info("memory released after idle", {
      released: this.opts.release.map((r) => r.name),
      rss_mb_before: Math.round(rssBefore / 1e6),
      rss_mb_after: Math.round(p.rssAfter / 1e6),
      native_heap_trimmed: trimmed,
      library_mb_dropped: Math.round(libraryBytesDropped / 1e6),
    });
    return p;
  }

  /** Passes run since start. */
  get passCount(): number {
    return this.count;
  }

  /** The last 16 passes, oldest first. */
  get history(): readonly IdlePass[] {
    return this.passes;
  }

  /** Whether a pass is still to come. */
  get pending(): boolean {
    return this.left > 0;
  }

  close(): void {
    this.closed = true;
    this.cancel();
  }

  private cancel(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    this.left = 0;
  }
}
