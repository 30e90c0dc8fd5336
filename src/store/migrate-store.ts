/**
 * `vsearch migrate-store`: an embedded install's rows copied into PostgreSQL (issue 25, SPEC §13).
 *
 * 1. The target is opened as `serve` opens it (openPgStore: version checks, pgvector, migrations).
 * 2. The source (`<data-dir>/vsearch.db`) is read in one SQLite read transaction: one snapshot.
 * 3. ONE PostgreSQL transaction: every copied table locked, refused if any holds a row (naming
 *    them), user triggers off, tables copied parents first (foreign-key order) with COPY, the
 *    identity sequences moved past the copied ids, triggers on again, then verified — row counts
 *    per table equal, a sample of vectors byte for byte, a sample full-text query's hits — and
 *    only then committed. A failure anywhere (an error, a killed process, a lost connection, a
 *    failed check) rolls all of it back, so the target is as it was (empty) and the command can
 *    simply be run again.
 *
 * Copied as they are: ids (frames, shots, segments… keep theirs), text-keyed tables' SQLite rowid
 * into PostgreSQL's `rowid` column (same order), vectors (float32 little-endian blobs → pgvector's
 * binary form, the same float32s). Not copied: FTS5 and sqlite-vec
 * tables (store/sqlite/embedded-source.ts says why), generated `tsvector` columns (computed), and
 * `vector_change_seq`: the target keeps its own change-history id (a snapshot of the embedded
 * index is then not mistaken for this database's and is rebuilt once), its counter raised past the
 * copied change log. The master secret is a file, not a row: `carrySecret` below.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ftsToTsquery } from "./fts-tsquery.ts";
import { foreignKeyOrder, inCopyTransaction, readTargetSchema, type TargetColumn } from "./pg/copy-target.ts";
import { describeUrl, openPgStore } from "./pg/open.ts";
import { EmbeddedSource } from "./sqlite/embedded-source.ts";

export class MigrateStoreError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = "MigrateStoreError";
  }
}

export interface MigrateProgress {
  /** The table being copied, its rows copied so far and its rows. */
  table: string;
  done: number;
  total: number;
  /** Rows copied so far of all tables, and the rows of all tables. */
  allDone: number;
  allTotal: number;
}

export interface MigrateStoreOptions {
  /** The embedded install's data dir (its `vsearch.db` is read). */
  fromDir: string;
  /** postgres://… */
  to: string;
  onProgress?: (p: MigrateProgress) => void;
  /** Rows per COPY chunk (default 20 000; also bounded by CHUNK_BYTES). */
  chunkRows?: number;
}

export interface MigrateStoreReport {
  target: string;
  server: { version: string; pgvector: string; schema_version: number };
  tables: { table: string; rows: number }[];
  rows: number;
  skipped: { table: string; reason: string }[];
  sequences: { table: string; column: string; next: number }[];
  verified: {
    counts: boolean;
    vectors_compared: number;
    searches: { table: string; query: string; sqlite_hits: number; postgres_hits: number; same: boolean }[];
  };
  notes: string[];
  seconds: number;
}

/** Text handed to one COPY at most (bounded memory: a chunk is built before it is sent). */
const CHUNK_BYTES = 16 * 1024 * 1024;
/** Tables the target keeps its own row of (migration 002's counter); see the header. */
const TARGET_OWNED = new Set(["vector_change_seq"]);
const VECTOR_TABLES = [
  { table: "frame_vectors", key: "frame_id" },
  { table: "shot_vectors", key: "shot_id" },
];
const FTS_SAMPLES = [
  { fts: "transcript_fts", table: "transcript_segments", text: "text", tsv: "tsv" },
  { fts: "ocr_fts", table: "ocr_lines", text: "search_text", tsv: "tsv" },
];

