// PostgreSQL's numbered migrations, imported as text so they are embedded in the compiled binary.
// To add one: create NNN_name.sql, list it here with the SQLite migrations it matches (`sqlite`),
// and never edit one that has shipped. test/store/schema-parity.test.ts fails when a migration
// exists on one side only, or the two schemas drift.
import m001 from "./001_schema.sql" with { type: "text" };
import m002 from "./002_vector_changes.sql" with { type: "text" };
import m003 from "./003_task_queue.sql" with { type: "text" };
import m004 from "./004_ocr_cjk.sql" with { type: "text" };
import m005 from "./005_people.sql" with { type: "text" };
import m006 from "./006_vector_changes_cascade.sql" with { type: "text" };
import m007 from "./007_nodes.sql" with { type: "text" };
import m008 from "./008_rate_windows.sql" with { type: "text" };
import m009 from "./009_cluster_meta.sql" with { type: "text" };
import m010 from "./010_vector_changes_per_statement.sql" with { type: "text" };
import m011 from "./011_collection_scope.sql" with { type: "text" };

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
  /** The SQLite migrations (src/store/migrations) whose schema this one brings PostgreSQL to. */
  sqlite: number[];
  /** Why a migration has no SQLite counterpart (PostgreSQL's own functions and triggers only). */
  pgOnly?: string;
  /** Tables only PostgreSQL has (state several processes share; schema-parity lists them). */
  pgOnlyTables?: string[];
}

export const PG_MIGRATIONS: PgMigration[] = [
  // Everything up to SQLite's 009 in one file: there was no PostgreSQL install to upgrade.
  { version: 1, name: "schema", sql: m001, sqlite: [1, 2, 3, 4, 5, 6, 7, 8, 9] },
  { version: 2, name: "vector_changes", sql: m002, sqlite: [10] },
  { version: 3, name: "task_queue", sql: m003, sqlite: [11] },
  { version: 4, name: "ocr_cjk", sql: m004, sqlite: [12] },
  { version: 5, name: "people", sql: m005, sqlite: [13] },
  {
    version: 6,
    name: "vector_changes_cascade",
    sql: m006,
    sqlite: [],
    pgOnly: "PostgreSQL fires a foreign-key cascade's row triggers after the parent's own (SQLite before)",
  },
  { version: 7, name: "nodes", sql: m007, sqlite: [14] },
  {
    version: 8,
    name: "rate_windows",
    sql: m008,
    sqlite: [],
    pgOnly: "rate-limit windows shared by several servers; the embedded store's one server keeps them in memory",
    pgOnlyTables: ["rate_windows"],
  },
  { version: 9, name: "cluster_meta", sql: m009, sqlite: [15] },
  {
    version: 10,
    name: "vector_changes_per_statement",
    sql: m010,
    sqlite: [],
    pgOnly:
      "PostgreSQL's row triggers re-updating one row in a transaction cost N² (row versions); SQLite updates in place",
  },
  { version: 11, name: "collection_scope", sql: m011, sqlite: [16] },
];
