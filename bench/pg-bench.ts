/**
 * The embedded store against PostgreSQL (issue 25), side by side in one run:
 *
 *   node_modules/.bin/bun bench/pg-bench.ts [--parts a,b,c,d] [--frames 100000] [--rows 1000000]
 *     [--queries 50] [--ef 40,100,400,1000] [--secs 15] [--ingest-secs 30] [--ingest-runs 2] [--database-url postgres://…] [--db-prefix pgbench]
 *     [--copy] [--maintenance-work-mem 1GB] [--kinds text,image,scoped]
 *
 *   (a) search over HTTP, one account of `--frames` synthetic 512-d frames (bench/lib/search-data.ts:
 *       frames, shot means, transcripts), on SQLite, on PostgreSQL with the in-memory index, and on
 *       PostgreSQL with vector_backend = pgvector: p50/p99 and requests/s of new text queries (all
 *       modes) from 1 and 4 clients in a child process (bench/lib/search-clients.ts), after a first
 *       search and the index's background work (list training; pgvector: its HNSW build).
 *   (b) ingest × realtime of a generated 1080p clip (bench/lib/bench-clip.ts) with the benchmark
 *       CLIP (visual only), on each store: the same pipeline, only the rows' destination differs.
 *   (c) the in-memory index against pgvector HNSW on the same `--rows` frames of one account
 *       (written through IndexStore into PostgreSQL; with `--copy`, the same rows with COPY through the
 *       product's migrate-store path, bench/lib/copy-frames.ts, into a database of their own — what
 *       makes 1 M rows feasible): build time (in-memory: the account's first
 *       search, every row read from PostgreSQL; pgvector: CREATE INDEX CONCURRENTLY as the backend
 *       runs it), memory (in-memory: the index's bytes; pgvector: the index's size on disk, which
 *       PostgreSQL caches in shared buffers and the page cache), p50/p99 of `nearest` k=10 and
 *       recall@10 against a brute-force scan, on text-like and image-like queries
 *       (bench/lib/synthetic.ts, as bench/vector-bench.ts makes them) and text-like queries scoped to
 *       one collection of ten (`--kinds` picks and orders `text`, `image`, `scoped`; the ground truth of a
 *       scoped query scans only that collection's rows). The in-memory index reads what search reads
 *       (probe-policy.ts).
 *   (d) warm-up of the in-memory index from PostgreSQL (the (c) rows): `start()` until a vector
 *       search answers and until the index is complete, without the local snapshot and then with it
 *       (written by the first server's close()).
 *
 * PostgreSQL: `--database-url` (a superuser URL of a cluster with pgvector ≥ 0.8; databases named
 * `<db-prefix>_*` are made and kept there for the next run), else a throw-away cluster of this machine's
 * PostgreSQL (test/pg/cluster.ts: fsync off), removed at the end. Each database gets
 * maintenance_work_mem = 1GB (an HNSW build far slower once its graph outgrows it: docs/POSTGRES.md).
 * `--maintenance-work-mem` sets it instead (1 M × 512: 4GB; max_parallel_maintenance_workers stays the
 * server's, as the backend's build gets it; both are printed with the build time). The cluster secret
 * of a kept database is kept beside it (`$TMPDIR/vsearch-pg-bench-media/<db>`, the apps' media root).
 * PostgreSQL runs on the same machine as vsearch: they share its cores (2 here), so every figure is
 * one box doing both jobs. Prints tables and writes bench/results/pg.json. Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type BenchApp, createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { bunServeOptions } from "../src/http/serve-options.ts";
import { IndexStore } from "../src/indexing/store.ts";
import type { ModelCatalog } from "../src/models/roles.ts";
import type { QueryEmbedder } from "../src/search/embedder.ts";
import { copyFrames } from "./lib/copy-frames.ts";
import { runSearchClients } from "./lib/run-search-clients.ts";
import { FixedEmbedder } from "./lib/fixed-embedder.ts";
import { MemoryVectorBackend } from "../src/search/memory-backend.ts";
import { PgVectorBackend } from "../src/search/pgvector-backend.ts";
import { PgVectorStore } from "../src/search/pgvector-store.ts";
import { IMAGE_QUERY_PROBE, TEXT_QUERY_PROBE } from "../src/search/probe-policy.ts";
import { parseSearchRequest } from "../src/search/schema.ts";
import { SearchStore } from "../src/search/store.ts";
import { ExactVectorCache } from "../src/search/vector-cache.ts";
import { VideoStore } from "../src/videos/store.ts";
import { findPostgres, startCluster } from "../test/pg/cluster.ts";
import { makeBenchClip } from "./lib/bench-clip.ts";
import {
  BenchEmbedder,
  DIM,
  readyVideo,
  type SearchData,
  searchDataset,
  tinyTextTower,
  writeSearchData,
} from "./lib/search-data.ts";
import { type Dataset, generateDataset, generateQueries } from "./lib/synthetic.ts";
import { argValue as str } from "./lib/args.ts";

const argv = process.argv;
const arg = (name: string, fallback: number) => Number(str(name) ?? fallback);
const PARTS = new Set((str("parts") ?? "a,b,c,d").split(","));
const FRAMES = arg("frames", 100_000);
const ROWS = arg("rows", 1_000_000);
const QUERIES = arg("queries", 50);
const SECS = arg("secs", 15);
const INGEST_SECS = arg("ingest-secs", 30);
const INGEST_RUNS = arg("ingest-runs", 2);
/** Names of the databases this bench makes: `<prefix>_search_N`, `_ingest`, `_vectors_N`. */
const DB_PREFIX = str("db-prefix") ?? "pgbench";
const K = 10;
/** hnsw.ef_search values measured beside the backend's own choice in (c) (`--ef 40,100,400`; empty: none). */
const EF_SWEEP = (str("ef") ?? "40,100,400,1000").split(",").filter(Boolean).map(Number);
/** (c)'s rows written with COPY (bench/lib/copy-frames.ts) instead of IndexStore's INSERTs; a database of their own. */
const COPY = argv.includes("--copy");
/** (c)'s query kinds, run in this order: `text` (text-like), `image` (image-like), `scoped` (text-like, one collection of ten). */
const KINDS = new Set((str("kinds") ?? "text,image,scoped").split(","));
for (const k of KINDS)
  if (!["text", "image", "scoped"].includes(k)) throw new Error(`--kinds: text, image, scoped (not ${k})`);