export async function migrateStore(o: MigrateStoreOptions): Promise<MigrateStoreReport> {
  const started = performance.now();
  const file = join(resolve(o.fromDir), "vsearch.db");
  if (!existsSync(file)) {
    throw new MigrateStoreError(`no embedded install in ${resolve(o.fromDir)}: ${file} does not exist`);
  }
  const target = await openPgStore(o.to, { max: 1, applicationName: "vsearch migrate-store" });
  let source: EmbeddedSource | undefined;
  try {
    source = new EmbeddedSource(file);
    const { version, expected } = source.schemaVersion();
    if (version !== expected) {
      throw new MigrateStoreError(
        `${file} is at schema version ${version}, this vsearch expects ${expected}: run the same vsearch version that wrote it`,
      );
    }
    const schema = await readTargetSchema(target.pool);
    const { copy, skipped } = source.tables();
    const plans = copy.map((t) => plan(t.name, t.columns, t.hasImplicitRowid, schema.tables.get(t.name)));
    const names = plans.map((p) => p.table);
    const order = foreignKeyOrder(names, schema.references);
    const byName = new Map(plans.map((p) => [p.table, p]));
    const totals = new Map(names.map((t) => [t, source!.count(t)]));
    const src = source;
    const report = await inCopyTransaction(target.pool, async (tx) => {
      await tx.lock(names, o.to);
      const occupied = (await tx.occupied(names.filter((t) => !TARGET_OWNED.has(t)))).filter((x) => x.rows > 0);
      if (occupied.length) {
        throw new MigrateStoreError(
          `the target database ${describeUrl(o.to)} is not empty: ${occupied.map((x) => `${x.table} has ${x.rows} row${x.rows === 1 ? "" : "s"}`).join(", ")}. ` +
            "migrate-store copies into an empty vsearch database only (nothing was changed): use a new database, or drop and recreate this one",
        );
      }
      const triggered = await tx.userTriggers(names, false);
      const tables: { table: string; rows: number }[] = [];
      const allTotal = order.filter((t) => !TARGET_OWNED.has(t)).reduce((s, t) => s + (totals.get(t) ?? 0), 0);
      let allDone = 0;
      for (const name of order) {
        if (TARGET_OWNED.has(name)) continue;
        const p = byName.get(name)!;
        const total = totals.get(name) ?? 0;
        let done = 0;
        o.onProgress?.({ table: name, done, total, allDone, allTotal });
        const limits = { rows: o.chunkRows ?? 20_000, bytes: CHUNK_BYTES };
        await tx.copy(name, p.target, src.rows(name, p.source), limits, (n) => {
          done += n;
          allDone += n;
          o.onProgress?.({ table: name, done, total, allDone, allTotal });
        });
        tables.push({ table: name, rows: done });
      }
      await tx.raiseVectorChangeSeq(vectorChangeSeq(src));
      const sequences = await tx.moveSequences(names, src.autoincrement());
      await tx.userTriggers(triggered, true);

      // Verify before commit: a mismatch rolls everything back.
      const mismatched: string[] = [];
      for (const name of names) {
        if (TARGET_OWNED.has(name)) continue;
        const have = await tx.count(name);
        if (have !== totals.get(name)) mismatched.push(`${name}: ${totals.get(name)} in SQLite, ${have} in PostgreSQL`);
      }
      if (mismatched.length) throw new MigrateStoreError(`row counts differ after the copy: ${mismatched.join("; ")}`);
      let vectorsCompared = 0;
      for (const v of VECTOR_TABLES) {
        if (!byName.has(v.table)) continue;
        const sample = src.sample(v.table, v.key, "embedding", 200);
        const copied = await tx.vectors(
          v.table,
          v.key,
          "embedding",
          sample.map((s) => s.id),
        );
        for (const s of sample) {
          if (!sameBytes(copied.get(s.id), s.bytes)) {
            throw new MigrateStoreError(`${v.table} ${v.key} ${s.id}: the copied vector's bytes differ from SQLite's`);
          }
        }
        vectorsCompared += sample.length;
      }
      const notes: string[] = [];
      const searches: MigrateStoreReport["verified"]["searches"] = [];
      for (const f of FTS_SAMPLES) {
        const word = sampleWord(src.texts(f.table, f.text, 50));
        if (!word) continue;
        const match = `"${word}"`;
        const sqliteIds = src.ftsIds(f.fts, match, 100);
        const pgIds = await tx.tsIds(f.table, f.tsv, ftsToTsquery(match) ?? "", 100);
        const same = sqliteIds.length === pgIds.length && sqliteIds.every((id, i) => pgIds[i] === id);
        searches.push({
          table: f.table,
          query: word,
          sqlite_hits: sqliteIds.length,
          postgres_hits: pgIds.length,
          same,
        });
        if (sqliteIds.length && !pgIds.length) {
          throw new MigrateStoreError(
            `full-text check: "${word}" finds ${sqliteIds.length} rows of ${f.table} in SQLite and none in PostgreSQL`,
          );
        }
        if (!same) {
          notes.push(
            `"${word}" finds ${sqliteIds.length} ${f.table} rows in SQLite, ${pgIds.length} in PostgreSQL (FTS5's Porter stemmer and PostgreSQL's Snowball stemmer differ on some words)`,
          );
        }
      }
      return { tables, sequences, vectorsCompared, searches, notes };
    });
    const rows = report.tables.reduce((s, t) => s + t.rows, 0);
    return {
      target: describeUrl(o.to),
      server: {
        version: target.server.version,
        pgvector: target.server.pgvector,
        schema_version: target.server.schemaVersion,
      },
      tables: report.tables,
      rows,
      skipped: [
        ...skipped.map((s) => ({ table: s.name, reason: s.reason })),
        {
          table: "vector_change_seq",
          reason: "the target keeps its own change-history id; its counter is raised past the copied change log",
        },
      ],
      sequences: report.sequences,
      verified: { counts: true, vectors_compared: report.vectorsCompared, searches: report.searches },
      notes: report.notes,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    source?.close();
    await target.close();
  }
}

interface TablePlan {
  table: string;
  /** Columns read from SQLite ("rowid": the implicit rowid). */
  source: string[];
  /** The PostgreSQL columns they go to, same order. */
  target: TargetColumn[];
}

/** Which SQLite column goes to which PostgreSQL one; anything that would be lost is an error. */
function plan(
  table: string,
  sqliteCols: string[],
  implicitRowid: boolean,
  pgCols: TargetColumn[] | undefined,
): TablePlan {
  if (!pgCols) {
    throw new MigrateStoreError(`table ${table} of the embedded store has no PostgreSQL counterpart (schema drift)`);
  }
  const byName = new Map(pgCols.map((c) => [c.name, c]));
  const source: string[] = [];
  const target: TargetColumn[] = [];
  for (const c of sqliteCols) {
    const pg = byName.get(c);
    if (!pg || pg.generated) {
      throw new MigrateStoreError(`column ${table}.${c} of the embedded store has no PostgreSQL column to go to`);
    }
    source.push(c);
    target.push(pg);
  }
  const rowid = byName.get("rowid");
  if (rowid && !sqliteCols.includes("rowid") && !rowid.generated) {
    if (!implicitRowid) throw new MigrateStoreError(`${table}.rowid on PostgreSQL has no SQLite rowid to copy`);
    source.push("rowid");
    target.push(rowid);
  }
  return { table, source, target };
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (!a || a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The SQLite change counter (the copied change log's highest sequence number at least). */
function vectorChangeSeq(src: EmbeddedSource): number {
  let seq = 0;
  for (const [v] of src.rows("vector_change_seq", ["seq"])) seq = Math.max(seq, Number(v ?? 0));
  return seq;
}

/** A plain word (letters only, 4+) from the sample texts, for a query both stemmers treat alike; null if none. */
function sampleWord(texts: string[]): string | null {
  for (const t of texts) {
    const words = t.toLowerCase().match(/\b[a-z]{4,}\b/g) ?? [];
    const w = words.sort((a, b) => b.length - a.length)[0];
    if (w) return w;
  }
  return null;
}

export interface SecretOutcome {
  /** What the operator must keep or was given. */
  action: "kept" | "copied" | "same" | "none";
  file: string;
  message: string;
}

/**
 * The master secret (`secret.key`: signs presigned URLs, seals webhook secrets) is a file of the
 * data dir, not a row. The PostgreSQL install reads it as its cluster secret, `target`
 * (`<media_root>/secret.key`, or `secret_file`: signing/cluster-secret.ts), on every node. Migrated
 * in place without a media root it is already there; otherwise it is copied there (0600). A
 * different secret already there is refused: links and sealed webhook secrets would stop working.
 */
export function carrySecret(fromDir: string, target: string): SecretOutcome {
  const from = join(resolve(fromDir), "secret.key");
  const to = resolve(target);
  if (!existsSync(from)) {
    return { action: "none", file: from, message: `no ${from}: the source install never signed anything` };
  }
  if (resolve(from) === resolve(to)) {
    return {
      action: "kept",
      file: to,
      message: `keep ${to}: it signs presigned URLs and seals webhook secrets, and the PostgreSQL install needs the same one (every node that serves it)`,
    };
  }
  const secret = readFileSync(from, "utf8").trim();
  if (existsSync(to)) {
    if (readFileSync(to, "utf8").trim() === secret) {
      return { action: "same", file: to, message: `${to} already holds the source's secret` };
    }
    throw new MigrateStoreError(
      `${to} holds another secret than ${from}: with it, presigned URLs and the migrated webhook secrets would not work. Move it away (or run with --data-dir ${resolve(fromDir)}) and run again`,
    );
  }
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  chmodSync(to, 0o600);
  return {
    action: "copied",
    file: to,
    message: `copied ${from} to ${to}: keep it (every node that serves the PostgreSQL install needs the same one)`,
  };
}
