/**
 * A reader thread of the embedded store (read-threads.ts): one read-only connection to the store's
 * file, answering `{ id, sql, params }` with `{ id, rows }` or `{ id, error }`. What runs here is a
 * read outside any unit of work (`Executor.allAside`), against the last commit (WAL): the
 * full-text look-ups of a search, which took the event loop 3–4 ms a request (issue 27).
 *
 * A read may instead ask for each row's cosine against a query (`cosine`: the rescoring of a
 * search's candidates, SearchStore.vectorCosines): the vectors are read and compared here, and
 * only the scores go back.
 *
 * Its own entry point (build.ts carries it into the compiled binary); imports nothing that loads
 * native addons beyond bun:sqlite and the sqlite-vec extension the main thread also loads.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { Database } from "bun:sqlite";
import { COSINE_BLOCK, cosines, RowDots } from "../../vector/wasm/row-dots.ts";
import { openDatabase } from "./database.ts";
import type { ReadReply, ReadRequest, ReadThreadData } from "./read-threads.ts";

const data = workerData as ReadThreadData;
let db: Database | null = null;
let openError: unknown = null;
try {
  db = openDatabase(data.file, {
    readonly: true,
    migrate: false,
    cacheMiB: data.cacheMiB,
    vecExtension: data.vecExtension,
  });
} catch (err) {
  openError = err;
}

/** What crosses back to the main thread of an error: the driver's code and words (toStoreError reads them). */
function errorOf(err: unknown): ReadReply["error"] {
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  return {
    name: typeof e?.name === "string" ? e.name : "Error",
    code: typeof e?.code === "string" ? e.code : undefined,
    message: typeof e?.message === "string" ? e.message : String(err),
  };
}

/** The SIMD dot products of a `cosine` request (one per query dimension seen; 512 in practice). */
const rowDots = new Map<number, RowDots>();

/** A `cosine` request: each `(id, embedding)` row's cosine against the query; rows of another width are left out. */
function cosineReply(id: number, rows: { id: number; embedding: Uint8Array }[], unit: Float32Array): ReadReply {
  const dim = unit.length;
  const kept = rows.filter((r) => r.embedding?.byteLength === dim * 4);
  let rd = rowDots.get(dim);
  if (!rd) rowDots.set(dim, (rd = new RowDots(dim, COSINE_BLOCK)));
  return {
    id,
    ids: Float64Array.from(kept, (r) => r.id),
    scores: cosines(
      rd,
      unit,
      kept.map((r) => r.embedding),
    ),
  };
}

parentPort!.on("message", (m: ReadRequest) => {
  let reply: ReadReply;
  try {
    if (!db) throw openError;
    const rows = db.query(m.sql).all(...(m.params as never[])) as unknown[];
    reply = m.cosine ? cosineReply(m.id, rows as never, m.cosine) : { id: m.id, rows };
  } catch (err) {
    reply = { id: m.id, error: errorOf(err) };
  }
  // A cosine reply's two arrays are handed over, not copied.
  parentPort!.postMessage(
    reply,
    reply.ids && reply.scores ? [reply.ids.buffer as ArrayBuffer, reply.scores.buffer as ArrayBuffer] : [],
  );
});
