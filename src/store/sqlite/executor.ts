/**
 * The SQLite executor (issue 24's seam, design §2.3): one writer connection behind an async lock,
 * one reader connection (WAL) for every read outside a unit of work.
 *
 * - A unit of work takes the lock, `BEGIN IMMEDIATE`, runs its body (which awaits between
 *   statements), commits, releases. Its reads and writes go to the writer, found through
 *   AsyncLocalStorage, so it sees its own writes.
 * - A write outside a unit of work takes the lock for its one statement (autocommit): it can never
 *   land inside another flow's open transaction.
 * - A read outside a unit of work never waits: on the writer when no transaction holds it (it is
 *   then in autocommit), else on the reader, against the last commit. Either way it never sees a
 *   transaction half done.
 * - `allAside` (a read that takes milliseconds) outside a unit of work goes to a reader thread
 *   (read-threads.ts), off the event loop, against the last commit.
 *
 * bun:sqlite runs each statement synchronously on this thread, so a statement is atomic with
 * respect to the event loop; other flows run only at a transaction body's awaits.
 */
import type { Database } from "bun:sqlite";
import { StoreError, toStoreError } from "../errors.ts";
import { type Executor, type InsertSpec, type Param, type Sql, textFor } from "../executor.ts";
import type { AsyncUnitOfWork, TxScopes } from "../tx-scope.ts";
import type { Mutex } from "../../core/mutex.ts";
import type { SqliteReadThreads } from "./read-threads.ts";

export class SqliteExecutor implements Executor {
  readonly backend = "sqlite" as const;

  /** Set by the opener once the store's unit of work exists (it is built over the same scopes and lock). */
  uow: AsyncUnitOfWork | undefined;

  constructor(
    /** The one connection that writes; owned by whoever holds `lock`. */
    readonly writer: Database,
    /** `query_only`: reads outside units of work. The same object as `writer` for a read-only store. */
    readonly reader: Database,
    readonly scopes: TxScopes<Database>,
    readonly lock: Mutex,
    /** Reader threads for `allAside`; absent: it reads here, as `all` does. */
    readonly readThreads?: SqliteReadThreads,
  ) {}

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.uow) return Promise.reject(new Error("executor used before its store finished opening"));
    return await this.uow.run(fn);
  }

  all<R>(sql: Sql, ...params: Param[]): Promise<R[]> {
    const db = this.readOn();
    return settle(() => db.query<R, Param[]>(textFor(sql, "sqlite")).all(...params));
  }

  allAside<R>(sql: Sql, ...params: Param[]): Promise<R[]> {
    if (!this.readThreads || this.scopes.current()) return this.all<R>(sql, ...params);
    let text: string;
    try {
      text = textFor(sql, "sqlite");
    } catch (err) {
      return Promise.reject(err);
    }
    return this.readThreads.all<R>(text, params);
  }

  get<R>(sql: Sql, ...params: Param[]): Promise<R | null> {
    const db = this.readOn();
    return settle(() => db.query<R, Param[]>(textFor(sql, "sqlite")).get(...params) ?? null);
  }

  run(sql: Sql, ...params: Param[]): Promise<{ changes: number }> {
    return this.writing((db) => ({ changes: db.query(textFor(sql, "sqlite")).run(...params).changes }));
  }

  write<R>(sql: Sql, ...params: Param[]): Promise<R[]> {
    return this.writing((db) => db.query<R, Param[]>(textFor(sql, "sqlite")).all(...params));
  }

  insertMany<R = never>(spec: InsertSpec, rows: readonly (readonly Param[])[]): Promise<R[]> {
    const width = spec.columns.length;
    if (width === 0) return Promise.reject(new StoreError("misuse", `insertMany into ${spec.table} names no columns`));
    const bad = rows.find((r) => r.length !== width);
    if (bad) {
      return Promise.reject(
        new StoreError("misuse", `insertMany into ${spec.table}: a row has ${bad.length} values for ${width} columns`),
      );
    }
    if (!rows.length) return Promise.resolve([]);
    const marks = spec.columns.map(() => "?").join(", ");
    const text = `INSERT INTO ${spec.table} (${spec.columns.join(", ")}) VALUES (${marks})${spec.returning ? ` RETURNING ${spec.returning}` : ""}`;
    return this.writing((db) => {
      // One prepared statement looped: on SQLite a row per statement is the fastest form. Outside a
      // unit of work the rows still go in together (one transaction), as a multi-row INSERT would.
      const stmt = db.query<R, Param[]>(text);
      const out: R[] = [];
      const insert = () => {
        for (const r of rows) {
          if (spec.returning) out.push(...stmt.all(...r));
          else stmt.run(...r);
        }
      };
      if (db.inTransaction) insert();
      else db.transaction(insert)();
      return out;
    });
  }

  exec(sql: Sql): Promise<void> {
    return this.writing((db) => {
      db.exec(textFor(sql, "sqlite"));
    });
  }

  /**
   * Where a read runs: inside a unit of work on its transaction; outside one on the writer while no
   * transaction holds it (it then sits in autocommit, and a synchronous statement cannot interleave
   * with anything), else on the reader, against the last commit. Reading on the writer when it is
   * free keeps one warm page cache: the reader's is dropped whenever the writer has committed since
   * its last read (WAL), which under a mixed load is most of the time.
   */
  private readOn(): Database {
    const scope = this.scopes.current();
    if (scope) return scope.conn;
    return this.lock.locked ? this.reader : this.writer;
  }

  /** `fn` on the writer: inside a unit of work on its transaction, outside one under the lock. */
  private async writing<T>(fn: (db: Database) => T): Promise<T> {
    const scope = this.scopes.current();
    if (scope) return settle(() => fn(scope.conn));
    const release = await this.lock.acquire();
    try {
      return await settle(() => fn(this.writer));
    } finally {
      release();
    }
  }
}

/** A synchronous driver call as a promise; driver failures leave as StoreError (code and message kept). */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(toStoreError(err) ?? misuse(err) ?? err);
  }
}

/** bun:sqlite's own refusals carry no SQLITE_* code: a wrong number of bound values is one. */
function misuse(err: unknown): StoreError | null {
  const message = err instanceof Error ? err.message : "";
  if (!/^SQLite query expected \d+ values?, received \d+/.test(message)) return null;
  return new StoreError("misuse", message, { cause: err });
}
