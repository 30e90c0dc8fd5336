/**
 * The asynchronous unit of work (issue 24's seam; design §2.2) and the transaction scope it
 * carries through AsyncLocalStorage, shared by every backend. A store call inside a unit of work
 * finds its transaction here instead of through a parameter threaded everywhere.
 *
 * Named `AsyncUnitOfWork` while today's synchronous `UnitOfWork` (store/unit-of-work.ts) still
 * serves the domain; the seam renames it when the synchronous one goes.
 *
 * A backend supplies a `TxDriver` (how to begin/commit an outermost transaction on one pinned
 * connection, and how to open a savepoint on it); `ScopedUnitOfWork` adds what is the same for
 * every backend: savepoints when nested, after-commit callbacks, refusal of late callbacks,
 * refusal of concurrent nested runs, and the retry of a transaction the database aborted to break
 * a serialization conflict or a deadlock.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { StoreError, toStoreError } from "./errors.ts";

export type AfterCommit = () => void | Promise<void>;

export interface AsyncUnitOfWork {
  /**
   * Runs `fn` in one transaction: committed when its promise resolves, rolled back when it
   * rejects. Inside another unit of work (same async flow): a savepoint, rolled back alone when
   * `fn` rejects. The outermost call re-runs `fn` when the database aborted the transaction to
   * resolve a conflict (PostgreSQL 40001/40P01; at most `MAX_ATTEMPTS` tries, jittered), so `fn`
   * may run more than once: no side effects outside the database except through `afterCommit`.
   */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` after the outermost transaction of this async flow commits (outside its async
   * context, in registration order, awaited one by one before `run` resolves); dropped when the
   * transaction, or the savepoint it was registered in, rolls back. Outside a unit of work: at
   * once. A callback that throws is reported to the store's `onError`; the others still run.
   */
  afterCommit(fn: AfterCommit): void;
  /**
   * Runs `fn` inside the outermost transaction of this async flow, once its body has resolved and
   * before it commits (in registration order; a statement `fn` runs is part of the transaction:
   * a NOTIFY sent there is delivered at the commit, never after a rollback). Dropped with the
   * savepoint it was registered in; a rejection rolls the whole transaction back. Outside a unit
   * of work: at once, on its own (a failure goes to the store's `onError`).
   */
  beforeCommit(fn: AfterCommit): void;
  /** Whether this async flow is inside an open unit of work. */
  readonly inTransaction: boolean;
}

/** Tries of one outermost unit of work the database aborted with a retryable conflict. */
export const MAX_ATTEMPTS = 3;

/** One open transaction or savepoint, as AsyncLocalStorage carries it. */
export interface TxScope<C> {
  readonly id: number;
  /** False once `fn` settled: a store call through this scope afterwards comes from a leaked callback. */
  open: boolean;
  /** 0 for the outermost transaction, n for the n-th nested savepoint. */
  readonly depth: number;
  /** A nested run is in progress on this scope: a second one at the same time is refused. */
  busy: boolean;
  /** After-commit callbacks registered at this level. */
  readonly held: AfterCommit[];
  /** Before-commit callbacks registered at this level (run inside the outermost transaction). */
  readonly before: AfterCommit[];
  /** The backend's handle for statements in this scope (postgres.js: the TransactionSql). */
  conn: C;
  /** The first statement that failed in this scope (PostgreSQL refuses every later one: 25P02). */
  failure?: StoreError;
  /** The nested run in progress: the scope does not end (commit, roll back) before it settles. */
  inflight?: Promise<unknown>;
}

let nextScopeId = 1;

/**
 * The scopes of one opened store (one AsyncLocalStorage per store, so two stores open in one
 * process — a migration from one database to another, a test with two databases — never see each
 * other's transactions).
 */
export class TxScopes<C> {
  private readonly als = new AsyncLocalStorage<TxScope<C>>();

  /** The open scope of this async flow, undefined outside one; throws for a scope that has closed. */
  current(): TxScope<C> | undefined {
    const scope = this.als.getStore();
    if (scope && !scope.open) {
      throw new StoreError(
        "misuse",
        "store call from a callback that outlived its unit of work (it ran after the transaction ended); register it with afterCommit instead",
      );
    }
    return scope;
  }

  /** Whether this flow is in an open scope (never throws). */
  get inScope(): boolean {
    return this.als.getStore()?.open === true;
  }

  run<T>(scope: TxScope<C>, fn: () => Promise<T>): Promise<T> {
    return this.als.run(scope, fn);
  }
}

/** What a backend provides for ScopedUnitOfWork. */
export interface TxDriver<C> {
  /** Begins a transaction on one connection, runs `body`, commits when it resolves, rolls back when it rejects. */
  transaction<T>(body: (conn: C) => Promise<T>): Promise<T>;
  /** A savepoint on `conn` around `body` (released when it resolves, rolled back to when it rejects). */
  savepoint<T>(conn: C, body: (conn: C) => Promise<T>): Promise<T>;
}

export interface ScopedUnitOfWorkOptions {
  /** Hears of an after-commit callback that threw (the change is committed; the others still ran). */
  onError?: (err: unknown) => void;
  /** Tries per outermost run (default MAX_ATTEMPTS). */
  maxAttempts?: number;
  /** Wait before try n+1 (default: jittered, growing). */
  backoffMs?: (attempt: number) => number;
}

export class ScopedUnitOfWork<C> implements AsyncUnitOfWork {
  private readonly onError: (err: unknown) => void;
  private readonly maxAttempts: number;
  private readonly backoffMs: (attempt: number) => number;

  constructor(
    private readonly driver: TxDriver<C>,
    private readonly scopes: TxScopes<C>,
    opts: ScopedUnitOfWorkOptions = {},
  ) {
    this.onError = opts.onError ?? (() => {});
    this.maxAttempts = opts.maxAttempts ?? MAX_ATTEMPTS;
    this.backoffMs = opts.backoffMs ?? ((attempt) => attempt * 10 + Math.random() * 40);
  }

  get inTransaction(): boolean {
    return this.scopes.inScope;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    const parent = this.scopes.current();
    return parent ? this.nested(parent, fn) : this.outermost(fn);
  }

  afterCommit(fn: AfterCommit): void {
    const scope = this.scopes.current();
    if (scope) scope.held.push(fn);
    else void this.call(fn);
  }

  beforeCommit(fn: AfterCommit): void {
    const scope = this.scopes.current();
    if (scope) scope.before.push(fn);
    else void this.call(fn);
  }

  private async outermost<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const scope = newScope<C>(0);
      try {
        const result = await this.driver.transaction((conn) => {
          scope.conn = conn;
          return this.scopes.run(scope, () =>
            settle(scope, async () => {
              const result = await fn();
              // Still inside the transaction: what these run commits with it. One may add another.
              for (let i = 0; i < scope.before.length; i++) await scope.before[i]!();
              return result;
            }),
          );
        });
        // Back in the caller's async context (no scope): the callbacks run outside the finished
        // transaction, one after another, in registration order.
        for (const cb of scope.held) await this.call(cb);
        return result;
      } catch (err) {
        scope.open = false;
        const mapped = err instanceof StoreError ? err : (toStoreError(err) ?? err);
        if (mapped instanceof StoreError && mapped.kind === "retry" && attempt < this.maxAttempts) {
          await Bun.sleep(this.backoffMs(attempt));
          continue;
        }
        throw mapped;
      }
    }
  }

  private async nested<T>(parent: TxScope<C>, fn: () => Promise<T>): Promise<T> {
    if (parent.busy) {
      throw new StoreError(
        "misuse",
        "two nested units of work at once in one transaction (savepoints are a stack): await one before starting the next",
      );
    }
    parent.busy = true;
    const child = newScope<C>(parent.depth + 1);
    const running = this.driver.savepoint(parent.conn, (conn) => {
      child.conn = conn;
      return this.scopes.run(child, () => settle(child, fn));
    });
    parent.inflight = running;
    try {
      const result = await running;
      // Released into the parent: its callbacks wait for the outermost commit.
      parent.held.push(...child.held);
      parent.before.push(...child.before);
      return result;
    } catch (err) {
      throw err instanceof StoreError ? err : (toStoreError(err) ?? err);
    } finally {
      child.open = false;
      parent.busy = false;
      parent.inflight = undefined;
    }
  }

  private async call(fn: AfterCommit): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.onError(err);
    }
  }
}

function newScope<C>(depth: number): TxScope<C> {
  return { id: nextScopeId++, open: true, depth, busy: false, held: [], before: [], conn: undefined as C };
}

/**
 * Runs `fn` and closes `scope` once it has settled, before the driver commits or rolls back. A
 * nested run `fn` did not wait for (a rejected `Promise.all` leaves its siblings running) is
 * waited for first: its savepoint statements must not reach the connection after the transaction
 * ended, when the pool may have handed it to another.
 */
async function settle<C, T>(scope: TxScope<C>, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } finally {
    // Bounded: a nested run is refused while one is in flight, so at most one is left to wait for.
    while (scope.inflight) await scope.inflight.catch(() => {});
    scope.open = false;
  }
}
