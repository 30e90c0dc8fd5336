/**
 * PostgreSQL as the target of `vsearch migrate-store` (store/migrate-store.ts): the catalog it
 * copies into (columns, types, foreign-key order, identity sequences) and one transaction that
 * takes the rows with COPY.
 *
 * COPY (binary format) goes into a per-table staging table — `text` columns, and `vector` for
 * vectors — and from there into the real table with `INSERT … SELECT` and casts. Why not COPY
 * straight into the table: postgres.js ends a COPY stream when it sends CopyDone, and an error the
 * server reports after that (a foreign key, CHECK or unique violation is checked at the end of the
 * statement) is dropped: the stream never finishes and the caller waits for ever (a statement
 * queued behind each COPY catches such a failure anyway: copyBinary). Into the staging table a COPY
 * of values checked here cannot fail; every constraint and cast is checked by the
 * INSERT, whose error arrives as any query's, naming the table. Rows go in chunks (bounded memory;
 * progress per chunk). Vectors travel as vector_recv reads them (float32 big-endian): no float is
 * printed or parsed, and the bytes arrive unchanged.
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import type postgres from "postgres";
import { StoreError, toStoreError } from "../errors.ts";
import { describeUrl } from "./open.ts";

export interface TargetColumn {
  name: string;
  /** `format_type`: "bigint", "text", "vector", "double precision"… */
  type: string;
  /** A stored generated column (tsvector): computed, never copied. */
  generated: boolean;
  /** An identity column: its sequence is moved past the copied values. */
  identity: boolean;
}

export interface TargetSchema {
  /** table → columns in order. */
  tables: Map<string, TargetColumn[]>;
  /** table → the tables its foreign keys reference (itself excluded). */
  references: Map<string, Set<string>>;
}

/** A value as the source gives it (SQLite: integers as bigint, vectors as float32 little-endian bytes). */
export type CopyValue = string | number | bigint | null | Uint8Array;

/** COPY's binary format: signature, flags, header extension length; the trailer is a field count of -1. */
const COPY_HEADER = Buffer.concat([Buffer.from("PGCOPY\n\xff\r\n\0", "latin1"), Buffer.alloc(8)]);
const COPY_TRAILER = Buffer.from([0xff, 0xff]);
/** pgvector's limit on dimensions. */
const MAX_DIM = 16_000;

