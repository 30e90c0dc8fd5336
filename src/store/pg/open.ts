/**
 * Opening the PostgreSQL store: the pool with the options the design measured, the checks that
 * turn an unsuitable server into one clear sentence (PostgreSQL ≥ 15, pgvector ≥ 0.8 enabled in
 * the database), the migrations, and the executor + unit of work over one transaction scope.
 *
 * pgvector is not a trusted extension (its control file says so), so only a superuser can
 * `CREATE EXTENSION vector`: when the role vsearch connects as cannot, the error names the
 * database and asks for the DBA. `unaccent` is trusted: the database owner creates it (migration 001).
 */
import postgres from "postgres";
import { StoreError, toStoreError } from "../errors.ts";
import type { Executor } from "../executor.ts";
import { type AsyncUnitOfWork, TxScopes } from "../tx-scope.ts";
import { type PgConn, PgExecutor } from "./executor.ts";
import { type MigrationGuard, type MigrationState, migratePg, schemaVersion } from "./migrate.ts";
import { pgUnitOfWork } from "./unit-of-work.ts";

export const MIN_SERVER_VERSION_NUM = 150000;
export const MIN_PGVECTOR = "0.8.0";

export interface OpenPgOptions {
  /** Pool size (default 10): every open unit of work holds one connection for its length. */
  max?: number;
  /** Seen in pg_stat_activity (default "vsearch"). */
  applicationName?: string;
  /** Seconds to wait for a connection (default 10). */
  connectTimeoutS?: number;
  /** Run pending migrations at open (default true). */
  migrate?: boolean;
  /** Server notices (default: dropped). */
  onNotice?: (notice: postgres.Notice) => void;
  /** An after-commit callback that threw. */
  onError?: (err: unknown) => void;
  /** Tries of a unit of work aborted by a conflict (default 3; tests set 1 to see the error). */
  maxAttempts?: number;
  /** Refuse to migrate under running serving nodes of another version (migrate.ts `MigrationGuard`). */
  guard?: MigrationGuard;
}

export interface PgServerInfo {
  /** e.g. "15.20 (Debian 15.20-0+deb12u1)". */
  version: string;
  versionNum: number;
  pgvector: string;
  database: string;
  user: string;
  /** The schema version after migrating (0 when `migrate: false` found none). */
  schemaVersion: number;
  migration: MigrationState | null;
}

export interface PgStore {
  readonly kind: "postgres";
  /** The postgres.js pool: for store/pg's own helpers (notify, advisory locks); stores use `exec`. */
  readonly pool: postgres.Sql;
  readonly exec: Executor;
  readonly uow: AsyncUnitOfWork;
  readonly server: PgServerInfo;
  close(): Promise<void>;
}

/** The postgres.js options every vsearch pool uses. */
export function poolOptions(opts: OpenPgOptions = {}): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max: opts.max ?? 10,
    prepare: true,
    connect_timeout: opts.connectTimeoutS ?? 10,
    onnotice: opts.onNotice ?? (() => {}),
    connection: { application_name: opts.applicationName ?? "vsearch" },
    // count(*) and sum(integer) are int8, sum(bigint) is numeric: numbers, as SQLite gives them, not
    // strings. Exact up to 2^53 (ids, epoch ms and byte counts stay far below).
    types: {
      int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      numeric: { to: 1700, from: [1700], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      // A parameter the server types json/jsonb (`?::jsonb`) is bound from a string holding JSON
      // (the seam's Param has no objects): it goes as it is. postgres.js's default serializer
      // would JSON.stringify it again, so '["a"]' arrived as the jsonb string "[\"a\"]".
      json: {
        to: 114,
        from: [114, 3802],
        serialize: (x: unknown) => (typeof x === "string" ? x : JSON.stringify(x)),
        parse: (x: string) => JSON.parse(x),
      },
    },
  };
}