/** maintenance_work_mem of the bench's databases: the HNSW graph of (c) should fit (docs/POSTGRES.md). */
const MAINTENANCE_WORK_MEM = str("maintenance-work-mem") ?? "1GB";
if (!/^\d+(kB|MB|GB)$/.test(MAINTENANCE_WORK_MEM)) throw new Error("--maintenance-work-mem: e.g. 4GB");
const MODEL = "bench-clip-b32@synthetic";
const ROOT = join(import.meta.dir, "..");
const OUT = join(import.meta.dir, "results", "pg.json");
const SHARED = join(ROOT, "..", "shared", "fixtures", "models");

const r2 = (x: number) => Math.round(x * 100) / 100;
const load1 = () => r2(loadavg()[0]);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
const mb = (b: number) => Math.round(b / 2 ** 20);
const t00 = performance.now();
const log = (m: string) => console.log(`[${((performance.now() - t00) / 1000).toFixed(0).padStart(5)} s] ${m}`);

function table(title: string, rows: Record<string, unknown>[]): void {
  if (!rows.length) return;
  console.log(`\n${title}`);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "-").length)));
  console.log(cols.map((c, i) => c.padEnd(w[i])).join("  "));
  for (const r of rows) console.log(cols.map((c, i) => String(r[c] ?? "-").padEnd(w[i])).join("  "));
}

// ---- PostgreSQL: the given cluster or a throw-away one --------------------------------------------

async function cluster(): Promise<{ adminUrl: string; urlFor(db: string): string; stop(): Promise<void> }> {
  const given = str("database-url");
  if (given) {
    return {
      adminUrl: given,
      urlFor: (db) => Object.assign(new URL(given), { pathname: `/${db}` }).toString(),
      stop: async () => {},
    };
  }
  const found = findPostgres();
  if ("missing" in found) throw new Error(`no PostgreSQL to run against: ${found.missing} (or pass --database-url)`);
  const c = await startCluster(found.bin);
  return { adminUrl: c.adminUrl, urlFor: (db) => c.urlFor(db), stop: () => c.stop() };
}

