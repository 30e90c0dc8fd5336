/**
 * The backend-neutral executor (issue 24's async seam, docs in /work/wt/notes/async-seam-design.md
 * §2.1): what a store is handed instead of a driver. One SQL text serves both backends wherever
 * it can; where the dialects differ, a store writes both texts side by side with `dialect()`.
 * No driver is imported here: only src/store/sqlite/ (when the seam lands) and src/store/pg/ do.
 *
 * Placeholders are `?` (positional) or `?N` (numbered, 1-based); the PostgreSQL executor rewrites
 * them to `$N`. Shared text never uses PostgreSQL's jsonb `?`, `?|`, `?&` operators (write
 * `jsonb_exists(…)`): the rewrite would take them for placeholders.
 */

/** A bound value. Booleans are 0/1 integers on both backends; blobs are bytes (bytea on PostgreSQL). */
export type Param = string | number | null | Uint8Array;

/** A statement the backend cannot run, with the reason said in the error (e.g. "embedded only: VACUUM INTO"). */
export interface Unsupported {
  readonly unsupported: string;
}

/** One statement written for each backend. */
export interface DialectSql {
  readonly sqlite: string;
  readonly pg: string | Unsupported;
}

/** SQL text: one for both backends, or a dialect pair. */
export type Sql = string | DialectSql;

/** A statement written per backend (the texts sit beside each other in the store file). */
export const dialect = (s: { sqlite: string; pg: string | Unsupported }): DialectSql => s;

export type Backend = "sqlite" | "postgres";

/** The text `sql` has on `backend`; throws a clear error for a statement the backend does not run. */
export function textFor(sql: Sql, backend: Backend): string {
  if (typeof sql === "string") return sql;
  const text = backend === "sqlite" ? sql.sqlite : sql.pg;
  if (typeof text === "string") return text;
  throw new UnsupportedStatementError(text.unsupported);
}

/** A statement this backend does not have (e.g. a SQLite-only maintenance command on PostgreSQL). */
export class UnsupportedStatementError extends Error {
  constructor(readonly reason: string) {
    super(`not available on this store backend: ${reason}`);
    this.name = "UnsupportedStatementError";
  }
}

/** A multi-row INSERT: `table (columns…) VALUES (…), (…) [RETURNING returning]`. Names are fixed strings from the store, never input. */
export interface InsertSpec {
  readonly table: string;
  readonly columns: readonly string[];
  readonly returning?: string;
}

export interface Executor {
  readonly backend: Backend;
  /** Reads. Outside a unit of work: the last committed state; inside one: the transaction's own view. */
  all<R>(sql: Sql, ...params: Param[]): Promise<R[]>;
  /**
   * A read that may take milliseconds (a full-text look-up): `all`, run where it does not hold the
   * event loop. SQLite: on a reader thread (store/sqlite/read-threads.ts) against the last commit,
   * unless inside a unit of work (then `all`, the transaction's own view) or where the store has no
   * reader threads; PostgreSQL: `all` (the server does the work, the event loop only waits).
   */
  allAside<R>(sql: Sql, ...params: Param[]): Promise<R[]>;
  /** The first row, or null. */
  get<R>(sql: Sql, ...params: Param[]): Promise<R | null>;
  /** A write; outside a unit of work it is its own transaction. `changes` = rows the statement touched. */
  run(sql: Sql, ...params: Param[]): Promise<{ changes: number }>;
  /** A write that returns rows (`INSERT/UPDATE/DELETE … RETURNING`). */
  write<R>(sql: Sql, ...params: Param[]): Promise<R[]>;
  /**
   * Many rows of one INSERT. SQLite loops one prepared statement; PostgreSQL sends multi-row VALUES
   * in chunks (one round trip per chunk, under the protocol's 65 534 parameters). Returns the
   * RETURNING rows, chunk after chunk in input order.
   */
  insertMany<R = never>(spec: InsertSpec, rows: readonly (readonly Param[])[]): Promise<R[]>;
  /** DDL or several statements without parameters (migrations, per-model tables). */
  exec(sql: Sql): Promise<void>;
  /**
   * Runs `fn` (this executor's statements) as one transaction: for a store method whose
   * statements must land together. Inside a unit of work it is a savepoint of it (the store's
   * UnitOfWork.run, so afterCommit and nesting behave the same).
   */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
}