/** `host:port/database` of a URL, without credentials: what errors name. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname || "/"}`;
  } catch {
    return "(unparsable database URL)";
  }
}

export async function openPgStore(url: string, opts: OpenPgOptions = {}): Promise<PgStore> {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new StoreError("misuse", "database_url must start with postgres:// or postgresql://");
  }
  const pool = postgres(url, poolOptions(opts));
  try {
    const base = await checkServer(pool, url);
    const pgvector = await ensureExtensions(pool, base.database);
    const migration = opts.migrate === false ? null : await migratePg(pool, undefined, opts.guard);
    const server: PgServerInfo = {
      ...base,
      pgvector,
      migration,
      schemaVersion: migration ? migration.version : await schemaVersion(pool),
    };
    const scopes = new TxScopes<PgConn>();
    const exec = new PgExecutor(pool, scopes);
    exec.uow = pgUnitOfWork(pool, scopes, { onError: opts.onError, maxAttempts: opts.maxAttempts });
    return {
      kind: "postgres",
      pool,
      exec,
      uow: exec.uow,
      server,
      close: () => pool.end({ timeout: 5 }),
    };
  } catch (err) {
    await pool.end({ timeout: 1 }).catch(() => {});
    throw err;
  }
}

async function checkServer(pool: postgres.Sql, url: string) {
  let row: { num: number; version: string; database: string; user: string } | undefined;
  try {
    [row] = await pool.unsafe<{ num: number; version: string; database: string; user: string }[]>(
      "SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS version, current_database() AS database, current_user AS user",
    );
  } catch (err) {
    const e = toStoreError(err);
    if (!e) throw err;
    throw new StoreError(e.kind, `cannot reach PostgreSQL at ${describeUrl(url)}: ${e.message}`, {
      cause: err,
      code: e.code,
    });
  }
  if (!row) throw new StoreError("unavailable", `PostgreSQL at ${describeUrl(url)} answered no row`);
  if (row.num < MIN_SERVER_VERSION_NUM) {
    throw new StoreError(
      "misuse",
      `PostgreSQL ${row.version} at ${describeUrl(url)} is too old: vsearch needs PostgreSQL 15 or newer`,
    );
  }
  return { version: row.version, versionNum: row.num, database: row.database, user: row.user };
}

/** Compares dotted versions ("0.8.0" < "0.10.1"). */
export function versionAtLeast(have: string, want: string): boolean {
  const a = have.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const b = want.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

/** The version of `name` enabled in this database, or undefined. */
async function installedVersion(pool: postgres.Sql, name: string): Promise<string | undefined> {
  return (await pool.unsafe<{ v: string }[]>("SELECT extversion AS v FROM pg_extension WHERE extname = $1", [name]))[0]
    ?.v;
}

/**
 * Enables extension `name` when it is not (`CREATE EXTENSION IF NOT EXISTS`); `refused` words the
 * error when this role may not. Several processes opening one new database race here: the loser's
 * duplicate-key error means the extension is there.
 */
async function enableExtension(
  pool: postgres.Sql,
  name: string,
  messages: { missing: string; refused: string },
): Promise<string> {
  const have = await installedVersion(pool, name);
  if (have) return have;
  const [available] = await pool.unsafe<{ v: string | null }[]>(
    "SELECT default_version AS v FROM pg_available_extensions WHERE name = $1",
    [name],
  );
  if (!available) throw new StoreError("misuse", messages.missing);
  try {
    await pool.unsafe(`CREATE EXTENSION IF NOT EXISTS ${name}`);
  } catch (err) {
    const e = toStoreError(err);
    if (e?.code === "42501") throw new StoreError("misuse", messages.refused, { cause: err, code: e.code });
    if (e?.kind !== "unique" && e?.code !== "42710") throw e ?? err;
  }
  const now = await installedVersion(pool, name);
  if (!now) throw new StoreError("misuse", messages.refused);
  return now;
}

/** pgvector (≥ 0.8) and unaccent enabled in this database (enabled here when the role may); pgvector's version. */
async function ensureExtensions(pool: postgres.Sql, database: string): Promise<string> {
  const db = JSON.stringify(database);
  const version = await enableExtension(pool, "vector", {
    missing: `pgvector is not installed on the PostgreSQL server of database ${db}: install pgvector ${MIN_PGVECTOR} or newer on the server, then ask the DBA to run CREATE EXTENSION vector in database ${db}`,
    refused: `pgvector is not enabled in database ${db}, and this role may not enable it (it needs a superuser): ask the DBA to run CREATE EXTENSION vector in database ${db}`,
  });
  if (!versionAtLeast(version, MIN_PGVECTOR)) {
    throw new StoreError(
      "misuse",
      `pgvector ${version} in database ${db} is older than ${MIN_PGVECTOR}: ask the DBA to install pgvector ${MIN_PGVECTOR} or newer on the server and run ALTER EXTENSION vector UPDATE in database ${db}`,
    );
  }
  await enableExtension(pool, "unaccent", {
    missing: `the PostgreSQL server of database ${db} has no unaccent extension (full-text search folds accents with it): install the server's contrib package`,
    refused: `unaccent is not enabled in database ${db} and this role may not enable it: ask the DBA to run CREATE EXTENSION unaccent in database ${db}, or make vsearch's role the database's owner`,
  });
  return version;
}
