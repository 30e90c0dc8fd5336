/**
 * A reader thread of the embedded store (read-threads.ts): one read-only connection to the store's
 * file, answering `{ id, sql, params }` with `{ id, rows }` or `{ id, error }`. What runs here is a
 * read outside any unit of work (`Executor.allAside`), against the last commit (WAL): the
 * full-text look-ups of a search, which took the event loop 3–4 ms a request (issue 27).
 *
 * Its own entry point (build.ts carries it into the compiled binary); imports nothing that loads
 * native addons beyond bun:sqlite and the sqlite-vec extension the main thread also loads.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { Database } from "bun:sqlite";
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

parentPort!.on("message", (m: ReadRequest) => {
  let reply: ReadReply;
  try {
    if (!db) throw openError;
    reply = { id: m.id, rows: db.query(m.sql).all(...(m.params as never[])) as unknown[] };
  } catch (err) {
    reply = { id: m.id, error: errorOf(err) };
  }
  parentPort!.postMessage(reply);
});
