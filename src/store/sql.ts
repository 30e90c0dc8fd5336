import { ftsToTsquery } from "./fts-tsquery.ts";
import { type DialectSql, dialect, type Executor } from "./executor.ts";
import { pgDbNowMs } from "./pg/clock.ts";

/** Rows per `IN (…)` list: SQLite allows 32 766 bound values; smaller lists keep each statement cheap to prepare. */
export const IN_CHUNK = 500;

/**
 * Runs `query` over `items` in lists of at most IN_CHUNK, handing it each part and the matching
 * `?,?,…` placeholders, and concatenates what it returns. The one place the stores split a
 * long id list for an `IN (…)` clause.
 */
export async function inChunks<T, R>(
  items: readonly T[],
  query: (part: T[], marks: string) => Promise<R[]>,
): Promise<R[]> {
  const out: R[] = [];
  // One statement per list, one after another: a search's lists are short (one list is the usual
  // case), and the statements of one flow go through one connection anyway.
  for (let i = 0; i < items.length; i += IN_CHUNK) {
    const part = items.slice(i, i + IN_CHUNK);
    // Lists padded (the last item repeated: `IN` ignores duplicates) to one of a few lengths, so
    // the statement cache (db.query) answers instead of SQLite compiling a statement per length:
    // a search asks such lists of every length (issue 27's per-request profile).
    const size = Math.min(IN_CHUNK, 2 ** Math.ceil(Math.log2(part.length)));
    while (part.length < size) part.push(part[part.length - 1]);
    for (const r of await query(part, MARKS[size] ?? part.map(() => "?").join(","))) out.push(r);
  }
  return out;
}

const MARKS: Record<number, string> = {};
for (let n = 1; n <= IN_CHUNK; n *= 2) MARKS[n] = Array.from({ length: n }, () => "?").join(",");
MARKS[IN_CHUNK] = Array.from({ length: IN_CHUNK }, () => "?").join(",");

/** Where an FTS5 table's text is indexed on PostgreSQL: a tsvector column of its content table (pg migration 001). */
export const FTS_ON_PG = {
  transcript_fts: { table: "transcript_segments", column: "tsv" },
  ocr_fts: { table: "ocr_lines", column: "tsv" },
  shot_text_fts: { table: "shots", column: "text_tsv" },
} as const;

/** One unit of a full-text query (a word, phrase or prefix as FTS5 text) and its weight (IDF). */
export interface WeightedUnit {
  match: string;
  weight: number;
}

/**
 * FTS5's `bm25()` on PostgreSQL, as the stores order by it (lower is better). PostgreSQL's
 * `ts_rank` knows no IDF: an OR query with a common word would fill the LEXICAL_K hits with rows
 * holding only that word and leave out the rows with the rare one. So the rank is the query's
 * weight a row holds — Σ IDF of the units it matches, what search calibrates a hit's score from
 * (search/lexical-mode.ts) — with `ts_rank` (normalization 1: long rows discounted, as BM25 does;
 * below 1) breaking ties. Negated, as bm25 is.
 *
 * Each unit's tsquery is a function scan of the FROM clause (`from`, after the statement's own
 * `q`), made once per statement: written inline as `to_tsquery(?)`, a prepared statement's generic
 * plan parses and stems it again for every matching row (18 ms against 1.3 ms for 700 rows, issue
 * 27's per-request cost). `mask` sets bit i where the row matches units[i], so the caller needs no
 * statement per unit to learn which hits hold which unit (what `ftsMatching` answers on SQLite);
 * null without units. Parameters in order: `args` (the SELECT list's weights), then the `q` text,
 * then `fromArgs`.
 */
export function pgRank(
  tsv: string,
  units: WeightedUnit[] = [],
): { sql: string; args: number[]; from: string; fromArgs: string[]; mask: string | null } {
  const parts: string[] = [];
  const args: number[] = [];
  const from: string[] = [];
  const fromArgs: string[] = [];
  const bits: string[] = [];
  units.forEach((u, i) => {
    const q = ftsToTsquery(u.match);
    if (!q) return; // matches nothing: its bit stays 0
    from.push(`CROSS JOIN to_tsquery('vs_english', ?) AS u${i} (q)`);
    fromArgs.push(q);
    bits.push(`CASE WHEN ${tsv} @@ u${i}.q THEN ${2 ** i} ELSE 0 END`);
    if (u.weight > 0) {
      parts.push(`CASE WHEN ${tsv} @@ u${i}.q THEN ?::float8 ELSE 0 END`);
      args.push(u.weight);
    }
  });
  return {
    sql: `-(${[...parts, `ts_rank(${tsv}, q.q, 1)`].join(" + ")})`,
    args,
    from: from.join(" "),
    fromArgs,
    mask: units.length ? `(${bits.length ? bits.join(" | ") : "0"})` : null,
  };
}

