/**
 * Opening the PostgreSQL store: what it reports, the refusals that name their fix (pgvector not
 * enabled and the role may not enable it; a schema newer than the binary), migrations applied once
 * when several processes start together, and the advisory lock they run under.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { isStoreError } from "../../../src/store/errors.ts";
import { acquireAdvisoryLock, ADVISORY_LOCKS } from "../../../src/store/pg/advisory-lock.ts";
import { NodeStore } from "../../../src/nodes/store.ts";
import { MigrationRefusedError, migratePg, SchemaTooNewError, schemaVersion } from "../../../src/store/pg/migrate.ts";
import { PG_MIGRATIONS } from "../../../src/store/pg/migrations/index.ts";
import { openPgStore, versionAtLeast } from "../../../src/store/pg/open.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { openPg } from "./backends.ts";

describe.skipIf(!pgAvailable())("opening the PostgreSQL store", () => {
  /** Empty databases made by this file (not copies of the template), dropped after it. */
  const made: string[] = [];
  let n = 0;
  async function emptyDatabase(owner?: string): Promise<string> {
    const name = `${pgTest().name}_e${++n}`;
    await pgTest().admin.unsafe(`CREATE DATABASE ${name}${owner ? ` OWNER ${owner}` : ""} TEMPLATE template0`);
    made.push(name);
    return name;
  }
  afterAll(async () => {
    if (!pgAvailable()) return;
    for (const name of made) await pgTest().admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await pgTest().admin.unsafe("DROP ROLE IF EXISTS vs_plain");
  });
  beforeAll(async () => {
    await pgTest().admin.unsafe("DROP ROLE IF EXISTS vs_plain");
    await pgTest().admin.unsafe("CREATE ROLE vs_plain LOGIN");
  });

  test("reports the server, pgvector and the schema version", async () => {
    const s = await openPg();
    expect(s.server.versionNum).toBeGreaterThanOrEqual(150000);
    expect(versionAtLeast(s.server.pgvector, "0.8.0")).toBe(true);
    expect(s.server.database).toBe(pgTest().name);
    expect(s.server.schemaVersion).toBe(Math.max(...PG_MIGRATIONS.map((m) => m.version)));
    expect(s.server.migration?.applied).toEqual([]); // the template copy was already migrated
    const app = await s.exec.get<{ name: string }>(
      "SELECT application_name AS name FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    );
    expect(app?.name).toBe("vsearch");
  });

  test("a role that may not create pgvector is told to ask the DBA, naming the database", async () => {
    const db = await emptyDatabase("vs_plain");
    const err = await openPgStore(pgTest().urlFor(db, "vs_plain"), { max: 2 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isStoreError(err, "misuse")).toBe(true);
    expect((err as Error).message).toContain(`ask the DBA to run CREATE EXTENSION vector in database "${db}"`);
    // Once the DBA has, the same role opens and migrates it (unaccent is trusted: the owner creates it).
    const dba = await openPgStore(pgTest().urlFor(db), { max: 1, migrate: false }); // a superuser: enables it
    expect(dba.server.schemaVersion).toBe(0);
    await dba.close();
    const s = await openPgStore(pgTest().urlFor(db, "vs_plain"), { max: 2 });
    expect(s.server.migration?.applied).toEqual(PG_MIGRATIONS.map((m) => m.version));
    await s.close();
  });

  test("processes migrating one empty database at once apply each migration once", async () => {
    const db = await emptyDatabase();
    const stores = await Promise.all([1, 2, 3].map(() => openPgStore(pgTest().urlFor(db), { max: 2 })));
    try {
      const applied = stores.map((s) => s.server.migration?.applied ?? []);
      expect(applied.flat().sort((x, y) => x - y)).toEqual(PG_MIGRATIONS.map((m) => m.version)); // all by one of them
      expect(applied.filter((a) => a.length > 0)).toHaveLength(1);
      const rows = await stores[0].exec.all<{ version: number }>(
        "SELECT version FROM schema_migrations ORDER BY version",
      );
      expect(rows.map((r) => r.version)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  test("a database migrated by a newer vsearch is refused (mixed versions)", async () => {
    const db = await emptyDatabase();
    const first = await openPgStore(pgTest().urlFor(db), { max: 2 });
    await first.exec.run(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
      999,
      "from the future",
      new Date().toISOString(),
    );
    await first.close();
    const err = await openPgStore(pgTest().urlFor(db), { max: 2 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect((err as Error).message).toMatch(
      new RegExp(`"${db}" is at schema version 999, newer than this vsearch knows`),
    );
  });

  test("a newer vsearch does not migrate under a running serving node of another version; stopped or a worker, it does", async () => {
    const url = pgTest().urlFor(await emptyDatabase());
    const latest = Math.max(...PG_MIGRATIONS.map((m) => m.version));
    // A database one migration behind, as the older vsearch left it, with its nodes registered.
    const old = await openPgStore(url, { max: 2, migrate: false });
    try {
      await migratePg(
        old.pool,
        PG_MIGRATIONS.filter((m) => m.version < latest),
      );
      const nodes = new NodeStore(old.exec);
      const node = (id: string, role: "serve" | "worker", version: string) => ({
        id,
        role,
        kinds: "[]",
        concurrency: 1,
        device: "cpu",
        models: "{}",
        version,
        host: "old-host",
        pid: 4242,
        refused: null,
      });
      await nodes.register(node("node_oldserve", "serve", "0.0.1-old"));
      await nodes.register(node("node_oldwork", "worker", "0.0.1-old"));
      await nodes.register(node("node_sameserve", "serve", "9.9.9"));
      const guard = { version: "9.9.9", freshMs: 30_000 };
      const err = await openPgStore(url, { max: 2, guard }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(MigrationRefusedError);
      expect((err as Error).message).toBe(
        "serve node node_oldserve on old-host (pid 4242) runs vsearch 0.0.1-old on this database, this is 9.9.9: " +
          "mixed versions are refused, and this version's migrations were not applied. Stop the nodes of the old version first " +
          '(every server and worker), then start this version everywhere (docs/SCALE-OUT.md, "Upgrade")',
      );
      expect(await schemaVersion(old.pool)).toBe(latest - 1);
      // The old server stopped (its worker still running: workers never hold a migration back).
      await nodes.stopped("node_oldserve");
      const s = await openPgStore(url, { max: 2, guard });
      expect(s.server.migration?.applied).toEqual([latest]);
      await s.close();
    } finally {
      await old.close();
    }
  });

  test("an advisory lock admits one session; released or lost with its connection, the next gets it", async () => {
    const a = await openPg({ max: 2 });
    const b = await openPg({ max: 2 });
    const held = await acquireAdvisoryLock(a.pool, ADVISORY_LOCKS.leader, { wait: false });
    expect(held).not.toBeNull();
    expect(await held?.stillHeld()).toBe(true);
    expect(await acquireAdvisoryLock(b.pool, ADVISORY_LOCKS.leader, { wait: false })).toBeNull();
    await held?.release();
    expect(await held?.stillHeld()).toBe(false);
    const next = await acquireAdvisoryLock(b.pool, ADVISORY_LOCKS.leader, { wait: false });
    expect(next).not.toBeNull();
    // Its session is terminated: the lock goes with it, and the holder can tell.
    await pgTest().admin`SELECT pg_terminate_backend(${next?.pid ?? 0})`;
    expect(await next?.stillHeld()).toBe(false);
    const third = await acquireAdvisoryLock(a.pool, ADVISORY_LOCKS.leader, { wait: false });
    expect(third).not.toBeNull();
    await third?.release();
    await next?.release();
  });
});
