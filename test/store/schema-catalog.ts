/**
 * The two schemas read from their catalogs into one comparable shape, and their differences
 * (test/store/schema-parity.test.ts). SQLite: sqlite_master and the pragma_* table functions;
 * PostgreSQL: information_schema and pg_catalog. Types are normalized (TEXT ↔ text, INTEGER ↔
 * integer/bigint, REAL ↔ double precision, BLOB ↔ bytea/vector), defaults lose their casts,
 * index predicates their parentheses and casts.
 */
import type { Database } from "bun:sqlite";
import type { Executor } from "../../src/store/executor.ts";

export interface Column {
  type: string;
  notNull: boolean;
  default: string | null;
}

export interface Index {
  table: string;
  unique: boolean;
  columns: string[];
  where: string | null;
  method: string;
}

export interface Schema {
  /** table → column → column. */
  tables: Map<string, Map<string, Column>>;
  /** FTS5 virtual tables (SQLite only). */
  virtualTables: Set<string>;
  /** "table(col,…)" of each primary key. */
  primaryKeys: Set<string>;
  /** "table(col,…)" of each UNIQUE constraint (not named indexes). */
  uniques: Set<string>;
  /** Named (user-created) indexes. */
  indexes: Map<string, Index>;
  /** "table(cols) → ref(cols) ON DELETE x". */
  foreignKeys: Set<string>;
}

const SQLITE_TYPES: Record<string, string> = { TEXT: "text", INTEGER: "int", REAL: "float", BLOB: "blob" };
const PG_TYPES: Record<string, string> = {
  text: "text",
  integer: "int",
  bigint: "int",
  smallint: "int",
  "double precision": "float",
  real: "float",
  bytea: "blob",
  vector: "blob",
  tsvector: "tsvector",
};

export const normalizeDefault = (d: string | null): string | null =>
  d === null
    ? null
    : d
        .replace(/::[a-z ]+(\[\])?/gi, "")
        .replace(/^\((.*)\)$/, "$1")
        .trim();

export const normalizePredicate = (p: string | null): string | null =>
  p === null
    ? null
    : p
        .replace(/::[a-z ]+/gi, "")
        .replace(/[()]/g, "")
        .replace(/\s+/g, " ")
        .trim()
        .toLowerCase();

const key = (table: string, cols: string[]) => `${table}(${cols.join(",")})`;

export function readSqliteSchema(db: Database): Schema {
  const s = emptySchema();
  const all = <T>(sql: string, ...params: string[]) => db.query(sql).all(...params) as T[];
  const objects = all<{ name: string; sql: string }>(
    "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
  );
  for (const o of objects) if (/^CREATE VIRTUAL TABLE/i.test(o.sql)) s.virtualTables.add(o.name);
  // FTS5 keeps each virtual table's data in shadow tables named after it.
  const shadow = (name: string) =>
    [...s.virtualTables].some((v) => new RegExp(`^${v}_(data|idx|docsize|config|content)$`).test(name));
  for (const { name } of objects) {
    if (s.virtualTables.has(name) || shadow(name)) continue;
    const cols = new Map<string, Column>();
    const pk: string[] = [];
    for (const c of all<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>(
      'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid',
      name,
    )) {
      cols.set(c.name, {
        type: SQLITE_TYPES[c.type.toUpperCase()] ?? c.type.toLowerCase(),
        notNull: c.notnull === 1 || c.pk > 0,
        default: normalizeDefault(c.dflt_value),
      });
      if (c.pk > 0) pk[c.pk - 1] = c.name;
    }
    s.tables.set(name, cols);
    if (pk.length) s.primaryKeys.add(key(name, pk));
    for (const ix of all<{ name: string; unique: number; origin: string }>(
      'SELECT name, "unique", origin FROM pragma_index_list(?)',
      name,
    )) {
      const columns = all<{ name: string | null }>("SELECT name FROM pragma_index_info(?) ORDER BY seqno", ix.name).map(
        (c) => c.name ?? "(expression)",
      );
      if (ix.origin === "u") s.uniques.add(key(name, columns));
      if (ix.origin !== "c") continue;
      const sql = all<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", ix.name)[0]
        .sql;
      const where = /\bWHERE\b([\s\S]*)$/i.exec(sql)?.[1] ?? null;
      s.indexes.set(ix.name, {
        table: name,
        unique: ix.unique === 1,
        columns,
        where: normalizePredicate(where),
        method: "btree",
      });
    }
    const fks = new Map<number, { table: string; from: string[]; to: string[]; onDelete: string }>();
    for (const f of all<{ id: number; table: string; from: string; to: string; on_delete: string }>(
      'SELECT id, "table", "from", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq',
      name,
    )) {
      const fk = fks.get(f.id) ?? { table: f.table, from: [], to: [], onDelete: f.on_delete };
      fk.from.push(f.from);
      fk.to.push(f.to);
      fks.set(f.id, fk);
    }
    for (const fk of fks.values())
      s.foreignKeys.add(`${key(name, fk.from)} → ${key(fk.table, fk.to)} ON DELETE ${fk.onDelete}`);
  }
  return s;
}

