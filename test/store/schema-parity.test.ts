/**
 * Issue 25: the SQLite and PostgreSQL schemas do not drift. A fresh SQLite file and this file's
 * PostgreSQL database (a copy of the migrated template) are read from their catalogs and compared:
 * tables, columns (normalized types, nullability, defaults), primary keys, UNIQUE constraints,
 * foreign keys with their ON DELETE, named indexes (columns, uniqueness, predicate). Every
 * deliberate difference is listed below with its reason, and an entry that stops matching fails.
 * A migration added on one side only fails the pairing test (PG migrations name the SQLite ones
 * they match), and the schema test as soon as it changes anything.
 */
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS } from "../../src/store/migrations/index.ts";
import { PG_MIGRATIONS } from "../../src/store/pg/migrations/index.ts";
import { tempDir } from "../helpers/temp.ts";
import { pgAvailable } from "../pg/database.ts";
import { openPg } from "./conformance/backends.ts";
import { diffSchemas, type KnownDifferences, readPgSchema, readSqliteSchema, type Schema } from "./schema-catalog.ts";

const FTS = "FTS5 virtual table → a generated tsvector column (vs_english) and a GIN index of the same name";
const ROWID =
  "SQLite's implicit rowid orders this text-keyed table (ORDER BY rowid); PostgreSQL has no rowid, so an identity column of that name keeps the store's SQL one text";
const ACCOUNT_INDEX =
  "SQLite ends every index with the rowid (migration 009 relies on it for ORDER BY id); PostgreSQL names id";

const KNOWN: KnownDifferences = {
  ftsTables: { transcript_fts: FTS, ocr_fts: FTS, shot_text_fts: FTS },
  pgOnlyColumns: {
    "transcript_segments.tsv": FTS,
    "ocr_lines.tsv": FTS,
    "shots.text_tsv": FTS,
    "accounts.rowid": ROWID,
    "users.rowid": ROWID,
    "api_keys.rowid": ROWID,
    "collections.rowid": ROWID,
    "videos.rowid": ROWID,
    "jobs.rowid": ROWID,
    "webhooks.rowid": ROWID,
    "webhook_deliveries.rowid": ROWID,
  },
  pgOnlyIndexes: {
    users_email_nocase:
      "SQLite's `email … UNIQUE COLLATE NOCASE`: a unique index on lower(email) refuses two e-mails that differ only in case",
  },
  changedIndexes: { frames_account: ACCOUNT_INDEX, shots_account: ACCOUNT_INDEX },
};

/** Tables PostgreSQL-only migrations create (state several processes share), left out of the comparison. */
const PG_ONLY_TABLES = PG_MIGRATIONS.flatMap((m) => m.pgOnlyTables ?? []);

function withoutPgOnlyTables(s: Schema): Schema {
  const mine = (x: string) => PG_ONLY_TABLES.some((t) => x.startsWith(`${t}(`));
  return {
    ...s,
    tables: new Map([...s.tables].filter(([t]) => !PG_ONLY_TABLES.includes(t))),
    primaryKeys: new Set([...s.primaryKeys].filter((k) => !mine(k))),
    uniques: new Set([...s.uniques].filter((k) => !mine(k))),
    foreignKeys: new Set([...s.foreignKeys].filter((k) => !mine(k))),
    indexes: new Map([...s.indexes].filter(([, ix]) => !PG_ONLY_TABLES.includes(ix.table))),
  };
}