/** A database of this bench: kept when it exists and `keep` says its rows are the ones wanted, else made anew. */
async function database(admin: postgres.Sql, name: string, fresh: boolean): Promise<boolean> {
  const exists = (await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length > 0;
  const kept = exists && !fresh;
  if (exists && !kept) await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  if (!kept) await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.unsafe(`ALTER DATABASE ${name} SET maintenance_work_mem = '${MAINTENANCE_WORK_MEM}'`);
  return kept;
}

async function openApp(o: {
  dataDir: string;
  databaseUrl?: string;
  /** Shared by every app on one kept database: it holds the cluster secret the database was started with. */
  mediaRoot?: string;
  vectorBackend?: "memory" | "pgvector";
  embedder?: QueryEmbedder;
  models?: ModelCatalog;
}): Promise<BenchApp> {
  const env: Record<string, string> = { VSEARCH_RATE_LIMIT_SEARCH: "1000000", VSEARCH_LOG_LEVEL: "warn" };
  if (o.databaseUrl) env.VSEARCH_DATABASE_URL = o.databaseUrl;
  if (o.mediaRoot) env.VSEARCH_MEDIA_ROOT = o.mediaRoot;
  if (o.vectorBackend) env.VSEARCH_VECTOR_BACKEND = o.vectorBackend;
  const config = loadConfig({ dataDir: o.dataDir, logLevel: "silent", host: "127.0.0.1", port: 0 }, env);
  return await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("silent"),
    queryEmbedder: o.embedder,
    models: o.models,
  });
}

// ---- (a) search over HTTP -------------------------------------------------------------------------

async function partA(pg: Awaited<ReturnType<typeof cluster>>, admin: postgres.Sql, work: string) {
  const tower = await tinyTextTower();
  const ds = searchDataset(FRAMES);
  const embedder = new BenchEmbedder(tower.encode, generateQueries(ds, 400, "text", 9));
  const db = `${DB_PREFIX}_search_${FRAMES}`;
  await database(admin, db, true);
  const rows: Record<string, unknown>[] = [];
  const setups = [
    { store: "SQLite", vectors: "in-memory index", dataDir: join(work, "a-sqlite") },
    {
      store: "PostgreSQL",
      vectors: "in-memory index",
      dataDir: join(work, "a-pg"),
      databaseUrl: pg.urlFor(db),
      vectorBackend: "memory" as const,
    },
    {
      store: "PostgreSQL",
      vectors: "pgvector HNSW",
      dataDir: join(work, "a-pgvec"),
      databaseUrl: pg.urlFor(db),
      vectorBackend: "pgvector" as const,
    },
  ];
  let pgData: SearchData | null = null;
  let word = 0;
  const texts = () =>
    Array.from({ length: SECS * 60 }, () => {
      const c = 1 + 37 * word++;
      return (
        ["red car", "beach", "city night", "dog", "snow", "kitchen", "crowd", "forest", "boat", "stage"][c % 10] +
        ` ${c}`
      );
    });
  for (const s of setups) {
    const app = await openApp({ ...s, embedder });
    let server: ReturnType<typeof Bun.serve> | null = null;
    try {
      const t0 = performance.now();
      const data: SearchData = s.databaseUrl && pgData ? pgData : await writeSearchData(app, ds, s.dataDir);
      if (s.databaseUrl) pgData = data;
      const insertS = (performance.now() - t0) / 1000;
      const w0 = performance.now();
      const first = await app.fetch(
        new Request("http://localhost/v1/search", {
          method: "POST",
          headers: { authorization: `Bearer ${data.key}`, "content-type": "application/x-www-form-urlencoded" },
          body: "query=warm",
        }),
      );
      if (first.status !== 200) throw new Error(`first search: ${first.status} ${await first.text()}`);
      const firstS = (performance.now() - w0) / 1000;
      await app.internals.search.indexes.whenVectorIndexIdle(); // list training; pgvector: its HNSW build
      const readyS = (performance.now() - w0) / 1000;
      server = Bun.serve(bunServeOptions(app, app.config));
      const url = `http://127.0.0.1:${server.port}`;
      for (const clients of [1, 4]) {
        const load = load1();
        const c0 = process.cpuUsage();
        const { result: r } = await runSearchClients(url, data.key, clients, SECS, texts());
        const cpu = process.cpuUsage(c0);
        const row = {
          store: s.store,
          vectors: s.vectors,
          clients,
          insert_s: s.databaseUrl && s.vectorBackend === "pgvector" ? "(same rows)" : r2(insertS),
          first_search_s: r2(firstS),
          index_ready_s: r2(readyS),
          req_per_s: r2(r.requests / r.secs),
          p50_ms: r2(pct(r.lat, 50)),
          p99_ms: r2(pct(r.lat, 99)),
          errors: r.errors,
          vsearch_cpu_ms_per_req: r2((cpu.user + cpu.system) / 1000 / Math.max(1, r.requests)),
          load1: load,
        };
        rows.push(row);
        log(JSON.stringify(row));
      }
    } finally {
      await server?.stop(true);
      await app.close();
    }
  }
  await tower.close();
  return rows;
}

