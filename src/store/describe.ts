/**
 * What an operator is told about the store this process runs on (`vsearch doctor`, `backup`,
 * `restore`): the embedded file, or the PostgreSQL server, database, versions and migration state.
 * Never a password: a database URL is shown as host:port/database (store/pg/open.ts describeUrl),
 * and the commands suggested for pg_dump / pg_restore name the role, not its credentials.
 */
import { PG_MIGRATIONS } from "./pg/migrations/index.ts";
import { describeUrl, type PgServerInfo } from "./pg/open.ts";

export interface EmbeddedStoreInfo {
  kind: "sqlite";
  /** The database file (`<data-dir>/vsearch.db`). */
  file: string;
}

export interface PostgresStoreInfo {
  kind: "postgres";
  /** host:port/database, without credentials. */
  location: string;
  database: string;
  /** The role vsearch connects as (a name, not a credential). */
  role: string;
  /** e.g. "15.20 (Debian 15.20-0+deb12u1)". */
  server_version: string;
  pgvector_version: string;
  /** The database's schema version (store/pg/migrations). */
  schema_version: number;
  /** The newest schema version this binary knows. */
  binary_schema_version: number;
  /** Migrations this binary knows that the database has not had. */
  pending_migrations: number[];
  /** Migrations this process applied when it opened the store (a first start, an upgrade). */
  migrated_at_open: number[];
}

export type StoreBackendInfo = EmbeddedStoreInfo | PostgresStoreInfo;

/** The newest PostgreSQL schema version this binary carries. */
export const PG_SCHEMA_VERSION = Math.max(0, ...PG_MIGRATIONS.map((m) => m.version));

export function describePostgres(url: string, server: PgServerInfo): PostgresStoreInfo {
  return {
    kind: "postgres",
    location: describeUrl(url),
    database: server.database,
    role: server.user,
    server_version: server.version,
    pgvector_version: server.pgvector,
    schema_version: server.schemaVersion,
    binary_schema_version: PG_SCHEMA_VERSION,
    pending_migrations: PG_MIGRATIONS.map((m) => m.version).filter((v) => v > server.schemaVersion),
    migrated_at_open: server.migration?.applied ?? [],
  };
}

/** One line for humans: where the rows are. */
export function storeLine(s: StoreBackendInfo): string {
  if (s.kind === "sqlite") return `embedded SQLite, ${s.file}`;
  return `PostgreSQL ${s.server_version.split(" ")[0]} at ${s.location} (role ${s.role}), pgvector ${s.pgvector_version}`;
}

/** One line for humans: the PostgreSQL schema against this binary's migrations. */
export function migrationLine(s: PostgresStoreInfo): string {
  const state = s.pending_migrations.length
    ? `${s.pending_migrations.length} pending (${s.pending_migrations.join(", ")})`
    : "up to date";
  const now = s.migrated_at_open.length ? `; applied at this start: ${s.migrated_at_open.join(", ")}` : "";
  return `schema version ${s.schema_version} of ${s.binary_schema_version}, ${state}${now}`;
}

/** Host, port, database and role of a postgres:// URL (no password), for the pg_dump/pg_restore lines. */
export function pgTarget(url: string): { host: string; port: string; database: string; user: string } {
  const u = new URL(url);
  const q = u.searchParams;
  return {
    host: q.get("host") ?? decodeURIComponent(u.hostname),
    port: q.get("port") ?? u.port,
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || q.get("dbname") || "",
    user: decodeURIComponent(u.username) || q.get("user") || "",
  };
}

/** Quotes an argument for a POSIX shell when it needs it. */
export function shellArg(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The connection flags shared by pg_dump and pg_restore: host, port, role, database (password: PGPASSWORD or ~/.pgpass). */
function connectionFlags(url: string): string[] {
  const t = pgTarget(url);
  return [
    ...(t.host ? [`--host=${shellArg(t.host)}`] : []),
    ...(t.port ? [`--port=${shellArg(t.port)}`] : []),
    ...(t.user ? [`--username=${shellArg(t.user)}`] : []),
    `--dbname=${shellArg(t.database)}`,
  ];
}

/** `pg_dump` of the whole database in custom format into `file`. */
export function pgDumpCommand(url: string, file: string): string {
  return ["pg_dump", "--format=custom", ...connectionFlags(url), `--file=${shellArg(file)}`].join(" ");
}

/** `pg_restore` of such a dump into the (empty, pgvector-enabled) database. */
export function pgRestoreCommand(url: string, file: string): string {
  return ["pg_restore", "--no-owner", "--no-comments", "--exit-on-error", ...connectionFlags(url), shellArg(file)].join(
    " ",
  );
}
