/**
 * Issue 10: tests go through HTTP, the CLI, services or stores — never `app.internals`, never a
 * database handle of their own, never SQL (rules in check-tests.ts).
 */
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { readTree, type SourceFile } from "./check-imports.ts";
import { checkTests, DATABASE_OPENER, sqlTexts, type TestRuleException } from "./check-tests.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** Each with its reason; an entry that stops matching fails, so the list only shrinks. */
export const TEST_EXCEPTIONS: TestRuleException[] = [
  {
    file: "workers/connection-errors.test.ts",
    rule: "database",
    reason:
      "builds the StoreError (kind unavailable) a driver raises when the database is unreachable; opens nothing itself",
  },
  { file: "architecture/check-tests.ts", rule: "app-internals", reason: "the checker names the key it looks for" },
  {
    file: "e2e/operators.ts",
    rule: "database",
    reason:
      "the browser test is a plain bun script, not a vitest file (helpers/stores.ts imports vitest): it opens the binary's SQLite file only to register a second node through the real node registry (issue 26's Nodes page)",
  },
  {
    file: "pg/",
    rule: "database",
    reason: "the pg project's harness: a throw-away cluster, the migrated template and a database per test file",
  },
  {
    file: "store/conformance/",
    rule: "database",
    reason: "the store seam's conformance suite opens the executors and units of work it tests (issues 24/25)",
  },
  {
    file: "store/conformance/",
    rule: "sql",
    reason:
      "the executor under test runs statements on scratch tables of its own; claims, locks and SQLSTATEs are provoked in SQL",
  },
  {
    file: "store/schema-parity.test.ts",
    rule: "database",
    reason: "migrates a fresh SQLite file and reads a PostgreSQL database to compare their schemas",
  },
  { file: "store/schema-catalog.ts", rule: "database", reason: "reads the SQLite and PostgreSQL catalogs" },
  {
    file: "store/migrate-store.test.ts",
    rule: "database",
    reason:
      "drives the store copier (src/store/migrate-store.ts) and reads the target PostgreSQL database's row counts",
  },
  {
    file: "store/migrate-store.test.ts",
    rule: "sql",
    reason: "counts the target's rows and makes one of its tables refuse rows (a failure midway)",
  },
  {
    file: "store/store-errors.test.ts",
    rule: "database",
    reason: "classifies real bun:sqlite errors with store/errors.ts (it opens nothing but through helpers/stores.ts)",
  },
  {
    file: "cluster/two-servers.test.ts",
    rule: "sql",
    reason: "cuts the servers' LISTEN connections (pg_terminate_backend), as a network failure would",
  },
  { file: "store/schema-catalog.ts", rule: "sql", reason: "the catalog queries (sqlite_master, pragma_*, pg_catalog)" },
  {
    file: "store/read-threads.test.ts",
    rule: "database",
    reason: "tests the embedded store's reader threads (opened with them); failures are StoreErrors, checked by kind",
  },
  {
    file: "store/read-threads.test.ts",
    rule: "sql",
    reason:
      "the executor's allAside under test runs statements on a scratch table of its own, and long ones on purpose",
  },
  {
    file: "store/unit-of-work.test.ts",
    rule: "database",
    reason: "tests the unit of work's contract; its refusals are StoreErrors (store/errors.ts), checked by kind",
  },
];

describe("test/ rules", () => {
  test("the real tree keeps them", () => {
    const files = readTree(join(ROOT, "test"));
    // The walk found the tree, and the stores helper is where the rules say (a wrong root would pass vacuously).
    expect(files.some((f) => f.path === DATABASE_OPENER)).toBe(true);
    expect(files.length).toBeGreaterThan(100);
    expect(checkTests(files, TEST_EXCEPTIONS)).toEqual([]);
  });

  test("the SQL matcher finds the statements the stores run", () => {
    // Vacuity guard: the same matcher over src/'s stores must find their SQL.
    const stores = readTree(join(ROOT, "src")).filter(
      (f) => /(^|\/)[\w-]*store\.ts$/.test(f.path) || f.path.startsWith("store/"),
    );
    expect(stores.length).toBeGreaterThan(15);
    const found = stores.flatMap((f) => sqlTexts(f));
    expect(found.length).toBeGreaterThan(100);
    const starts = new Set(found.map(([, text]) => text.trim().split(/\s+/)[0].toUpperCase()));
    for (const verb of ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "PRAGMA"])
      expect(starts, verb).toContain(verb);
  });
});

