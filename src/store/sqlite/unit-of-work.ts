/**
 * The SQLite unit of work: the outermost `run` takes the writer's lock, `BEGIN IMMEDIATE` (the
 * write lock from the first statement, so a read inside sees the state it writes over and another
 * process's writer waits instead of failing at commit), and holds both until the body settles. A
 * nested `run` is a SAVEPOINT on the same connection.
 *
 * A body awaits only store calls: the lock is held for its whole length, so every write of every
 * other flow waits for it (reads outside do not: they go to the reader).
 */
import type { Database } from "bun:sqlite";
import { toStoreError } from "../errors.ts";
import { ScopedUnitOfWork, type ScopedUnitOfWorkOptions, type TxDriver, type TxScopes } from "../tx-scope.ts";
import type { Mutex } from "../../core/mutex.ts";

let savepoints = 0;

export function sqliteTxDriver(writer: Database, lock: Mutex): TxDriver<Database> {
  return {
    async transaction<T>(body: (conn: Database) => Promise<T>): Promise<T> {
      const release = await lock.acquire();
      try {
        try {
          writer.exec("BEGIN IMMEDIATE");
        } catch (err) {
          throw toStoreError(err) ?? err;
        }
        let result: T;
        try {
          result = await body(writer);
        } catch (err) {
          if (writer.inTransaction) writer.exec("ROLLBACK");
          throw err;
        }
        try {
          writer.exec("COMMIT");
        } catch (err) {
          if (writer.inTransaction) writer.exec("ROLLBACK");
          throw toStoreError(err) ?? err;
        }
        return result;
      } finally {
        release();
      }
    },
    async savepoint<T>(conn: Database, body: (conn: Database) => Promise<T>): Promise<T> {
      const name = `sp${++savepoints}`;
      conn.exec(`SAVEPOINT ${name}`);
      try {
        const result = await body(conn);
        conn.exec(`RELEASE ${name}`);
        return result;
      } catch (err) {
        conn.exec(`ROLLBACK TO ${name}`);
        conn.exec(`RELEASE ${name}`);
        throw err;
      }
    },
  };
}

export function sqliteUnitOfWork(
  writer: Database,
  lock: Mutex,
  scopes: TxScopes<Database>,
  opts: ScopedUnitOfWorkOptions = {},
): ScopedUnitOfWork<Database> {
  return new ScopedUnitOfWork(sqliteTxDriver(writer, lock), scopes, opts);
}