const ON_DELETE: Record<string, string> = {
  a: "NO ACTION",
  r: "RESTRICT",
  c: "CASCADE",
  n: "SET NULL",
  d: "SET DEFAULT",
};

export async function readPgSchema(exec: Executor): Promise<Schema> {
  const s = emptySchema();
  const tables = await exec.all<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
  );
  for (const t of tables) s.tables.set(t.name, new Map());
  const columns = await exec.all<{
    tbl: string;
    name: string;
    data_type: string;
    udt_name: string;
    is_nullable: string;
    column_default: string | null;
  }>(
    `SELECT table_name AS tbl, column_name AS name, data_type, udt_name, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  for (const c of columns) {
    const pgType = c.data_type === "USER-DEFINED" ? c.udt_name : c.data_type;
    s.tables.get(c.tbl)?.set(c.name, {
      type: PG_TYPES[pgType] ?? pgType,
      notNull: c.is_nullable === "NO",
      default: normalizeDefault(c.column_default),
    });
  }
  const cols = (rel: string, keys: string) => `(SELECT string_agg(a.attname, ',' ORDER BY k.ord)
      FROM unnest(${keys}) WITH ORDINALITY AS k (attnum, ord)
      JOIN pg_attribute a ON a.attrelid = ${rel} AND a.attnum = k.attnum)`;
  const constraints = await exec.all<{
    kind: string;
    tbl: string;
    cols: string;
    ref: string | null;
    refcols: string | null;
    del: string;
  }>(
    `SELECT c.contype AS kind, t.relname AS tbl, ${cols("c.conrelid", "c.conkey")} AS cols,
            rt.relname AS ref, ${cols("c.confrelid", "c.confkey")} AS refcols, c.confdeltype AS del
       FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid LEFT JOIN pg_class rt ON rt.oid = c.confrelid
      WHERE t.relnamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f')`,
  );
  for (const c of constraints) {
    const k = key(c.tbl, c.cols.split(","));
    if (c.kind === "p") s.primaryKeys.add(k);
    else if (c.kind === "u") s.uniques.add(k);
    else s.foreignKeys.add(`${k} → ${key(c.ref ?? "?", (c.refcols ?? "").split(","))} ON DELETE ${ON_DELETE[c.del]}`);
  }
  const indexes = await exec.all<{
    name: string;
    tbl: string;
    uniq: boolean;
    pred: string | null;
    cols: string;
    method: string;
  }>(
    `SELECT i.relname AS name, t.relname AS tbl, ix.indisunique AS uniq, pg_get_expr(ix.indpred, ix.indrelid) AS pred,
            (SELECT string_agg(pg_get_indexdef(ix.indexrelid, k, true), ',' ORDER BY k)
               FROM generate_series(1, ix.indnkeyatts) AS k) AS cols,
            am.amname AS method
       FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_am am ON am.oid = i.relam
      WHERE t.relnamespace = current_schema()::regnamespace
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid AND c.contype IN ('p', 'u'))`,
  );
  for (const ix of indexes) {
    s.indexes.set(ix.name, {
      table: ix.tbl,
      unique: ix.uniq,
      columns: ix.cols.split(",").map((c) => c.replace(/"/g, "")), // pg quotes keywords: "timestamp"
      where: normalizePredicate(ix.pred),
      method: ix.method,
    });
  }
  return s;
}

function emptySchema(): Schema {
  return {
    tables: new Map(),
    virtualTables: new Set(),
    primaryKeys: new Set(),
    uniques: new Set(),
    indexes: new Map(),
    foreignKeys: new Set(),
  };
}

/** Deliberate differences, each with its reason; an entry that matches nothing is itself a problem. */
export interface KnownDifferences {
  /** SQLite virtual table → the PostgreSQL index that replaces it (a GIN index of that name). */
  ftsTables: Record<string, string>;
  /** "table.column" present on PostgreSQL only. */
  pgOnlyColumns: Record<string, string>;
  /** Named indexes present on PostgreSQL only. */
  pgOnlyIndexes: Record<string, string>;
  /** Named indexes whose columns differ. */
  changedIndexes: Record<string, string>;
}

/** Every difference between the schemas not explained by `known`, one readable line each. */
export function diffSchemas(sqlite: Schema, pg: Schema, known: KnownDifferences): string[] {
  const out: string[] = [];
  const used = new Map<Record<string, string>, Set<string>>();
  const use = (list: Record<string, string>, k: string) => {
    if (!(k in list)) return false;
    used.set(list, (used.get(list) ?? new Set()).add(k));
    return true;
  };
  for (const v of sqlite.virtualTables) {
    if (!use(known.ftsTables, v)) out.push(`SQLite virtual table ${v} has no PostgreSQL counterpart listed`);
    else if (pg.indexes.get(v)?.method !== "gin") out.push(`${v}: PostgreSQL has no GIN index ${v} in its place`);
  }
  for (const [table, cols] of sqlite.tables) {
    const other = pg.tables.get(table);
    if (!other) {
      out.push(`table ${table}: on SQLite only`);
      continue;
    }
    for (const [name, c] of cols) {
      const p = other.get(name);
      if (!p) out.push(`column ${table}.${name}: on SQLite only`);
      else if (JSON.stringify(c) !== JSON.stringify(p))
        out.push(`column ${table}.${name}: SQLite ${JSON.stringify(c)} ≠ PostgreSQL ${JSON.stringify(p)}`);
    }
    for (const name of other.keys()) {
      if (!cols.has(name) && !use(known.pgOnlyColumns, `${table}.${name}`))
        out.push(`column ${table}.${name}: on PostgreSQL only`);
    }
  }
  for (const table of pg.tables.keys()) if (!sqlite.tables.has(table)) out.push(`table ${table}: on PostgreSQL only`);
  const sets: [string, Set<string>, Set<string>][] = [
    ["primary key", sqlite.primaryKeys, pg.primaryKeys],
    ["unique constraint", sqlite.uniques, pg.uniques],
    ["foreign key", sqlite.foreignKeys, pg.foreignKeys],
  ];
  for (const [what, a, b] of sets) {
    for (const x of a) if (!b.has(x)) out.push(`${what} ${x}: on SQLite only`);
    for (const x of b) if (!a.has(x)) out.push(`${what} ${x}: on PostgreSQL only`);
  }
  for (const [name, ix] of sqlite.indexes) {
    const p = pg.indexes.get(name);
    if (!p) {
      out.push(`index ${name}: on SQLite only`);
      continue;
    }
    const same = ix.table === p.table && ix.unique === p.unique && ix.where === p.where && ix.method === p.method;
    const sameColumns = ix.columns.join(",") === p.columns.join(",");
    if (!same || (!sameColumns && !use(known.changedIndexes, name)))
      out.push(`index ${name}: SQLite ${JSON.stringify(ix)} ≠ PostgreSQL ${JSON.stringify(p)}`);
  }
  for (const name of pg.indexes.keys()) {
    if (!sqlite.indexes.has(name) && !use(known.pgOnlyIndexes, name) && !(name in known.ftsTables))
      out.push(`index ${name}: on PostgreSQL only`);
  }
  for (const [label, list] of Object.entries(known)) {
    for (const k of Object.keys(list)) {
      if (!used.get(list)?.has(k)) out.push(`known difference ${label}.${k} matches nothing any more: remove it`);
    }
  }
  return out;
}
