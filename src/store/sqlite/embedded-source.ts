/**
 * The embedded store read as the source of `vsearch migrate-store` (store/migrate-store.ts): its
 * tables with their columns, row counts and rows, all inside ONE read transaction, so the copy is
 * one consistent snapshot of the file (WAL: a writer elsewhere does not change what this sees).
 *
 * Not read: the FTS5 tables (`transcript_fts`, `ocr_fts`, `shot_text_fts`) and their shadow tables
 * (PostgreSQL computes its `tsvector` columns from the copied text), sqlite-vec's `vec_frames_<dim>`
 * tables and their shadow tables (PostgreSQL keeps vectors in pgvector columns of
 * `frame_vectors` / `shot_vectors`, which are copied), SQLite's own `sqlite_*` tables, and
 * `schema_migrations` (the target has its own). Integers are read as bigint (`safeIntegers`), so
 * ids and epoch ms above 2^53 would still be copied exactly.
 */
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { MIGRATIONS } from "../migrations/index.ts";
import { StoreError } from "../errors.ts";
import { migrate } from "./database.ts";

export type SourceValue = string | number | bigint | null | Uint8Array;

export interface SourceTable {
  name: string;
  columns: string[];
  /** False for tables whose key is an INTEGER PRIMARY KEY (rowid is that key) or WITHOUT ROWID. */
  hasImplicitRowid: boolean;
}

export interface SkippedTable {
  name: string;
  reason: string;
}

const FTS_REASON = "FTS5 index: PostgreSQL computes it (generated tsvector column + GIN index)";
const VEC_REASON = "sqlite-vec table: PostgreSQL keeps vectors in pgvector columns (frame_vectors, shot_vectors)";

export class EmbeddedSource {
  private readonly db: Database;
  private inTx = false;

  /**
   * Opens `file` (migrating it to this vsearch's schema first, as every command does), then a
   * read-only connection that holds one read transaction until `close()`.
   */
  constructor(readonly file: string) {
    if (!existsSync(file)) throw new StoreError("misuse", `no embedded store at ${file}`);
    const writer = new Database(file, { strict: true });
    try {
      writer.exec("PRAGMA busy_timeout = 10000");
      writer.exec("PRAGMA foreign_keys = ON");
      migrate(writer);
    } finally {
      writer.close();
    }
    this.db = new Database(file, { readonly: true, strict: true, safeIntegers: true });
    this.db.exec("PRAGMA busy_timeout = 10000");
    this.db.exec("BEGIN");
    this.inTx = true;
    // A deferred transaction takes its snapshot at the first read: read now.
    this.db.query("SELECT count(*) FROM sqlite_master").get();
  }

  /** The schema version (the highest applied migration), and the one this vsearch expects. */
  schemaVersion(): { version: number; expected: number } {
    const row = this.db.query<{ v: bigint | null }, []>("SELECT max(version) AS v FROM schema_migrations").get();
    return { version: Number(row?.v ?? 0), expected: Math.max(...MIGRATIONS.map((m) => m.version)) };
  }