describe("the checker, on synthetic files", () => {
  const clean: SourceFile = {
    path: "videos/clean.test.ts",
    text: [
      'import { startTestApp } from "../helpers/app.ts";',
      "const t = await startTestApp();",
      "const v = t.stores.videos.getById('vid_x');",
      'const m = /^(\\d+)$/.exec("42");',
      'expect(text).not.toContain("secret internals");',
      'test("credits grant/show and accounts delete from the CLI", () => {});',
      'search({ query: "\'; DROP TABLE shots; --" });',
      'bad({ threshold_key: "DROP TABLE" });',
      "// SELECT * FROM videos, in a comment, is prose",
    ].join("\n"),
  };

  test("a clean file passes; the stores helper may open the database", () => {
    expect(checkTests([clean], [])).toEqual([]);
    const opener = {
      path: DATABASE_OPENER,
      text: 'import { openDatabase } from "../../src/store/database.ts";\nexport const open = (f: string) => openDatabase(f);',
    };
    expect(checkTests([opener], [])).toEqual([]);
  });

  test("reading app.internals fails, however it is spelled", () => {
    const files: SourceFile[] = [
      { path: "a.test.ts", text: "const db = t.app.internals.db;" },
      { path: "b.test.ts", text: "const r = t.app?.internals?.runner;" },
      { path: "c.test.ts", text: "const { internals } = t.app;\nconst { internals: seam } = app;" },
      { path: "d.test.ts", text: 'const x = (app as any)["internals"];\nconst y = Reflect.get(app, "internals");' },
    ];
    expect(checkTests(files, [])).toEqual([
      "a.test.ts:1: reads app.internals (a benchmark seam); go through HTTP, services or t.stores",
      "b.test.ts:1: reads app.internals (a benchmark seam); go through HTTP, services or t.stores",
      "c.test.ts:1,2: reads app.internals (a benchmark seam); go through HTTP, services or t.stores",
      "d.test.ts:1,2: reads app.internals (a benchmark seam); go through HTTP, services or t.stores",
    ]);
  });

  test("opening a database outside the stores helper fails: bun:sqlite or src/store/, static, dynamic or required", () => {
    const files: SourceFile[] = [
      { path: "x/a.test.ts", text: 'import { Database } from "bun:sqlite";\nconst db = new Database(":memory:");' },
      { path: "x/b.test.ts", text: 'const { openDatabase } = await import("../../src/store/database.ts");' },
      { path: "x/c.test.ts", text: 'const { Database } = require("bun:sqlite");' },
      { path: "helpers/d.ts", text: 'import { MIGRATIONS } from "../../src/store/migrations/index.ts";' },
    ];
    expect(checkTests(files, [])).toEqual([
      "x/a.test.ts: opens a database (imports bun:sqlite); read and set up state through helpers/stores.ts",
      "x/b.test.ts: opens a database (imports ../../src/store/database.ts); read and set up state through helpers/stores.ts",
      "x/c.test.ts: opens a database (imports bun:sqlite); read and set up state through helpers/stores.ts",
      "helpers/d.ts: opens a database (imports ../../src/store/migrations/index.ts); read and set up state through helpers/stores.ts",
    ]);
  });

  test("SQL text fails: strings, templates, concatenations, any case; the stores helper is no exception", () => {
    const files: SourceFile[] = [
      {
        path: "sql.test.ts",
        text: [
          'const n = store.db.query("SELECT count(*) AS n FROM videos").get();',
          "db.run(`DELETE FROM ${table} WHERE id = ?`, id);",
          'db.exec("UPDATE videos " + "SET status = \'ready\'");',
          "db.query('select id from videos').all();",
          'db.exec("PRAGMA foreign_keys = OFF");',
          "db.exec(`\n  INSERT OR REPLACE INTO jobs (id) VALUES (?)`);",
          "const q = `SELECT ${cols} FROM shots`;",
          'db.exec("CREATE VIRTUAL TABLE f USING fts5(text)");',
          'const v = db.query("SELECT sqlite_version()").get();',
        ].join("\n"),
      },
      { path: DATABASE_OPENER, text: 'export const wipe = (db: any) => db.exec("DROP TABLE IF EXISTS videos");' },
    ];
    const problems = checkTests(files, []);
    expect(problems.map((p) => p.split(": SQL text")[0])).toEqual([
      "sql.test.ts:1",
      "sql.test.ts:2",
      "sql.test.ts:3",
      "sql.test.ts:4",
      "sql.test.ts:5",
      "sql.test.ts:6",
      "sql.test.ts:8",
      "sql.test.ts:9",
      "sql.test.ts:10",
      `${DATABASE_OPENER}:1`,
    ]);
    expect(problems[1]).toBe(
      'sql.test.ts:2: SQL text "DELETE FROM ? WHERE id = ?"; use a store method (a narrow new one in src/<domain>/store.ts if none fits)',
    );
  });

  test("an exception excuses one rule in one file; one that matches nothing fails", () => {
    const bad: SourceFile = {
      path: "raw.test.ts",
      text: 'import { Database } from "bun:sqlite";\nnew Database(":memory:").run("CREATE TABLE t (v INTEGER)");',
    };
    const database: TestRuleException = { file: "raw.test.ts", rule: "database", reason: "test" };
    const sql: TestRuleException = { file: "raw.test.ts", rule: "sql", reason: "test" };
    expect(checkTests([bad], [database])).toEqual([
      expect.stringMatching(/^raw\.test\.ts:2: SQL text "CREATE TABLE t/),
    ]);
    expect(checkTests([bad], [database, sql])).toEqual([]);
    expect(checkTests([clean], [database])).toEqual([
      "exception raw.test.ts (database) matches nothing any more: remove it",
    ]);
    // A folder entry (ending in "/") covers the files under it, and only those; postgres opens a database too.
    const pg: SourceFile = { path: "store/conformance/x.test.ts", text: 'import postgres from "postgres";' };
    const folder: TestRuleException = { file: "store/conformance/", rule: "database", reason: "test" };
    expect(checkTests([pg], [])).toEqual([
      "store/conformance/x.test.ts: opens a database (imports postgres); read and set up state through helpers/stores.ts",
    ]);
    expect(checkTests([pg], [folder])).toEqual([]);
    expect(checkTests([{ ...pg, path: "store/other.test.ts" }], [folder])).toEqual([
      "store/other.test.ts: opens a database (imports postgres); read and set up state through helpers/stores.ts",
      "exception store/conformance/ (database) matches nothing any more: remove it",
    ]);
  });
});
