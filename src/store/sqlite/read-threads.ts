/**
 * Reader threads of the embedded store (issue 27): reads that take milliseconds — a search's
 * full-text look-ups — run on their own connections in worker threads (read-worker.ts), so the
 * event loop answers other requests meanwhile and a second core does that work. bun:sqlite runs a
 * statement synchronously on the calling thread: on the main thread a 3 ms look-up held every
 * other request for 3 ms, and one `serve` process could not use more than one core for its
 * requests' JavaScript and SQL (8 clients got 0.98–1.14× one client's throughput on 2 cores;
 * with this thread 1.52–1.61×, BENCHMARKS.md "Eight clients on a quiet box").
 *
 * Only reads outside a unit of work come here (SqliteExecutor.allAside), and each sees the last
 * commit (WAL: a statement on another connection starts its own read transaction), as a read on
 * the executor's own reader connection would. A thread that dies fails its pending reads with a
 * StoreError ("unavailable") and is started again at the next read; `close()` fails what is still
 * pending and stops the threads.
 */
import { Worker } from "node:worker_threads";
import { StoreError, toStoreError } from "../errors.ts";
import type { Param } from "../executor.ts";

export interface ReadThreadData {
  file: string;
  vecExtension?: string;
  cacheMiB: number;
}
export interface ReadRequest {
  id: number;
  sql: string;
  params: readonly Param[];
}
export interface ReadReply {
  id: number;
  rows?: unknown[];
  error?: { name: string; code?: string; message: string };
}

export interface ReadThreadOptions {
  /** The thread's program: src/store/sqlite/read-worker.ts, or its copy inside the compiled binary (RuntimePaths). */
  workerFile: string;
  /** How many threads (each one connection); reads go to the one with the fewest pending. */
  threads: number;
  vecExtension?: string;
  /** Page cache of each thread's connection (the memory map is shared with the main thread's through the OS). */
  cacheMiB?: number;
}

interface Pending {
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

class ReadThread {
  private worker: Worker | null = null;
  readonly pending = new Map<number, Pending>();

  constructor(private readonly data: ReadThreadData & { workerFile: string }) {}

  send(req: ReadRequest, p: Pending): void {
    const w = this.worker ?? this.start();
    this.pending.set(req.id, p);
    w.postMessage(req);
  }

  private start(): Worker {
    const { workerFile, ...data } = this.data;
    const w = new Worker(workerFile, { workerData: data });
    // The store's close() stops it; a process that never closes its store must still be able to exit.
    w.unref();
    w.on("message", (m: ReadReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error) {
        const err = Object.assign(new Error(m.error.message), { name: m.error.name, code: m.error.code });
        p.reject(toStoreError(err) ?? new StoreError("misuse", m.error.message, { cause: err }));
      } else p.resolve(m.rows ?? []);
    });
    const gone = (why: string) => {
      if (this.worker !== w) return;
      this.worker = null;
      this.failAll(new StoreError("unavailable", `store reader thread stopped: ${why}`));
    };
    w.on("error", (err) => gone(err instanceof Error ? err.message : String(err)));
    w.on("exit", (code) => gone(`exit code ${code}`));
    this.worker = w;
    return w;
  }

  failAll(err: StoreError): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.failAll(new StoreError("unavailable", "the store is closed"));
    await w?.terminate();
  }
}

export class SqliteReadThreads {
  private readonly threads: ReadThread[];
  private nextId = 1;
  private closed = false;

  constructor(file: string, opts: ReadThreadOptions) {
    const data = { file, vecExtension: opts.vecExtension, cacheMiB: opts.cacheMiB ?? 16, workerFile: opts.workerFile };
    this.threads = Array.from({ length: Math.max(1, opts.threads) }, () => new ReadThread(data));
  }

  /** The rows of one read, on the reader thread with the fewest reads pending. */
  all<R>(sql: string, params: readonly Param[]): Promise<R[]> {
    if (this.closed) return Promise.reject(new StoreError("unavailable", "the store is closed"));
    let t = this.threads[0];
    for (const x of this.threads) if (x.pending.size < t.pending.size) t = x;
    return new Promise<R[]>((resolve, reject) =>
      t.send({ id: this.nextId++, sql, params }, { resolve: resolve as (rows: unknown[]) => void, reject }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.stop()));
  }
}
