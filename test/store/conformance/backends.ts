/**
 * The backends the store conformance tests run against. Each test file does
 * `describe.each(BACKENDS)` for what every backend must do, and PostgreSQL-only blocks for what
 * only a server has (SQLSTATEs, LISTEN, SKIP LOCKED, advisory locks).
 *
 * Only PostgreSQL is registered for now (the `pg` project, one migrated database per test file).
 * The async SQLite executor of issue 24 registers itself here, next to it, and the `sqlite`
 * project then runs these files too.
 */
import { afterAll } from "vitest";
import type { Executor } from "../../../src/store/executor.ts";
import { type OpenPgOptions, openPgStore, type PgStore } from "../../../src/store/pg/open.ts";
import type { AsyncUnitOfWork } from "../../../src/store/tx-scope.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";

export interface OpenedBackend {
  readonly exec: Executor;
  readonly uow: AsyncUnitOfWork;
  /** After-commit callbacks that threw. */
  readonly errors: unknown[];
}

export interface ConformanceBackend {
  readonly name: "postgres";
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

export const BACKENDS: ConformanceBackend[] = [postgresBackend];

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