// ---- (b) ingest × realtime --------------------------------------------------------------------------

async function partB(pg: Awaited<ReturnType<typeof cluster>>, admin: postgres.Sql, work: string) {
  const clipModel = {
    name: "bench-clip",
    dir: join(SHARED, "bench-clip-vit-base-patch32"),
    dtype: "q8" as const,
    modelId: "bench-clip@q8",
  };
  const models: ModelCatalog = { active: (r) => (r === "image-text" ? clipModel : null) } as ModelCatalog;
  const runtime = await resolveRuntime(loadConfig({ dataDir: join(work, "rt") }, {}));
  log(`making a ${INGEST_SECS} s 1080p clip …`);
  const clip = await makeBenchClip(runtime.ffmpeg, join(work, "clip.mp4"), { secs: INGEST_SECS, gop: 60 });
  await Bun.sleep(3000);
  const db = `${DB_PREFIX}_ingest`;
  await database(admin, db, true);
  const rows: Record<string, unknown>[] = [];
  // Alternated, so both stores see the same load over the run.
  const setups = [
    { store: "SQLite", dataDir: join(work, "b-sqlite") },
    { store: "PostgreSQL", dataDir: join(work, "b-pg"), databaseUrl: pg.urlFor(db) },
  ];
  const apps = await Promise.all(setups.map((s) => openApp({ ...s, models })));
  const walls: number[][] = setups.map(() => []);
  try {
    const ctx = await Promise.all(
      apps.map(async (app) => {
        const acct = await app.services.accounts.createAccount({ name: "bench" });
        const col = await app.services.collections.create(acct.id, { name: "bench" });
        const pool = await app.internals.inference.get(); // the model loaded before anything is timed
        await pool.embedImages({ modelDir: clipModel.dir, dtype: clipModel.dtype }, [
          { rgb: new Uint8Array(224 * 224 * 3), width: 224, height: 224 },
        ]);
        await app.internals.queue.start();
        return { acct: acct.id, col: col.id };
      }),
    );
    for (let run = 0; run < INGEST_RUNS; run++)
      for (const [i, app] of apps.entries()) {
        const { job_id } = await app.services.uploads.ingestFile(ctx[i].acct, ctx[i].col, clip, { force: true });
        const t0 = performance.now();
        for (let n = 0; ; n++) {
          const job = await app.services.jobs.get(ctx[i].acct, job_id!);
          if (job.status === "failed")
            throw new Error(`ingest failed on ${setups[i].store}: ${JSON.stringify(job.error)}`);
          if (job.status === "done") break;
          if (n > 200_000) throw new Error("ingest did not finish");
          await Bun.sleep(10);
        }
        walls[i].push((performance.now() - t0) / 1000);
        log(`${setups[i].store} ingest ${run + 1}: ${walls[i].at(-1)!.toFixed(2)} s (load ${load1()})`);
      }
  } finally {
    for (const app of apps) await app.close();
  }
  for (const [i, s] of setups.entries()) {
    const w = pct(walls[i], 50);
    rows.push({
      store: s.store,
      clip_s: INGEST_SECS,
      runs: walls[i].map(r2).join(", "),
      median_wall_s: r2(w),
      x_realtime: r2(INGEST_SECS / w),
      load1: load1(),
    });
  }
  return rows;
}

// ---- (c) in-memory index vs pgvector HNSW ----------------------------------------------------------