  /** The tables to copy, and those left out with the reason. */
  tables(): { copy: SourceTable[]; skipped: SkippedTable[] } {
    const objects = this.db
      .query<{ name: string; sql: string | null }, []>(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name",
      )
      .all();
    const virtual = new Map<string, string>();
    for (const o of objects) {
      const m = /^CREATE VIRTUAL TABLE\s+\S+\s+USING\s+(\w+)/i.exec(o.sql ?? "");
      if (m) virtual.set(o.name, m[1]!.toLowerCase() === "fts5" ? FTS_REASON : VEC_REASON);
    }
    const copy: SourceTable[] = [];
    const skipped: SkippedTable[] = [];
    for (const o of objects) {
      const owner = [...virtual.keys()].find((v) => o.name === v || o.name.startsWith(`${v}_`));
      if (owner) {
        skipped.push({ name: o.name, reason: o.name === owner ? virtual.get(owner)! : `shadow table of ${owner}` });
        continue;
      }
      if (o.name.startsWith("sqlite_")) {
        skipped.push({
          name: o.name,
          reason: "SQLite's own bookkeeping (its AUTOINCREMENT counters set the sequences)",
        });
        continue;
      }
      if (o.name === "schema_migrations") {
        skipped.push({ name: o.name, reason: "the target keeps its own migration history" });
        continue;
      }
      const cols = this.db
        .query<{ name: string; type: string; pk: number }, [string]>("SELECT name, type, pk FROM pragma_table_info(?)")
        .all(o.name);
      const pks = cols.filter((c) => c.pk > 0);
      const rowidAlias = pks.length === 1 && pks[0]!.type.toUpperCase() === "INTEGER";
      const withoutRowid = /WITHOUT\s+ROWID\s*$/i.test(o.sql ?? "");
      copy.push({ name: o.name, columns: cols.map((c) => c.name), hasImplicitRowid: !rowidAlias && !withoutRowid });
    }
    return { copy, skipped };
  }

  count(table: string): number {
    const row = this.db.query<{ n: bigint }, []>(`SELECT count(*) AS n FROM ${quote(table)}`).get();
    return Number(row?.n ?? 0);
  }

  /** Rows of `table` as arrays in `columns` order ("rowid" reads the implicit rowid), in rowid order. */
  *rows(table: string, columns: readonly string[]): Generator<SourceValue[]> {
    const list = columns.map((c) => (c === "rowid" ? "rowid" : quote(c))).join(", ");
    const stmt = this.db.query<SourceValue[], []>(`SELECT ${list} FROM ${quote(table)} ORDER BY rowid`);
    for (const row of stmt.values()) yield row as SourceValue[];
  }

  /** AUTOINCREMENT counters (`sqlite_sequence`): the highest id each such table ever handed out. */
  autoincrement(): Map<string, number> {
    const exists = this.db
      .query<{ n: bigint }, []>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_sequence'")
      .get();
    if (!exists?.n) return new Map();
    const rows = this.db.query<{ name: string; seq: bigint }, []>("SELECT name, seq FROM sqlite_sequence").all();
    return new Map(rows.map((r) => [r.name, Number(r.seq)]));
  }

  /** Up to `n` rows of `table` (id column `key`, blob `column`) spread over the id range: the sample verified byte for byte. */
  sample(table: string, key: string, column: string, n: number): { id: number; bytes: Uint8Array }[] {
    const total = this.count(table);
    if (total === 0) return [];
    const step = Math.max(1, Math.floor(total / n));
    const rows = this.db
      .query<{ id: bigint; v: Uint8Array }, []>(
        `SELECT ${quote(key)} AS id, ${quote(column)} AS v FROM ${quote(table)} ORDER BY ${quote(key)}`,
      )
      .all();
    return rows
      .filter((_, i) => i % step === 0 || i === rows.length - 1)
      .map((r) => ({ id: Number(r.id), bytes: r.v }));
  }

  /** Ids of `table` whose FTS5 index `fts` matches `match` (FTS5 syntax), lowest first, at most `limit`. */
  ftsIds(fts: string, match: string, limit: number): number[] {
    return this.db
      .query<{ id: bigint }, [string, number]>(
        `SELECT rowid AS id FROM ${quote(fts)} WHERE ${quote(fts)} MATCH ? ORDER BY rowid LIMIT ?`,
      )
      .all(match, limit)
      .map((r) => Number(r.id));
  }

  /** The text of `column` in the first rows of `table` that have one (where a sample query's words come from). */
  texts(table: string, column: string, limit: number): string[] {
    return this.db
      .query<{ t: string }, [number]>(
        `SELECT ${quote(column)} AS t FROM ${quote(table)} WHERE ${quote(column)} <> '' ORDER BY rowid LIMIT ?`,
      )
      .all(limit)
      .map((r) => r.t);
  }

  close(): void {
    if (this.inTx) this.db.exec("COMMIT");
    this.inTx = false;
    this.db.close();
  }
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
