import type { Database } from "bun:sqlite";

/**
 * The store seam (issue 10): how services and pipeline stages get a transaction without holding
 * a database handle, so a second backend implements this interface and its stores, and nothing
 * above store/ changes. Stores take the backend's handle; everything else takes a UnitOfWork.
 *
 * Transactions are synchronous (bun:sqlite runs them on the calling thread); a backend whose
 * driver is asynchronous implements the same shape over a dedicated connection per unit of work.
 */
export interface UnitOfWork {
  /**
   * Runs `fn` in one transaction: committed when it returns, rolled back when it throws. A call
   * inside another joins it as a savepoint (rolled back alone when it throws; committed only with
   * the outermost). `immediate` takes the write lock at the start, so a read-then-write (a
   * duplicate check, a status check) sees the state it writes over; ignored when nested.
   */
  run<T>(fn: () => T, opts?: { immediate?: boolean }): T;
  /**
   * Runs `fn` once the outermost open transaction has committed; at once when none is open.
   * Dropped when the transaction (or the savepoint it was registered in) rolls back. Callbacks
   * run in registration order; one that throws is reported and the others still run (what they
   * react to is already committed).
   */
  afterCommit(fn: () => void): void;
  /** Whether a transaction opened through `run` is under way. */
  readonly inTransaction: boolean;
}

/** The SQLite unit of work: bun:sqlite transactions, savepoints when nested. */
export class SqliteUnitOfWork implements UnitOfWork {
  /** One list of after-commit callbacks per open `run` (innermost last). */
  private readonly held: (() => void)[][] = [];

  constructor(
    private readonly db: Database,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  get inTransaction(): boolean {
    return this.held.length > 0;
  }

  run<T>(fn: () => T, opts: { immediate?: boolean } = {}): T {
    const mine: (() => void)[] = [];
    this.held.push(mine);
    let result: T;
    try {
      const tx = this.db.transaction(() => {
        const r = fn();
        // An async fn would commit at its first await, before the rest of its writes: refuse it (rolled back).
        if (r instanceof Promise)
          throw new TypeError("UnitOfWork.run takes a synchronous function (transactions cannot span an await)");
        return r;
      });
      result = opts.immediate ? tx.immediate() : tx();
    } finally {
      this.held.pop();
    }
    // Committed (or, nested, released into the outer transaction): hand the callbacks outward.
    const outer = this.held[this.held.length - 1];
    if (outer) outer.push(...mine);
    else for (const cb of mine) this.call(cb);
    return result;
  }

  afterCommit(fn: () => void): void {
    const open = this.held[this.held.length - 1];
    if (open) open.push(fn);
    else this.call(fn);
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.onError(err);
    }
  }
}