/** How many of an account's rows match `match` on PostgreSQL (FTS5's docFreq query). */
export async function pgDocFreq(
  db: Executor,
  ftsTable: "transcript_fts" | "ocr_fts",
  accountId: string,
  match: string,
): Promise<number> {
  const q = ftsToTsquery(match);
  if (!q) return 0;
  const { table, column } = FTS_ON_PG[ftsTable];
  return (await db.get<{ n: number }>(
    `SELECT count(*) AS n FROM ${table} WHERE ${column} @@ to_tsquery('vs_english', ?) AND account_id = ?`,
    q,
    accountId,
  ))!.n;
}

/**
 * Which of `ids` (rowids of an FTS5 table) match `match`: the expression's posting list inside the
 * ids' rowid range, intersected here — FTS5 answers `rowid IN (…)` by scanning the whole list once
 * per id. `ftsTable` is a fixed table name from the calling store, never input.
 */
export async function ftsMatching(
  db: Executor,
  ftsTable: "transcript_fts" | "ocr_fts",
  match: string,
  ids: number[],
): Promise<Set<number>> {
  const out = new Set<number>();
  if (!ids.length) return out;
  const wanted = new Set(ids);
  let lo = ids[0];
  let hi = ids[0];
  for (const id of ids) {
    if (id < lo) lo = id;
    if (id > hi) hi = id;
  }
  let rows: { id: number }[];
  if (db.backend === "postgres") {
    const q = ftsToTsquery(match);
    if (!q) return out;
    const { table, column } = FTS_ON_PG[ftsTable];
    rows = await db.all<{ id: number }>(
      `SELECT id FROM ${table} WHERE ${column} @@ to_tsquery('vs_english', ?) AND id BETWEEN ? AND ?`,
      q,
      lo,
      hi,
    );
  } else {
    rows = await db.allAside<{ id: number }>(
      `SELECT rowid AS id FROM ${ftsTable} WHERE ${ftsTable} MATCH ? AND rowid BETWEEN ? AND ?`,
      match,
      lo,
      hi,
    );
  }
  for (const r of rows) if (wanted.has(r.id)) out.add(r.id);
  return out;
}

/**
 * The database's clock, in epoch ms, as an SQL expression whose parameter (`param`, e.g. "?1")
 * is a skew added to it: 0 in production (`DbClock.skewMs`; tests shift it to fast-forward lease
 * expiry). Leases, due times and claims are compared against this, never against a process's
 * clock, so processes on machines whose clocks drift apart still agree on who holds what. SQLite
 * keeps 'now' fixed within one statement. PostgreSQL: `pgDbNowMs` (statement_timestamp()); a store
 * writes a statement that reads the clock through `withDbNow`, which gives both texts.
 */
export const dbNowMs = (param: string): string => `(CAST(unixepoch('subsec') * 1000 AS INTEGER) + ${param})`;

/**
 * A statement that reads the database's clock, written once: `text(now)` is called with each
 * backend's clock expression (skew placeholder `?1`) and the backend's name (a claim's pick adds
 * `FOR UPDATE SKIP LOCKED` on PostgreSQL), giving the dialect pair a store runs.
 */
export const withDbNow = (text: (now: string, backend: "sqlite" | "postgres") => string): DialectSql =>
  dialect({ sqlite: text(dbNowMs("?1"), "sqlite"), pg: text(pgDbNowMs("?1"), "postgres") });

/** The skew `dbNowMs` adds: 0 except where a test runs the database's clock ahead. */
export interface DbClock {
  skewMs(): number;
}

export const DATABASE_CLOCK: DbClock = { skewMs: () => 0 };

const LOCK_ACCOUNT = dialect({
  sqlite: "SELECT 1 AS one FROM accounts WHERE id = ?",
  pg: "SELECT 1 AS one FROM accounts WHERE id = ? FOR UPDATE",
});

/**
 * Locks an account's row until the unit of work this runs in ends; false when there is no such
 * account. Every check-then-write on an account's data (a plan limit counted before an insert, a
 * search threshold read before it moves) takes it first, so two writers of one account run one
 * after the other. On SQLite the unit of work already holds the database's write lock (BEGIN
 * IMMEDIATE): the read is all it takes there. Outside a unit of work it locks nothing.
 */
export async function lockAccount(db: Executor, accountId: string): Promise<boolean> {
  return (await db.get<{ one: number }>(LOCK_ACCOUNT, accountId)) !== null;
}
