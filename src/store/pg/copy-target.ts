/**
 * PostgreSQL as the target of `vsearch migrate-store` (store/migrate-store.ts): the catalog it
 * copies into (columns, types, foreign-key order, identity sequences) and one transaction that
 * takes the rows with COPY.
 *
 * COPY goes into a per-table staging table of `text` columns, and from there into the real
 * table with `INSERT … SELECT` and casts. Why not COPY straight into the table: postgres.js ends
 * a COPY stream when it sends CopyDone, and an error the server reports after that (a foreign key,
 * CHECK or unique violation is checked at the end of the statement) is dropped: the stream never
 * finishes and the caller waits for ever. Into `text` columns a well-formed COPY cannot fail on a
 * value; every constraint and cast is checked by the INSERT, whose error arrives as any query's,
 * naming the table. Rows go in chunks (bounded memory; progress per chunk).
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

/** A table's rows as COPY text lines ("\n"-terminated), in chunks. */
export type LineChunks = AsyncIterable<{ lines: string[]; rows: number }> | Iterable<{ lines: string[]; rows: number }>;

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
   * Turns the tables' own triggers off (ON) or on again. The vector tables' triggers log each
   * inserted row in the change log and bump one counter row: a million inserts would write a
   * million versions of that row in one transaction. The change log is copied as it is instead.
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
   * Copies `chunks` into `table`'s `columns` (values already in COPY text form, typed by
   * `columns[i].type`); calls `onRows` after each chunk with the rows it held.
   */
  async copy(
    table: string,
    columns: readonly TargetColumn[],
    chunks: LineChunks,
    onRows: (rows: number) => void,
  ): Promise<void> {
    const stage = ident(`vs_migrate_${table}`);
    // Vectors are staged as vectors: parsed once, kept uncompressed (pgvector's storage is
    // EXTERNAL), where a 5 KiB text of 512 floats would be compressed into the staging table and
    // parsed again by the cast. Their text is ours (finite float32s, checked) and cannot fail.
    const staged = (c: TargetColumn) => (c.type === "vector" ? "vector" : "text");
    await this.q(
      `CREATE TEMP TABLE ${stage} (${columns.map((c, i) => `c${i} ${staged(c)}`).join(", ")}) ON COMMIT DROP`,
    );
    const casts = columns.map((c, i) => (staged(c) === c.type ? `c${i}` : `c${i}::${c.type}`)).join(", ");
    const insert = `INSERT INTO ${ident(table)} (${columns.map((c) => ident(c.name)).join(", ")}) OVERRIDING SYSTEM VALUE SELECT ${casts} FROM ${stage}`;
    for await (const chunk of chunks) {
      if (!chunk.rows) continue;
      await this.copyLines(stage, chunk.lines);
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
      onRows(chunk.rows);
    }
    await this.q(`DROP TABLE ${stage}`);
  }

  private async copyLines(stage: string, lines: readonly string[]): Promise<void> {
    const stream = (await this.tx.unsafe(`COPY ${stage} FROM STDIN`).writable()) as Writable;
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
      let piece = "";
      for (const line of lines) {
        piece += line;
        if (piece.length >= WRITE_BYTES) {
          if (!stream.write(piece)) await Promise.race([once(stream, "drain"), failed]);
          piece = "";
        }
      }
      if (piece) stream.write(piece);
      stream.end();
      await once(stream, "finish");
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
