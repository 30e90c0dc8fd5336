/**
 * The PostgreSQL migration runner: the same shape as SQLite's (store/database.ts `migrate`), made
 * safe for several processes on several machines starting at once. One session advisory lock
 * (on a connection of its own) admits one migrator; each pending migration then runs in its own
 * transaction (DDL is transactional in PostgreSQL) with its `schema_migrations` row. A database
 * already at a version this binary does not know was migrated by a newer vsearch: this one
 * refuses to run on it (issue 26: nodes of mixed versions). Nor does a newer one migrate a
 * database that a serving node of another version is running on (`guard`): it refuses before the
 * first migration, so the running node never meets a schema it does not know.
 */
import type postgres from "postgres";
import { toStoreError } from "../errors.ts";
import { ADVISORY_LOCKS, withAdvisoryLock } from "./advisory-lock.ts";
import { PG_MIGRATIONS, type PgMigration } from "./migrations/index.ts";
import { pgDbNowMs } from "./clock.ts";

export class SchemaTooNewError extends Error {
  constructor(
    readonly database: string,
    readonly databaseVersion: number,
    readonly knownVersion: number,
  ) {
    super(
      `database "${database}" is at schema version ${databaseVersion}, newer than this vsearch knows (${knownVersion}): ` +
        "a newer vsearch has migrated it. Run that version on every node (this one refuses, so it cannot write rows the new schema does not expect)",
    );
    this.name = "SchemaTooNewError";
  }
}

/** A migration refused: a serving node of another vsearch version is running on the database. */
export class MigrationRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MigrationRefusedError";
  }
}

/**
 * Who may not be migrated under (issue 26): serving nodes (`serve`, `all`) of the node registry
 * whose version is not `version`, not stopped, with a heartbeat younger than `freshMs` on the
 * database's clock (what the registry lists as running: nodes/registry.ts).
 */
export interface MigrationGuard {
  version: string;
  freshMs: number;
}

export interface MigrationState {
  /** Versions applied by this call. */
  applied: number[];
  /** The database's version afterwards. */
  version: number;
}

const CREATE_TABLE =
  "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)";

export async function migratePg(
  pool: postgres.Sql,
  migrations: PgMigration[] = PG_MIGRATIONS,
  guard?: MigrationGuard,
): Promise<MigrationState> {
  const known = Math.max(0, ...migrations.map((m) => m.version));
  try {
    return await withAdvisoryLock(pool, ADVISORY_LOCKS.migrations, async (conn, assertHeld) => {
      await conn.unsafe(CREATE_TABLE).simple();
      const rows = await conn.unsafe<{ version: number }[]>("SELECT version FROM schema_migrations ORDER BY version");
      const done = new Set(rows.map((r) => Number(r.version)));
      const newest = Math.max(0, ...done);
      if (newest > known) {
        const [{ db }] = await conn.unsafe<{ db: string }[]>("SELECT current_database() AS db");
        throw new SchemaTooNewError(db, newest, known);
      }
      if (guard && migrations.some((m) => !done.has(m.version))) await refuseUnderOtherVersions(conn, guard);
      const applied: number[] = [];
      // One transaction per migration, in order, on the lock's session: a failure keeps the ones before it.
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        assertHeld();
        await conn.begin(async (tx) => {
          await tx.unsafe(m.sql).simple();
          await tx.unsafe("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
            m.version,
            m.name,
            new Date().toISOString(),
          ]);
        });
        applied.push(m.version);
      }
      return { applied, version: Math.max(newest, ...applied) };
    });
  } catch (err) {
    if (err instanceof SchemaTooNewError || err instanceof MigrationRefusedError) throw err;
    throw toStoreError(err) ?? err;
  }
}

async function refuseUnderOtherVersions(conn: postgres.Sql, guard: MigrationGuard): Promise<void> {
  const [t] = await conn.unsafe<{ t: string | null }[]>("SELECT to_regclass('nodes')::text AS t");
  if (!t?.t) return; // before the node registry existed: nothing registered to ask
  const rows = await conn.unsafe<{ id: string; role: string; host: string; pid: number; version: string }[]>(
    `SELECT id, role, host, pid, version FROM nodes
      WHERE role <> 'worker' AND stopped_at IS NULL AND version <> $1 AND heartbeat_at > ${pgDbNowMs("0")} - $2::bigint
      ORDER BY heartbeat_at DESC`,
    [guard.version, guard.freshMs],
  );
  const [first] = rows;
  if (!first) return;
  const more = rows.length > 1 ? ` (and ${rows.length - 1} more)` : "";
  throw new MigrationRefusedError(
    `${first.role} node ${first.id} on ${first.host} (pid ${first.pid}) runs vsearch ${first.version}${more} on this database, this is ${guard.version}: ` +
      "mixed versions are refused, and this version's migrations were not applied. Stop the nodes of the old version first (every server and worker), " +
      'then start this version everywhere (docs/SCALE-OUT.md, "Upgrade")',
  );
}

/** The database's schema version (0 when never migrated). */
export async function schemaVersion(pool: postgres.Sql): Promise<number> {
  const [t] = await pool.unsafe<{ t: string | null }[]>("SELECT to_regclass('schema_migrations')::text AS t");
  if (!t?.t) return 0;
  const [row] = await pool.unsafe<{ v: number | null }[]>("SELECT max(version) AS v FROM schema_migrations");
  return Number(row?.v ?? 0);
}