/** How long a COPY chunk may take to be acknowledged (a bound, not a speed target). */
const COPY_ACK_MS = 600_000;
/** Seconds to wait for the tables' locks. */
const LOCK_WAIT_S = 10;
/** Bytes handed to the socket per write. */
const WRITE_BYTES = 256 * 1024;

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function readTargetSchema(pool: postgres.Sql): Promise<TargetSchema> {
  const cols = await pool.unsafe<{ tbl: string; name: string; type: string; gen: string; idn: string }[]>(
    `SELECT c.relname AS tbl, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
            a.attgenerated AS gen, a.attidentity AS idn
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
        AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
  );
  const tables = new Map<string, TargetColumn[]>();
  for (const c of cols) {
    const list = tables.get(c.tbl) ?? [];
    list.push({ name: c.name, type: c.type, generated: c.gen !== "", identity: c.idn !== "" });
    tables.set(c.tbl, list);
  }
  const fks = await pool.unsafe<{ child: string; parent: string }[]>(
    `SELECT t.relname AS child, r.relname AS parent
       FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
      WHERE k.contype = 'f' AND t.relnamespace = current_schema()::regnamespace`,
  );
  const references = new Map<string, Set<string>>();
  for (const f of fks) {
    if (f.child === f.parent) continue;
    references.set(f.child, (references.get(f.child) ?? new Set()).add(f.parent));
  }
  return { tables, references };
}

/** `tables` so that every table comes after the tables it references (a foreign-key cycle is an error). */
export function foreignKeyOrder(tables: readonly string[], references: Map<string, Set<string>>): string[] {
  const out: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const wanted = new Set(tables);
  const visit = (t: string, path: string[]) => {
    if (state.get(t) === "done") return;
    if (state.get(t) === "visiting") {
      throw new StoreError("misuse", `foreign keys form a cycle: ${[...path, t].join(" → ")}`);
    }
    state.set(t, "visiting");
    for (const p of [...(references.get(t) ?? [])].sort()) if (wanted.has(p)) visit(p, [...path, t]);
    state.set(t, "done");
    out.push(t);
  };
  for (const t of [...tables].sort()) visit(t, []);
  return out;
}

/** The statements of the copy's one transaction. */
export class CopyTransaction {
  constructor(private readonly tx: postgres.TransactionSql) {}

  private async q<R extends Record<string, unknown>>(text: string, params: unknown[] = []): Promise<R[]> {
    try {
      return (await this.tx.unsafe(text, params as never[])) as unknown as R[];
    } catch (err) {
      throw toStoreError(err) ?? err;
    }
  }

  /**
   * Blocks every other session from these tables until the end (a server started on the target
   * meanwhile waits). A session already using them (a `serve` on the target) makes it fail after
   * LOCK_WAIT instead of waiting for ever.
   */
  async lock(tables: readonly string[], url: string): Promise<void> {
    await this.q(`SET LOCAL lock_timeout = '${LOCK_WAIT_S}s'`);
    try {
      await this.q(`LOCK TABLE ${tables.map(ident).join(", ")} IN ACCESS EXCLUSIVE MODE`);
    } catch (err) {
      if ((err as StoreError).code !== "55P03") throw err;
      throw new StoreError(
        "busy",
        `another session uses the tables of ${describeUrl(url)} (a vsearch serve or worker on it?): stop it and run again`,
        { cause: err, code: "55P03" },
      );
    }
    await this.q("SET LOCAL lock_timeout = 0");
  }

  /** The tables that already hold rows, with their counts. */
  async occupied(tables: readonly string[]): Promise<{ table: string; rows: number }[]> {
    const out: { table: string; rows: number }[] = [];
    for (const t of tables) {
      const [r] = await this.q<{ n: number }>(`SELECT count(*) AS n FROM ${ident(t)}`);
      if (Number(r?.n) > 0) out.push({ table: t, rows: Number(r?.n) });
    }
    return out;
  }

  /**
   * Turns the tables' own triggers off (ON) or on again. The vector tables' triggers log the
   * videos each insert statement wrote in the change log and bump one counter row (pg migration
   * 010; before it, once per row: a million versions of that row in one transaction). The copied
   * rows need no new log entries: the change log is copied as it is instead.
   * Foreign keys are not triggers of this kind and stay checked.
   */
  async userTriggers(tables: readonly string[], on: boolean): Promise<string[]> {
    const rows = await this.q<{ tbl: string }>(
      `SELECT DISTINCT c.relname AS tbl FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
        WHERE NOT g.tgisinternal AND c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1)`,
      [tables as string[]],
    );
    for (const r of rows) await this.q(`ALTER TABLE ${ident(r.tbl)} ${on ? "ENABLE" : "DISABLE"} TRIGGER USER`);
    return rows.map((r) => r.tbl);
  }

  /**
   * Copies `rows` (values in `columns` order, as SQLite gave them; a `vector` column's value is
   * float32 little-endian bytes) into `table`, in chunks of at most `limits.rows` rows and about
   * `limits.bytes`; calls `onRows` after each chunk with the rows it held. A value PostgreSQL
   * could not take (a NUL in a text, a non-finite float in a vector) fails before its chunk is sent.
   */
  async copy(
    table: string,
    columns: readonly TargetColumn[],
    rows: Iterable<CopyValue[]>,
    limits: { rows: number; bytes: number },
    onRows: (rows: number) => void,
  ): Promise<void> {
    const stage = ident(`vs_migrate_${table}`);
    // Vectors are staged as vectors (binary, as vector_recv reads them: no float is printed or
    // parsed; pgvector stores them uncompressed), everything else as text, cast by the INSERT.
    const staged = (c: TargetColumn) => (c.type === "vector" ? "vector" : "text");
    await this.q(
      `CREATE TEMP TABLE ${stage} (${columns.map((c, i) => `c${i} ${staged(c)}`).join(", ")}) ON COMMIT DROP`,
    );
    const casts = columns.map((c, i) => (staged(c) === c.type ? `c${i}` : `c${i}::${c.type}`)).join(", ");
    const insert = `INSERT INTO ${ident(table)} (${columns.map((c) => ident(c.name)).join(", ")}) OVERRIDING SYSTEM VALUE SELECT ${casts} FROM ${stage}`;
    const flush = async (tuples: Buffer[]) => {
      await this.copyBinary(stage, table, tuples);
      try {
        await this.tx.unsafe(insert);
      } catch (err) {
        const e = toStoreError(err);
        throw new StoreError(e?.kind ?? "misuse", `copying table ${table}: ${e?.message ?? String(err)}`, {
          cause: err,
          code: e?.code,
          constraint: e?.constraint,
        });
      }
      await this.q(`TRUNCATE ${stage}`);
      onRows(tuples.length);
    };
    let tuples: Buffer[] = [];
    let bytes = 0;
    for (const row of rows) {
      const tuple = encodeTuple(row, columns, table);
      tuples.push(tuple);
      bytes += tuple.byteLength;
      if (tuples.length >= limits.rows || bytes >= limits.bytes) {
        await flush(tuples);
        tuples = [];
        bytes = 0;
      }
    }
    if (tuples.length) await flush(tuples);
    await this.q(`DROP TABLE ${stage}`);
  }

  /** One `COPY … FROM STDIN (FORMAT binary)` of these tuples. */
  private async copyBinary(stage: string, table: string, tuples: readonly Buffer[]): Promise<void> {
    const stream = (await this.tx.unsafe(`COPY ${stage} FROM STDIN (FORMAT binary)`).writable()) as Writable;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const failed = new Promise<never>((_, reject) => {
      stream.once("error", (e) => reject(toStoreError(e) ?? e));
      timer = setTimeout(
        () => reject(new StoreError("timeout", `PostgreSQL did not acknowledge a COPY within ${COPY_ACK_MS / 1000} s`)),
        COPY_ACK_MS,
      );
    });
    failed.catch(() => {}); // observed below; a rejection after the race is settled is not unhandled
    const send = async () => {
      let piece: Buffer[] = [COPY_HEADER];
      let size = COPY_HEADER.byteLength;
      for (const t of [...tuples, COPY_TRAILER]) {
        piece.push(t);
        size += t.byteLength;
        if (size >= WRITE_BYTES) {
          if (!stream.write(Buffer.concat(piece, size))) await Promise.race([once(stream, "drain"), failed]);
          piece = [];
          size = 0;
        }
      }
      if (size) stream.write(Buffer.concat(piece, size));
      // postgres.js drops an error the server sends after CopyDone ("finish" then never comes). A
      // statement queued behind the COPY on the same connection runs once it ended: it fails
      // (transaction aborted) exactly when the COPY did, so the failure is seen at once. It may be
      // queued only once CopyDone is sent (the stream's final hook), not while the COPY takes data.
      const hooked = stream as Writable & { _final?: (cb: (e?: Error | null) => void) => void };
      const original = hooked._final;
      const copyDone = new Promise<void>((resolve) => {
        if (typeof original !== "function") return resolve();
        hooked._final = function (this: Writable, cb) {
          original.call(this, cb);
          resolve();
        };
      });
      stream.end();
      await Promise.race([copyDone, failed]);
      const behind = this.tx.unsafe("SELECT 1");
      try {
        await Promise.all([once(stream, "finish"), behind]);
      } catch (err) {
        throw new StoreError(
          "misuse",
          `copying table ${table}: PostgreSQL refused a COPY of its rows (a value it cannot store; the server log says which): ${toStoreError(err)?.message ?? String(err)}`,
          { cause: err },
        );
      }
    };
    try {
      await Promise.race([send(), failed]);
    } finally {
      clearTimeout(timer);
    }
  }

  async count(table: string): Promise<number> {
    const [r] = await this.q<{ n: number }>(`SELECT count(*) AS n FROM ${ident(table)}`);
    return Number(r?.n ?? 0);
  }

  /** Moves every identity sequence of `tables` past the highest value its column holds and past `floor[table]`. */
  async moveSequences(
    tables: readonly string[],
    floor: Map<string, number>,
  ): Promise<{ table: string; column: string; next: number }[]> {
    const ids = await this.q<{ tbl: string; col: string; seq: string }>(
      `SELECT c.relname AS tbl, a.attname AS col, pg_get_serial_sequence(format('%I', c.relname), a.attname) AS seq
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND a.attidentity <> '' AND NOT a.attisdropped
          AND c.relname = ANY($1) ORDER BY c.relname, a.attnum`,
      [tables as string[]],
    );
    const out: { table: string; column: string; next: number }[] = [];
    for (const s of ids) {
      const min = s.col === "rowid" ? 0 : (floor.get(s.tbl) ?? 0);
      const [r] = await this.q<{ v: number }>(
        `SELECT greatest(coalesce(max(${ident(s.col)}), 0), $1::bigint) AS v FROM ${ident(s.tbl)}`,
        [min],
      );
      const v = Number(r?.v ?? 0);
      await this.q("SELECT setval($1::regclass, $2::bigint, $3::boolean)", [s.seq, Math.max(v, 1), v > 0]);
      out.push({ table: s.tbl, column: s.col, next: v + 1 });
    }
    return out;
  }

  /** The vector change counter moved to at least `seq` (the copied change log's sequence numbers stay below it). */
  async raiseVectorChangeSeq(seq: number): Promise<void> {
    await this.q("UPDATE vector_change_seq SET seq = greatest(seq, $1::bigint) WHERE id = 1", [seq]);
  }

  /** `column` (a pgvector) of the rows with these ids, as little-endian float32 bytes. */
  async vectors(table: string, key: string, column: string, ids: number[]): Promise<Map<number, Uint8Array>> {
    const rows = await this.q<{ id: number; v: Uint8Array }>(
      `SELECT ${ident(key)} AS id, vector_send(${ident(column)}) AS v FROM ${ident(table)} WHERE ${ident(key)} = ANY($1::bigint[])`,
      [ids],
    );
    const out = new Map<number, Uint8Array>();
    for (const r of rows) {
      // vector_send: int16 dimensions, int16 unused, then each float32 big-endian.
      const raw = r.v;
      const dim = (raw[0]! << 8) | raw[1]!;
      const le = new Uint8Array(dim * 4);
      for (let i = 0; i < dim; i++) for (let b = 0; b < 4; b++) le[i * 4 + b] = raw[4 + i * 4 + 3 - b]!;
      out.set(Number(r.id), le);
    }
    return out;
  }

  /** Ids of `table` whose tsvector `column` matches `tsquery` (to_tsquery text), lowest first. */
  async tsIds(table: string, column: string, tsquery: string, limit: number): Promise<number[]> {
    const rows = await this.q<{ id: number }>(
      `SELECT id FROM ${ident(table)} WHERE ${ident(column)} @@ to_tsquery('vs_english', $1) ORDER BY id LIMIT $2`,
      [tsquery, limit],
    );
    return rows.map((r) => Number(r.id));
  }
}

/** Runs `fn` in one transaction on one connection of `pool`: all of it commits, or none of it. */
export async function inCopyTransaction<T>(pool: postgres.Sql, fn: (tx: CopyTransaction) => Promise<T>): Promise<T> {
  try {
    return (await pool.begin((tx) => fn(new CopyTransaction(tx)))) as T;
  } catch (err) {
    throw toStoreError(err) ?? err;
  }
}

export class CopyValueError extends StoreError {
  constructor(message: string) {
    super("misuse", message);
    this.name = "CopyValueError";
  }
}

/** One row as a binary COPY tuple: a field count, then each field's length (-1: NULL) and bytes. */
export function encodeTuple(row: readonly CopyValue[], columns: readonly TargetColumn[], table: string): Buffer {
  const fields = row.map((v, i) => encodeField(v, columns[i]!, table));
  let size = 2;
  for (const f of fields) size += 4 + (f?.byteLength ?? 0);
  const out = Buffer.allocUnsafe(size);
  out.writeInt16BE(fields.length, 0);
  let at = 2;
  for (const f of fields) {
    if (!f) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    out.writeInt32BE(f.byteLength, at);
    f.copy(out, at + 4);
    at += 4 + f.byteLength;
  }
  return out;
}

/** A value in binary form: vector_recv's for a vector column, text's (UTF-8) for every other. */
function encodeField(v: CopyValue, col: TargetColumn, table: string): Buffer | null {
  if (v === null) return null;
  if (col.type === "vector") {
    if (!(v instanceof Uint8Array)) throw new CopyValueError(`${table}.${col.name}: a vector that is not a blob`);
    return vectorRecv(v, `${table}.${col.name}`);
  }
  if (typeof v === "bigint") return Buffer.from(v.toString());
  if (typeof v === "number") return Buffer.from(Object.is(v, -0) ? "-0" : String(v));
  if (v instanceof Uint8Array)
    return Buffer.from(`\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}`);
  if (v.includes("\0")) {
    throw new CopyValueError(
      `${table}.${col.name} holds a text with a NUL character, which PostgreSQL text cannot store: "${v.replaceAll("\0", "\\0").slice(0, 60)}"`,
    );
  }
  return Buffer.from(v, "utf8");
}

/** float32 little-endian bytes as vector_recv reads them: int16 dimensions, int16 unused, each float32 big-endian. */
function vectorRecv(b: Uint8Array, where: string): Buffer {
  const dim = b.byteLength / 4;
  if (!Number.isInteger(dim) || dim < 1 || dim > MAX_DIM) {
    throw new CopyValueError(`${where}: a ${b.byteLength}-byte value is not a float32 vector pgvector can hold`);
  }
  const src = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = Buffer.allocUnsafe(4 + b.byteLength);
  out.writeInt16BE(dim, 0);
  out.writeInt16BE(0, 2);
  for (let i = 0; i < dim; i++) {
    const x = src.getFloat32(i * 4, true);
    if (!Number.isFinite(x)) throw new CopyValueError(`${where}: a vector holds ${x}, which pgvector refuses`);
    out.writeFloatBE(x, 4 + i * 4);
  }
  return out;
}
