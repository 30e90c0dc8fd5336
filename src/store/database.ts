/**
 * Opening the store: what the composition root (and the test helpers) call. Today the embedded
 * SQLite backend; the PostgreSQL backend (store/pg/) is chosen here when a database URL is given.
 * Stores are built on `exec` (an Executor: no driver); services get `uow`.
 */
import type { Executor } from "./executor.ts";
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
