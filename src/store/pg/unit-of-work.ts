/**
 * The PostgreSQL unit of work: the outermost `run` is `sql.begin`, which takes one pool connection
 * for the whole transaction; a nested `run` is `savepoint` on it (a failed statement aborts only
 * its savepoint, which postgres.js rolls back to). READ COMMITTED, PostgreSQL's default: a read
 * that must see the state it writes over locks the row (`SELECT … FOR UPDATE`) or writes in one
 * statement. A transaction the server aborted with 40001/40P01 is run again (ScopedUnitOfWork).
 */
import type postgres from "postgres";
import { ScopedUnitOfWork, type ScopedUnitOfWorkOptions, type TxDriver, type TxScopes } from "../tx-scope.ts";
import type { PgConn } from "./executor.ts";

export function pgTxDriver(pool: postgres.Sql): TxDriver<PgConn> {
  return {
    transaction: <T>(body: (conn: PgConn) => Promise<T>) => pool.begin((tx) => body(tx)) as unknown as Promise<T>,
    savepoint: <T>(conn: PgConn, body: (conn: PgConn) => Promise<T>) => {
      const tx = conn as postgres.TransactionSql;
      return tx.savepoint((sp) => body(sp)) as unknown as Promise<T>;
    },
  };
}

export function pgUnitOfWork(
  pool: postgres.Sql,
  scopes: TxScopes<PgConn>,
  opts: ScopedUnitOfWorkOptions = {},
): ScopedUnitOfWork<PgConn> {
  return new ScopedUnitOfWork(pgTxDriver(pool), scopes, opts);
}