/** Writes `ds` as frames of one account (ten collections, 1 000 frames a video) through IndexStore, as the pipeline does. */
async function writeFrames(app: BenchApp, ds: Dataset, dir: string): Promise<void> {
  const s = app.services;
  const account = await s.accounts.createAccount({ name: "Bench", plan: "enterprise" });
  const cols: string[] = [];
  for (let i = 0; i < 10; i++) cols.push((await s.collections.create(account.id, { name: `c${i}` })).id);
  const index = new IndexStore(app.internals.db, false);
  const videos = new VideoStore(app.internals.db);
  const PER = 1000;
  for (let from = 0, v = 0; from < ds.n; from += PER, v++) {
    const n = Math.min(PER, ds.n - from);
    const collectionId = cols[v % 10];
    const videoId = await readyVideo(app, videos, dir, {
      accountId: account.id,
      collectionId,
      filename: `v${v}.mp4`,
      durationSecs: n,
    });
    await index.replaceFrames(
      { videoId, accountId: account.id, collectionId },
      Array.from({ length: n }, (_, k) => ({
        timestamp: k,
        shotIndex: Math.floor(k / 10),
        embedding: ds.vectors.subarray((from + k) * DIM, (from + k + 1) * DIM),
      })),
      MODEL,
    );
    if ((v + 1) % 100 === 0) log(`written ${from + n} of ${ds.n} frames`);
  }
}

/**
 * Ids of the k nearest of `rows` (row numbers, ascending) by brute force: the exact ground truth.
 * A collection-scoped query passes only that collection's rows (a tenth of the set), so its truth
 * costs a tenth of a full scan; the loop reads one typed array with no per-row callback. Same sums,
 * same order and the same strict `>` as a scan of every row with a filter: the same top-k.
 */
function truthOf(vectors: Float32Array, q: Float32Array, k: number, ids: number[], rows: Int32Array): Set<number> {
  const bestId: number[] = [];
  const bestS: number[] = [];
  for (let r = 0; r < rows.length; r++) {
    const i = rows[r];
    const o = i * DIM;
    let s = 0;
    for (let j = 0; j < DIM; j++) s += vectors[o + j] * q[j];
    if (bestS.length === k && s <= bestS[k - 1]) continue;
    let at = bestS.length;
    while (at > 0 && bestS[at - 1] < s) at--; // after equal scores: the earlier row stays ahead
    bestS.splice(at, 0, s);
    bestId.splice(at, 0, ids[i]);
    if (bestS.length > k) {
      bestS.pop();
      bestId.pop();
    }
  }
  return new Set(bestId);
}

