import { Database } from "bun:sqlite";
import { MIGRATIONS } from "../migrations/index.ts";
import { TxScopes } from "../tx-scope.ts";
import type { UnitOfWork } from "../unit-of-work.ts";
import { SqliteExecutor } from "./executor.ts";
import { Mutex } from "../../core/mutex.ts";
import { sqliteUnitOfWork } from "./unit-of-work.ts";
import { type ReadThreadOptions, SqliteReadThreads } from "./read-threads.ts";

export interface OpenDatabaseOptions {
  /** Path of the sqlite-vec loadable extension (from src/runtime). Omit to skip loading it. */
  vecExtension?: string;
  readonly?: boolean;
  busyTimeoutMs?: number;
  /** Reader threads for the store's long reads (`Executor.allAside`); absent: they run on this thread. */
  readThreads?: Omit<ReadThreadOptions, "vecExtension">;
}

/** An open SQLite store: the executor the stores are built on and the unit of work services run transactions through. */
export interface SqliteStore {
  readonly kind: "sqlite";
  exec: SqliteExecutor;
  uow: UnitOfWork;
  /** Closes the connections now; the reader threads stop (their pending reads fail) in the background. */
  close(): void;
}

/** Statements `db.query` keeps compiled per connection (see openDatabase). */
export const STATEMENT_CACHE_SIZE = 512;

/**
 * The writer (migrated if new) and a reader on the same file, their executor and unit of work.
 * `onError` hears of an after-commit callback that threw (the change is committed; the others
 * still ran).
 */
export function openSqliteStore(
  file: string,
  opts: OpenDatabaseOptions & { onError?: (err: unknown) => void } = {},
): SqliteStore {
  // Reads go to the writer whenever no transaction holds it (SqliteExecutor.readOn), so it carries
  // the big page cache and the memory map (search rescoring reads hundreds of vectors by id per
  // query); the reader serves reads only while a unit of work is open, with a smaller cache.
  const writer = openDatabase(file, opts);
  const reader = openDatabase(file, { ...opts, readonly: true, migrate: false, cacheMiB: 16 });
  const lock = new Mutex();
  const scopes = new TxScopes<Database>();
  const threads = opts.readThreads
    ? new SqliteReadThreads(file, { ...opts.readThreads, vecExtension: opts.vecExtension })
    : undefined;
  const exec = new SqliteExecutor(writer, reader, scopes, lock, threads);
  exec.uow = sqliteUnitOfWork(writer, lock, scopes, { onError: opts.onError });
  return {
    kind: "sqlite",
    exec,
    uow: exec.uow,
    close: () => {
      void threads?.close();
      reader.close();
      writer.close();
    },
  };
}

/**
 * Opens one connection with the settings every connection needs: WAL (readers never block the one
 * writer), busy_timeout (a CLI command beside a running server waits instead of failing),
 * foreign keys (SQLite leaves them off by default), then runs pending migrations. Reads go
 * through a memory map and a 64 MiB page cache: search rescoring reads hundreds of 2 KiB vectors
 * by id per query, and with SQLite's default 2 MiB cache each one was a pread (512 vectors:
 * 2.5 → 1.4 ms). A `readonly` connection is `query_only`: a write sent to it fails loudly
 * (SQLITE_READONLY) instead of slipping past the writer's lock.
 */
export function openDatabase(
  file: string,
  opts: OpenDatabaseOptions & { migrate?: boolean; cacheMiB?: number } = {},
): Database {
  // bun:sqlite keeps the statements `db.query` compiled in a per-connection LRU of
  // MAX_QUERY_CACHE_SIZE (20 by default, one setting for the process). One text search runs more
  // distinct statements than that (auth, rate limit, credits, feedback, the full-text look-ups,
  // the id lists padded to a few lengths), so each evicted the next one it needed and every
  // statement was compiled again on every request (issue 27's per-request profile). The app has a
  // few hundred statements in all; each compiled one is a few KB.
  if (Database.MAX_QUERY_CACHE_SIZE < STATEMENT_CACHE_SIZE) Database.MAX_QUERY_CACHE_SIZE = STATEMENT_CACHE_SIZE;
  const db = new Database(file, { create: true, strict: true });
  db.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? 10_000}`);
  if (!opts.readonly) db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA mmap_size = 2147418112"); // SQLite's default ceiling (SQLITE_MAX_MMAP_SIZE)
  db.exec(`PRAGMA cache_size = -${(opts.cacheMiB ?? 64) * 1024}`);
  if (opts.vecExtension) db.loadExtension(opts.vecExtension);
  if (opts.migrate !== false) migrate(db);
  if (opts.readonly) db.exec("PRAGMA query_only = 1");
  return db;
}

export function migrate(db: Database): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const applied = new Set(
    db
      .query<{ version: number }, []>("SELECT version FROM schema_migrations")
      .all()
      .map((r) => r.version),
  );
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    // BEGIN IMMEDIATE: two processes starting together must not both apply one migration.
    db.transaction(() => {
      const again = db.query("SELECT 1 FROM schema_migrations WHERE version = ?").get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
    }).immediate();
  }
}
