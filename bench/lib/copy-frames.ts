/**
 * bench/pg-bench.ts `--copy`: the rows `writeFrames` writes through IndexStore, written with COPY
 * instead — what makes (c)/(d) at 1 M rows feasible on a 2-core box (IndexStore's INSERTs with a
 * change-log trigger per vector row took minutes at 100 k).
 *
 * The account, its ten collections and its videos go through the services as before (a few
 * thousand rows). `frames`, `frame_vectors` and `vector_changes` go through the product's own COPY
 * path, the one `vsearch migrate-store` uses (src/store/pg/copy-target.ts: binary COPY into a
 * staging table, `INSERT … SELECT` with casts, vectors as vector_recv reads them), in one
 * transaction with the vector tables' user triggers off. With the triggers off the change log is
 * written as they would have left it: IndexStore inserts each video's frame vectors in one
 * transaction, each row bumping `vector_change_seq` and setting its video's `vector_changes.seq`
 * to the bumped value, so after N rows the counter is N and a video's seq is the ordinal of its
 * last frame. Frame ids are 1…N in row order, as the identity column gives them to IndexStore on a
 * fresh database, and the identity sequence is moved past them.
 */
import postgres from "postgres";
import type { BenchApp } from "../../src/app.ts";
import {
  type CopyValue,
  inCopyTransaction,
  readTargetSchema,
  type TargetColumn,
} from "../../src/store/pg/copy-target.ts";
import { VideoStore } from "../../src/videos/store.ts";
import { readyVideo } from "./search-data.ts";
import type { Dataset } from "./synthetic.ts";

/** Rows per COPY chunk and bytes per chunk (a chunk is built in memory before it is sent). */
const LIMITS = { rows: 20_000, bytes: 64 * 2 ** 20 };

function columnsOf(schema: Map<string, TargetColumn[]>, table: string, names: string[]): TargetColumn[] {
  const cols = schema.get(table);
  if (!cols) throw new Error(`no table ${table} in the target database`);
  return names.map((n) => {
    const c = cols.find((x) => x.name === n);
    if (!c) throw new Error(`no column ${table}.${n}`);
    return c;
  });
}

/**
 * Writes `ds` as frames of a new account (ten collections, `per` frames a video, video v in
 * collection v % 10, unless `collections` / `collectionOf` say otherwise) into the empty frames tables of `databaseUrl`; `log` gets progress.
 */
export async function copyFrames(
  app: BenchApp,
  databaseUrl: string,
  ds: Dataset,
  o: {
    dir: string;
    per: number;
    modelId: string;
    log: (m: string) => void;
    /** Collections to make (default 10) and the one of video v (default v % collections). */
    collections?: number;
    collectionOf?: (video: number) => number;
  },
): Promise<void> {
  const s = app.services;
  const account = await s.accounts.createAccount({ name: "Bench", plan: "enterprise" });
  const nCols = o.collections ?? 10;
  const colOf = o.collectionOf ?? ((v: number) => v % nCols);
  const made: string[] = [];
  for (let i = 0; i < nCols; i++) made.push((await s.collections.create(account.id, { name: `c${i}` })).id);
  const cols = (v: number) => made[colOf(v)];
  const videos = new VideoStore(app.internals.db);
  const videoIds: string[] = [];
  for (let from = 0, v = 0; from < ds.n; from += o.per, v++) {
    videoIds.push(
      await readyVideo(app, videos, o.dir, {
        accountId: account.id,
        collectionId: cols(v),
        filename: `v${v}.mp4`,
        durationSecs: Math.min(o.per, ds.n - from),
      }),
    );
  }
  o.log(`made ${videoIds.length} videos; copying ${ds.n} frames`);
  const dim = ds.dim;
  const pool = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const schema = (await readTargetSchema(pool)).tables;
    const frameCols = columnsOf(schema, "frames", [
      "id",
      "video_id",
      "account_id",
      "collection_id",
      "shot_index",
      "timestamp",
      "model_id",
    ]);
    const vectorCols = columnsOf(schema, "frame_vectors", ["frame_id", "embedding"]);
    const changeCols = columnsOf(schema, "vector_changes", ["video_id", "account_id", "seq"]);
    await inCopyTransaction(pool, async (tx) => {
      const busy = await tx.occupied(["frames", "frame_vectors", "vector_changes"]);
      if (busy.length) throw new Error(`the frames tables are not empty: ${JSON.stringify(busy)}`);
      await tx.userTriggers(["frames", "frame_vectors"], false);
      function* frames(): Generator<CopyValue[]> {
        for (let i = 0; i < ds.n; i++) {
          const v = Math.floor(i / o.per);
          const k = i - v * o.per;
          yield [i + 1, videoIds[v], account.id, cols(v), Math.floor(k / 10), k, o.modelId];
        }
      }
      function* vectors(): Generator<CopyValue[]> {
        const bytes = new Uint8Array(ds.vectors.buffer, ds.vectors.byteOffset, ds.vectors.byteLength);
        for (let i = 0; i < ds.n; i++) yield [i + 1, bytes.subarray(i * dim * 4, (i + 1) * dim * 4)];
      }
      function* changes(): Generator<CopyValue[]> {
        for (let v = 0; v < videoIds.length; v++) yield [videoIds[v], account.id, Math.min((v + 1) * o.per, ds.n)];
      }
      let done = 0;
      const progress = (what: string) => (n: number) => {
        done += n;
        if (done % 200_000 < n) o.log(`copied ${done} ${what} rows`);
      };
      await tx.copy("frames", frameCols, frames(), LIMITS, progress("frames"));
      done = 0;
      await tx.copy("frame_vectors", vectorCols, vectors(), LIMITS, progress("frame_vectors"));
      await tx.copy("vector_changes", changeCols, changes(), LIMITS, () => {});
      await tx.raiseVectorChangeSeq(ds.n);
      await tx.moveSequences(["frames"], new Map());
      await tx.userTriggers(["frames", "frame_vectors"], true);
    });
  } finally {
    await pool.end();
  }
}