async function partC(pg: Awaited<ReturnType<typeof cluster>>, admin: postgres.Sql, work: string) {
  const ds = generateDataset({
    n: ROWS,
    dim: DIM,
    kind: "clustered",
    framesPerVideo: 1000,
    framesPerShot: 10,
    collections: 10,
    seed: 3,
  });
  const db = `${DB_PREFIX}_vectors_${ROWS}${COPY ? "_copy" : ""}`;
  const url = pg.urlFor(db);
  const kept = await database(admin, db, false);
  // The media root (and its secret.key, whose fingerprint the database records) lives as long as
  // the kept database: (d)'s servers and the next run's read the same secret, as nodes of one install.
  const mediaRoot = join(tmpdir(), "vsearch-pg-bench-media", db);
  if (!kept) rmSync(mediaRoot, { recursive: true, force: true });
  mkdirSync(mediaRoot, { recursive: true });
  const app = await openApp({ dataDir: join(work, "c"), databaseUrl: url, mediaRoot });
  const rows: Record<string, unknown>[] = [];
  try {
    const exec = app.internals.db;
    const have = (await exec.get<{ n: number }>("SELECT count(*) AS n FROM frames"))!.n;
    if (!kept || have !== ROWS) {
      if (have) throw new Error(`database ${db} holds ${have} frames, not ${ROWS}: drop it`);
      const t0 = performance.now();
      if (COPY) await copyFrames(app, url, ds, { dir: join(work, "c"), per: 1000, modelId: MODEL, log });
      else await writeFrames(app, ds, join(work, "c"));
      // What autovacuum would do soon after either way; done here so both writers leave the same state.
      await exec.exec("VACUUM (ANALYZE) frames, frame_vectors");
      log(
        `wrote ${ROWS} frames into PostgreSQL ${COPY ? "with COPY" : "through IndexStore"} in ${((performance.now() - t0) / 1000).toFixed(0)} s (load ${load1()})`,
      );
    }
    // readyVideo's uploads queued an ingest job each (of a 64-byte stand-in file): settled as the
    // pipeline leaves an indexed video's job (done, no task), else (d)'s servers would run them
    // during the warm-up and fail the videos.
    await exec.exec("DELETE FROM tasks WHERE kind = 'ingest'");
    await exec.exec(
      "UPDATE jobs SET status = 'done', progress_pct = 100, stages_pending = '[]' WHERE status <> 'done'",
    );
    await exec.exec("UPDATE videos SET status = 'ready', progress_pct = 100 WHERE status <> 'ready'");
    const settings = await exec.get<{ mwm: string; pmw: string }>(
      "SELECT current_setting('maintenance_work_mem') AS mwm, current_setting('max_parallel_maintenance_workers') AS pmw",
    );
    log(`maintenance_work_mem ${settings?.mwm}, max_parallel_maintenance_workers ${settings?.pmw}`);
    const meta = await exec.all<{ id: number; account_id: string; collection_id: string }>(
      "SELECT id, account_id, collection_id FROM frames ORDER BY id",
    );
    const ids = meta.map((m) => Number(m.id));
    const accountId = meta[0].account_id;
    const oneCol = meta[0].collection_id;
    const allRows = Int32Array.from(meta.keys());
    const oneColRows = Int32Array.from(allRows.filter((i) => meta[i].collection_id === oneCol));
    const searchStore = new SearchStore(exec);
    const pgStore = new PgVectorStore(exec);

    // Builds, side by side.
    const mem = new MemoryVectorBackend(searchStore, new ExactVectorCache(256 * 2 ** 20));
    Bun.gc(true);
    const rss0 = process.memoryUsage().rss;
    let t0 = performance.now();
    const q0 = generateQueries(ds, 1, "text", 1);
    await mem.nearest({
      kind: "frames",
      scope: { accountId },
      modelId: MODEL,
      query: q0,
      k: K,
      probe: TEXT_QUERY_PROBE,
    });
    const memLoadS = (performance.now() - t0) / 1000;
    await mem.whenIdle();
    const memBuildS = (performance.now() - t0) / 1000;
    const memBytes = [...mem.indexes.values()].reduce((n, ki) => n + ki.index.memoryBytes, 0);
    Bun.gc(true);
    const memRss = process.memoryUsage().rss - rss0;
    log(`in-memory index: read ${memLoadS.toFixed(1)} s, complete ${memBuildS.toFixed(1)} s, ${mb(memBytes)} MiB`);

    await exec.exec("DROP INDEX IF EXISTS frame_vectors_hnsw_512");
    const loadBuild = load1();
    t0 = performance.now();
    await pgStore.createHnswIndex("frames", DIM, { m: 16, efConstruction: 64 });
    const hnswBuildS = (performance.now() - t0) / 1000;
    const hnswBytes = Number(
      (await exec.get<{ b: number }>("SELECT pg_relation_size('frame_vectors_hnsw_512') AS b"))!.b,
    );
    log(`pgvector HNSW: built in ${hnswBuildS.toFixed(1)} s, ${mb(hnswBytes)} MiB`);
    const pgv = new PgVectorBackend(searchStore, pgStore);
    // hnsw.ef_search swept on the same queries (the backend's own choice is the "pgvector" column).
    const sweep = EF_SWEEP.map((ef) => ({
      ef,
      backend: new PgVectorBackend(searchStore, pgStore, { efSearch: ef, textEfSearch: ef }),
    }));
    rows.push({
      what: "build",
      rows: ROWS,
      in_memory: `${r2(memBuildS)} s (rows read ${r2(memLoadS)} s)`,
      pgvector: `${r2(hnswBuildS)} s (CONCURRENTLY, m 16, ef_construction 64; maintenance_work_mem ${settings?.mwm}, max_parallel_maintenance_workers ${settings?.pmw})`,
      load1: loadBuild,
    });
    rows.push({
      what: "memory",
      rows: ROWS,
      in_memory: `${mb(memBytes)} MiB index (RSS +${mb(memRss)} MiB)`,
      pgvector: `${mb(hnswBytes)} MiB index on disk / in PostgreSQL's cache`,
      load1: load1(),
    });

    const kinds = [
      {
        key: "text",
        name: "text-like",
        queries: generateQueries(ds, QUERIES, "text", 9),
        probe: TEXT_QUERY_PROBE,
        scope: { accountId },
      },
      {
        key: "image",
        name: "image-like",
        queries: generateQueries(ds, QUERIES, "image", 11),
        probe: IMAGE_QUERY_PROBE,
        scope: { accountId },
      },
      // A collection filter: the in-memory index reads every allowed row (probe-policy.ts); pgvector walks its graph with an iterative scan.
      {
        key: "scoped",
        name: "text-like, 1 of 10 collections",
        queries: generateQueries(ds, QUERIES, "text", 13),
        probe: undefined,
        scope: { accountId, collectionId: oneCol },
      },
    ];
    for (const kind of [...KINDS].map((key) => kinds.find((k) => k.key === key)!)) {
      // The ground truth first, untimed: the scoped kind scans only its collection's rows.
      const t0 = performance.now();
      const truths = Array.from({ length: QUERIES }, (_, i) =>
        truthOf(
          ds.vectors,
          kind.queries.subarray(i * DIM, (i + 1) * DIM),
          K,
          ids,
          kind.scope.collectionId ? oneColRows : allRows,
        ),
      );
      log(`${kind.name}: ground truth of ${QUERIES} queries in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      const load = load1();
      const stats: Record<string, { ms: number[]; found: number }> = {
        mem: { ms: [], found: 0 },
        pgv: { ms: [], found: 0 },
      };
      for (const s of sweep) stats[`ef${s.ef}`] = { ms: [], found: 0 };
      for (let i = 0; i < QUERIES; i++) {
        const q = kind.queries.slice(i * DIM, (i + 1) * DIM);
        const truth = truths[i];
        for (const [name, backend] of [
          ["mem", mem] as const,
          ["pgv", pgv] as const,
          ...sweep.map((s) => [`ef${s.ef}`, s.backend] as const),
        ]) {
          const t = performance.now();
          const hits = await backend.nearest({
            kind: "frames",
            scope: kind.scope,
            modelId: MODEL,
            query: q,
            k: K,
            probe: kind.probe,
          });
          stats[name].ms.push(performance.now() - t);
          stats[name].found += hits.filter((h) => truth.has(h.id)).length;
        }
      }
      rows.push({
        what: `${kind.name}: p50 / p99 ms, recall@10`,
        rows: ROWS,
        in_memory: `${r2(pct(stats.mem.ms, 50))} / ${r2(pct(stats.mem.ms, 99))}, ${r2(stats.mem.found / (QUERIES * K))}`,
        pgvector: `${r2(pct(stats.pgv.ms, 50))} / ${r2(pct(stats.pgv.ms, 99))}, ${r2(stats.pgv.found / (QUERIES * K))}`,
        ...Object.fromEntries(
          sweep.map((s) => {
            const st = stats[`ef${s.ef}`];
            return [
              `ef_search_${s.ef}`,
              `${r2(pct(st.ms, 50))} / ${r2(pct(st.ms, 99))}, ${r2(st.found / (QUERIES * K))}`,
            ];
          }),
        ),
        load1: load,
      });
      log(JSON.stringify(rows.at(-1)));
    }
    return { rows, url, accountId, mediaRoot };
  } finally {
    await app.close();
  }
}

/** (d) alone: the database (c) wrote and kept (no builds, no queries). */
async function keptVectors(pg: Awaited<ReturnType<typeof cluster>>, admin: postgres.Sql) {
  const db = `${DB_PREFIX}_vectors_${ROWS}${COPY ? "_copy" : ""}`;
  const mediaRoot = join(tmpdir(), "vsearch-pg-bench-media", db);
  const missing = `--parts d alone needs the database ${db} and its media root ${mediaRoot} that --parts c left`;
  if (!(await admin`SELECT 1 FROM pg_database WHERE datname = ${db}`).length) throw new Error(missing);
  const url = pg.urlFor(db);
  const one = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await one`SELECT account_id, count(*) OVER () AS n FROM frames LIMIT 1`;
    if (!row || Number(row.n) === 0) throw new Error(missing);
    return { url, mediaRoot, accountId: String(row.account_id) };
  } finally {
    await one.end();
  }
}

// ---- (d) warm-up from PostgreSQL, without and with the snapshot --------------------------------------

async function partD(url: string, mediaRoot: string, accountId: string, work: string) {
  const dataDir = join(work, "d");
  rmSync(dataDir, { recursive: true, force: true });
  const q = new Float32Array(DIM).fill(1 / Math.sqrt(DIM));
  const rows: Record<string, unknown>[] = [];
  for (const phase of [
    "no snapshot: every vector read from PostgreSQL",
    "the local snapshot, checked against the change log",
  ]) {
    const load = load1();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const app = await openApp({ dataDir, databaseUrl: url, mediaRoot, embedder: new FixedEmbedder(q, MODEL) });
    await app.start();
    const req = parseSearchRequest({ query: "anything", modes: "video" });
    let firstMs = 0;
    for (let n = 0; ; n++) {
      try {
        await app.services.search.search(accountId, req);
        firstMs = performance.now() - t0;
        break;
      } catch (e) {
        if ((e as { code?: string }).code !== "SEARCH_UNAVAILABLE" || n > 100_000) throw e;
        await Bun.sleep(50);
      }
    }
    await app.internals.search.indexes.whenVectorIndexIdle();
    const completeMs = performance.now() - t0;
    const cpu = process.cpuUsage(c0);
    const row = {
      phase,
      first_vector_search_s: r2(firstMs / 1000),
      index_complete_s: r2(completeMs / 1000),
      vsearch_cpu_s: r2((cpu.user + cpu.system) / 1e6),
      vectors: app.internals.search.indexes.memoryRows,
      readyz: app.internals.search.indexes.statusLine(),
      load1: load,
    };
    const s0 = performance.now();
    await app.close(); // writes the snapshot the second phase loads
    rows.push({ ...row, close_s: r2((performance.now() - s0) / 1000) });
    log(JSON.stringify(rows.at(-1)));
  }
  return rows;
}

async function main() {
  const started = new Date().toISOString();
  const load0 = loadavg();
  const work = mkdtempSync(join(tmpdir(), "vsearch-pg-bench-"));
  const pg = await cluster();
  const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
  const result: Record<string, unknown> = {
    started,
    cpu: cpus()[0]?.model ?? "unknown",
    cores: availableParallelism(),
    bun: Bun.version,
    postgres: (await admin`SHOW server_version`)[0].server_version,
    pgvector: (await admin`SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`)[0]
      ?.default_version,
    loadavgAtStart: load0,
    args: {
      parts: [...PARTS],
      frames: FRAMES,
      rows: ROWS,
      queries: QUERIES,
      secs: SECS,
      ingest_secs: INGEST_SECS,
      copy: COPY,
      kinds: [...KINDS],
      maintenance_work_mem: MAINTENANCE_WORK_MEM,
    },
  };
  try {
    if (PARTS.has("a"))
      table("(a) search over HTTP", (result.search = await partA(pg, admin, work)) as Record<string, unknown>[]);
    if (PARTS.has("b"))
      table("(b) ingest", (result.ingest = await partB(pg, admin, work)) as Record<string, unknown>[]);
    let c: { url: string; mediaRoot: string; accountId: string } | null = null;
    if (PARTS.has("c")) {
      const r = await partC(pg, admin, work);
      table(`(c) in-memory index vs pgvector HNSW, ${ROWS} rows`, (result.vectors = r.rows));
      c = r;
    } else if (PARTS.has("d")) c = await keptVectors(pg, admin);
    if (PARTS.has("d") && c)
      table(
        "(d) warm-up from PostgreSQL",
        (result.warmup = await partD(c.url, c.mediaRoot, c.accountId, work)) as Record<string, unknown>[],
      );
  } finally {
    result.loadavgAtEnd = loadavg();
    await admin.end();
    await pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");
  console.log(
    `\n${result.cpu}, ${result.cores} cores, PostgreSQL ${result.postgres}, pgvector ${result.pgvector}; load ${load0.map((x) => x.toFixed(2)).join(" ")} → ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}; wrote ${OUT}`,
  );
}

await main();
