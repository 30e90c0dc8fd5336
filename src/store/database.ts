/**
 * Opening the store: what the composition root (and the test helpers) call. The embedded SQLite
 * file by default; PostgreSQL (store/pg/) when a database URL is given (`database_url`).
 * Stores are built on `exec` (an Executor: no driver); services get `uow`.
 */
import type { Executor } from "./executor.ts";
import { type OpenPgOptions, openPgStore, type PgStore } from "./pg/open.ts";
import { type OpenDatabaseOptions, openSqliteStore, type SqliteStore } from "./sqlite/database.ts";
import type { UnitOfWork } from "./unit-of-work.ts";

export type { OpenDatabaseOptions } from "./sqlite/database.ts";

export interface OpenStore {
  readonly kind: "sqlite" | "postgres";
  exec: Executor;
  uow: UnitOfWork;
  close(): void | Promise<void>;
}

/** The embedded store over `file` (created and migrated if new). */
export function openStore(
  file: string,
  opts: OpenDatabaseOptions & { onError?: (err: unknown) => void } = {},
): SqliteStore {
  return openSqliteStore(file, opts);
}

export interface StoreTarget {
  /** postgres://…: PostgreSQL; undefined: the embedded file. */
  databaseUrl?: string;
  /** The embedded store's file (unused with a URL). */
  file: string;
  /** sqlite-vec's loadable extension (embedded store only). */
  vecExtension?: string;
  /** The embedded store's reader threads (store/sqlite/read-threads.ts). */
  readThreads?: OpenDatabaseOptions["readThreads"];
  onError?: (err: unknown) => void;
  /** PostgreSQL pool options (name seen in pg_stat_activity, pool size). */
  pg?: Omit<OpenPgOptions, "onError">;
}

/** The configured store: PostgreSQL when `databaseUrl` is set, else the embedded file. */
export async function openConfiguredStore(t: StoreTarget): Promise<SqliteStore | PgStore> {
  if (t.databaseUrl) return await openPgStore(t.databaseUrl, { ...t.pg, onError: t.onError });
  return openSqliteStore(t.file, { vecExtension: t.vecExtension, readThreads: t.readThreads, onError: t.onError });
}
