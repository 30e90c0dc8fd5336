import { Database } from "bun:sqlite";
import { MIGRATIONS } from "./migrations/index.ts";
import { SqliteUnitOfWork, type UnitOfWork } from "./unit-of-work.ts";

/**
 * The SQLite handle, for the composition root to hand to stores. Only store modules use it
 * (test/architecture: only they import bun:sqlite); everything else gets a UnitOfWork.
 */
export type StoreHandle = Database;

/** An open store: the handle the stores are built on, and the unit of work services run transactions through. */
export interface OpenStore {
  db: StoreHandle;
  uow: UnitOfWork;
  close(): void;
}

/**
 * `openDatabase` plus its unit of work: what the composition root opens. `onError` hears of an
 * after-commit callback that threw (the change is committed; the others still ran).
 */
export function openStore(
  file: string,
  opts: OpenDatabaseOptions & { onError?: (err: unknown) => void } = {},
): OpenStore {
  const db = openDatabase(file, opts);
  return { db, uow: new SqliteUnitOfWork(db, opts.onError), close: () => db.close() };
}

export interface OpenDatabaseOptions {
  /** Path of the sqlite-vec loadable extension (from src/runtime). Omit to skip loading it. */
  vecExtension?: string;
  readonly?: boolean;
  busyTimeoutMs?: number;
}

/**
 * Opens the store with the settings every connection needs: WAL (readers never block the one
 * writer), busy_timeout (a CLI command beside a running server waits instead of failing),
 * foreign keys (SQLite leaves them off by default), then runs pending migrations. Reads go
 * through a memory map and a 64 MiB page cache: search rescoring reads hundreds of 2 KiB vectors
 * by id per query, and with SQLite's default 2 MiB cache each one was a pread (512 vectors:
 * 2.5 → 1.4 ms).
 */
export function openDatabase(file: string, opts: OpenDatabaseOptions = {}): Database {
  const db = new Database(file, { create: true, strict: true });
  db.exec(`PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? 10_000}`);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA mmap_size = 2147418112"); // SQLite's default ceiling (SQLITE_MAX_MMAP_SIZE)
  db.exec("PRAGMA cache_size = -65536");
  if (opts.vecExtension) db.loadExtension(opts.vecExtension);
  migrate(db);
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