describe.skipIf(!pgAvailable())("schema parity: SQLite ↔ PostgreSQL", () => {
  const dir = tempDir("vsearch-parity-");
  let sqliteDb: ReturnType<typeof openDatabase> | undefined;
  afterAll(() => sqliteDb?.close());

  async function schemas(): Promise<{ sqlite: Schema; pg: Schema }> {
    sqliteDb ??= openDatabase(join(dir, "parity.db"));
    const pg = await openPg({ max: 1 });
    return { sqlite: readSqliteSchema(sqliteDb), pg: await readPgSchema(pg.exec) };
  }

  test("every SQLite migration is matched by exactly one PostgreSQL migration, and the other way round", () => {
    const matched = PG_MIGRATIONS.flatMap((m) => m.sqlite).sort((a, b) => a - b);
    expect(matched).toEqual(MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
    // A PostgreSQL-only migration (a fix of PostgreSQL's own triggers) says why, and changes no table.
    for (const m of PG_MIGRATIONS)
      if (!m.pgOnly) expect(m.sqlite.length, `PG migration ${m.version} matches no SQLite one`).toBeGreaterThan(0);
      else if (!m.pgOnlyTables) expect(m.sql).not.toMatch(/\b(CREATE|ALTER|DROP)\s+TABLE\b/i);
      // …or creates only the tables it names, which SQLite has no use for (state several processes share).
      else for (const t of m.pgOnlyTables) expect(m.sql).toMatch(new RegExp(`CREATE (UNLOGGED )?TABLE ${t} `));
    // Numbered 1, 2, 3 … in file order, names from their files.
    expect(PG_MIGRATIONS.map((m) => m.version)).toEqual(PG_MIGRATIONS.map((_, i) => i + 1));
  });

  test("the migrated schemas match, apart from the listed differences", async () => {
    const { sqlite, pg } = await schemas();
    // The readers found the schemas (an empty read would compare equal).
    expect(sqlite.tables.size).toBeGreaterThan(20);
    expect(sqlite.indexes.size).toBeGreaterThan(20);
    expect(sqlite.foreignKeys.size).toBeGreaterThan(15);
    expect(sqlite.virtualTables.size).toBe(3);
    expect(pg.tables.size).toBe(sqlite.tables.size + PG_ONLY_TABLES.length);
    for (const t of PG_ONLY_TABLES) expect(pg.tables.has(t), t).toBe(true);
    expect(diffSchemas(sqlite, withoutPgOnlyTables(pg), KNOWN)).toEqual([]);
  });

  test("the comparison catches drift: a column, an index predicate, a cascade, a table, a stale allowance", async () => {
    const { sqlite, pg } = await schemas();
    const clone = (s: Schema): Schema => ({
      tables: new Map([...s.tables].map(([t, cols]) => [t, new Map([...cols].map(([c, v]) => [c, { ...v }]))])),
      virtualTables: new Set(s.virtualTables),
      primaryKeys: new Set(s.primaryKeys),
      uniques: new Set(s.uniques),
      indexes: new Map([...s.indexes].map(([n, ix]) => [n, { ...ix }])),
      foreignKeys: new Set(s.foreignKeys),
    });
    const drifted = clone(withoutPgOnlyTables(pg));
    drifted.tables.get("videos")?.set("drift_probe", { type: "text", notNull: false, default: null });
    const jobs = drifted.tables.get("jobs");
    if (jobs)
      jobs.set("attempts", { ...(jobs.get("attempts") as NonNullable<ReturnType<typeof jobs.get>>), notNull: false });
    const pending = drifted.indexes.get("events_pending");
    if (pending) pending.where = "dispatched_at is not null";
    const fk = [...drifted.foreignKeys].find((f) => f.startsWith("users(account_id)")) ?? "";
    drifted.foreignKeys.delete(fk);
    drifted.foreignKeys.add(fk.replace("CASCADE", "NO ACTION"));
    drifted.tables.set("drift_probe", new Map());
    const sqliteWithout = clone(sqlite);
    sqliteWithout.virtualTables.delete("ocr_fts");
    const problems = diffSchemas(sqliteWithout, drifted, KNOWN);
    expect(problems).toEqual(
      expect.arrayContaining([
        "column videos.drift_probe: on PostgreSQL only",
        expect.stringMatching(/^column jobs\.attempts: SQLite .* ≠ PostgreSQL/),
        expect.stringMatching(/^index events_pending: SQLite/),
        "foreign key users(account_id) → accounts(id) ON DELETE NO ACTION: on PostgreSQL only",
        "foreign key users(account_id) → accounts(id) ON DELETE CASCADE: on SQLite only",
        "table drift_probe: on PostgreSQL only",
        "known difference ftsTables.ocr_fts matches nothing any more: remove it",
      ]),
    );
    expect(problems).toHaveLength(7);
  });
});
