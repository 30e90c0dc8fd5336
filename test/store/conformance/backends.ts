/**
 * The backends the store conformance tests run against. Each test file does
 * `describe.each(BACKENDS)` for what every backend must do, and PostgreSQL-only blocks for what
 * only a server has (SQLSTATEs, LISTEN, SKIP LOCKED, advisory locks).
 *
 * Both backends are registered: the embedded SQLite store (a fresh file per `open`) and
 * PostgreSQL (the `pg` project's database of this test file). The files run in the `pg` project;
 * without a PostgreSQL there, its half is skipped and the SQLite half still runs.
 */
import { join } from "node:path";
import { afterAll } from "vitest";
import { openStore } from "../../../src/store/database.ts";
import type { Executor } from "../../../src/store/executor.ts";
import { type OpenPgOptions, openPgStore, type PgStore } from "../../../src/store/pg/open.ts";
import type { AsyncUnitOfWork } from "../../../src/store/tx-scope.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { tempDirs } from "../../helpers/temp.ts";

export interface OpenedBackend {
  readonly exec: Executor;
  readonly uow: AsyncUnitOfWork;
  /** After-commit callbacks that threw. */
  readonly errors: unknown[];
}

export interface ConformanceBackend {
  readonly name: "sqlite" | "postgres";
  /** False: this run has no such backend; its tests are skipped (test/pg says why, once). */
  readonly available: () => boolean;
  /** A store on this test file's database (closed after the file). */
  open(opts?: { maxAttempts?: number; max?: number }): Promise<OpenedBackend>;
}

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

/** A PostgreSQL store on this file's database (or on `database` of the test cluster). */
export async function openPg(
  opts: OpenPgOptions & { database?: string; user?: string } = {},
): Promise<PgStore & { errors: unknown[] }> {
  const errors: unknown[] = [];
  const t = pgTest();
  const url = opts.database ? t.urlFor(opts.database, opts.user) : t.url;
  const store = await openPgStore(url, { max: 4, ...opts, onError: (e) => errors.push(e) });
  opened.push(store);
  return Object.assign(store, { errors });
}

export const postgresBackend: ConformanceBackend = {
  name: "postgres",
  available: pgAvailable,
  open: (opts = {}) => openPg(opts),
};

const sqliteDirs = tempDirs("conformance");
const sqliteOpened: { close(): void }[] = [];
afterAll(() => {
  for (const s of sqliteOpened.splice(0)) s.close();
});

/** A SQLite store on a fresh file (its own directory, removed after the file's tests). */
export const sqliteBackend: ConformanceBackend = {
  name: "sqlite",
  available: () => true,
  open: async () => {
    const errors: unknown[] = [];
    const store = openStore(join(sqliteDirs.make(), "vsearch.db"), { onError: (e) => errors.push(e) });
    sqliteOpened.push(store);
    return { exec: store.exec, uow: store.uow, errors };
  },
};

export const BACKENDS: ConformanceBackend[] = [sqliteBackend, postgresBackend];

/** A promise and its resolver: lets a test hold one flow at a known point while another acts. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open = () => {};
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

let tables = 0;
/** A fresh table name for one test (the file's database is shared by its tests). */
export const tableName = (prefix = "t") => `${prefix}_${++tables}`;
