/**
 * What one text search (all modes, POST /v1/search) asks PostgreSQL (issue 27 follow-up): the
 * account of bench/lib/search-data.ts (`--frames` synthetic frames, ~1/8 as many transcript
 * segments) written into a throw-away cluster started with pg_stat_statements (track_planning on),
 * one `serve`-role app on it (the query encoder bench/scale-out-search.ts gives it), `--warmup`
 * searches not counted, then the statistics reset and `--searches` searches sent one at a time,
 * each a four-word query never asked before. Reported: each statement's calls, execution and
 * planning ms, and shared buffers read, per search; and the CPU PostgreSQL's processes spent per
 * search (/proc), beside the load average.
 *
 *   node_modules/.bin/bun bench/pg-search-statements.ts [--frames 100000] [--searches 300] [--warmup 200] [--hold SECS]
 *
 * Prints a table and writes bench/results/pg-search-statements.json.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { bunServeOptions } from "../src/http/serve-options.ts";
import { findPostgres, startCluster } from "../test/pg/cluster.ts";
import { FixedEmbedder } from "./lib/fixed-embedder.ts";
import { childrenOf, cpuOf } from "./lib/proc-cpu.ts";
import { BenchEmbedder, DIM, MODEL, searchDataset, tinyTextTower, WORDS, writeSearchData } from "./lib/search-data.ts";
import { generateQueries } from "./lib/synthetic.ts";
import { argValue as str } from "./lib/args.ts";

const FRAMES = Number(str("frames") ?? 100_000);
const SEARCHES = Number(str("searches") ?? 300);
const WARMUP = Number(str("warmup") ?? 200);
const HOLD = Number(str("hold") ?? 0);
const OUT = join(import.meta.dir, "results", "pg-search-statements.json");
const r3 = (x: number) => Math.round(x * 1000) / 1000;

const found = findPostgres();
if ("missing" in found) throw new Error(`no PostgreSQL: ${found.missing}`);
const cluster = await startCluster(found.bin, [
  "shared_preload_libraries = 'pg_stat_statements'",
  "pg_stat_statements.track_planning = on",
  "pg_stat_statements.max = 1000",
]);
const work = mkdtempSync(join(tmpdir(), "vsearch-pg-statements-"));
const admin = postgres(cluster.adminUrl, { max: 1, onnotice: () => {} });
const dbUrl = cluster.urlFor("search_statements");
const closers: (() => Promise<unknown>)[] = [];
try {
  await admin.unsafe("CREATE DATABASE search_statements");
  const db = postgres(dbUrl, { max: 1, onnotice: () => {} });
  closers.push(() => db.end({ timeout: 1 }));
  await db.unsafe("CREATE EXTENSION pg_stat_statements");

  const ds = searchDataset(FRAMES);
  const seedDir = join(work, "seed");
  const seedConfig = loadConfig(
    { dataDir: seedDir, logLevel: "silent", host: "127.0.0.1", port: 0 },
    { VSEARCH_DATABASE_URL: dbUrl },
  );
  const seeder = await createApp(seedConfig, {
    runtime: await resolveRuntime(seedConfig),
    logger: createLogger("silent"),
    queryEmbedder: new FixedEmbedder(new Float32Array(DIM).fill(1 / Math.sqrt(DIM)), MODEL),
  });
  const data = await writeSearchData(seeder, ds, seedDir);
  await seeder.close();
  await db.unsafe("VACUUM ANALYZE");
  console.log(
    `${FRAMES} frames, ${data.transcriptSegments} transcript segments written in ${r3(data.insertMs / 1000)} s`,
  );

  // The serving app, as bench/lib/scale-search-server.ts opens it.
  const tower = await tinyTextTower();
  closers.unshift(() => tower.close());
  const config = loadConfig(
    { dataDir: join(work, "serve"), logLevel: "silent", host: "127.0.0.1", port: 0 },
    {
      VSEARCH_RATE_LIMIT_SEARCH: "1000000",
      VSEARCH_DATABASE_URL: dbUrl,
      VSEARCH_MEDIA_ROOT: seedDir,
      VSEARCH_LOG_LEVEL: "warn",
    },
  );
  const app = await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("silent"),
    queryEmbedder: new BenchEmbedder(tower.encode, generateQueries(ds, 400, "text", 9)),
    applicationName: "bench serve",
    role: "serve",
  });
  closers.unshift(() => app.close());
  await app.start();
  const server = Bun.serve(bunServeOptions(app, app.config));
  closers.unshift(() => server.stop(true));
  const url = `http://127.0.0.1:${server.port}/v1/search`;

  let counter = 0;
  const search = async (text: string): Promise<number> => {
    const res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${data.key}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ query: text }).toString(),
    });
    await res.arrayBuffer();
    return res.status;
  };
  /** Four query words, a new combination per call, as bench/scale-out-search.ts asks them. */
  const newText = () => {
    const c = 1 + 37 * counter++;
    return [1, 20, 400, 8000].map((d) => WORDS[Math.floor(c / d) % 20]).join(" ");
  };
  // Bounded: 503 while the in-memory index warms (seconds).
  for (let i = 0; i < 600 && (await search("warm")) !== 200; i++) await Bun.sleep(500);
  await app.internals.search.indexes.whenVectorIndexIdle();
  for (let i = 0; i < WARMUP; i++) await search(newText());

  const postmaster = Number(readFileSync(join(cluster.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  await db.unsafe("SELECT pg_stat_statements_reset()");
  const load = loadavg()[0];
  const pg0 = cpuOf([postmaster, ...childrenOf(postmaster)]);
  const t0 = performance.now();
  let failed = 0;
  for (let i = 0; i < SEARCHES; i++) if ((await search(newText())) !== 200) failed++;
  const wallMs = performance.now() - t0;
  const pgMs = cpuOf([postmaster, ...childrenOf(postmaster)]) - pg0;
  const stats = await db.unsafe<
    { query: string; calls: string; exec: number; plan: number; plans: string; hit: string; read: string }[]
  >(
    `SELECT query, calls, total_exec_time AS exec, total_plan_time AS plan, plans,
            shared_blks_hit AS hit, shared_blks_read AS read
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
      ORDER BY total_exec_time + total_plan_time DESC`,
  );
  const rows = stats
    .filter((s) => !s.query.includes("pg_stat_statements"))
    .map((s) => ({
      calls_per_search: r3(Number(s.calls) / SEARCHES),
      exec_ms_per_search: r3(s.exec / SEARCHES),
      plan_ms_per_search: r3(s.plan / SEARCHES),
      plans_per_search: r3(Number(s.plans) / SEARCHES),
      blks_per_search: r3((Number(s.hit) + Number(s.read)) / SEARCHES),
      query: s.query.replace(/\s+/g, " ").slice(0, 160),
    }));
  const sum = (k: "calls_per_search" | "exec_ms_per_search" | "plan_ms_per_search") =>
    r3(rows.reduce((a, r) => a + r[k], 0));
  const summary = {
    at: new Date().toISOString(),
    frames: FRAMES,
    searches: SEARCHES,
    failed,
    ms_per_search: r3(wallMs / SEARCHES),
    postgres_cpu_ms_per_search: r3(pgMs / SEARCHES),
    statements_per_search: sum("calls_per_search"),
    exec_ms_per_search: sum("exec_ms_per_search"),
    plan_ms_per_search: sum("plan_ms_per_search"),
    load1: r3(load),
  };
  console.table(rows.slice(0, 30));
  console.log(JSON.stringify(summary));
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ ...summary, statements: rows }, null, 2));
  console.log(`wrote ${OUT}`);
  if (HOLD > 0) {
    // For EXPLAIN by hand: the cluster stays up (the app too) until HOLD seconds pass or DONE appears.
    console.log(`holding ${dbUrl} for ${HOLD} s (touch ${join(work, "DONE")} to end)`);
    for (let i = 0; i < HOLD && !existsSync(join(work, "DONE")); i++) await Bun.sleep(1000);
  }
} finally {
  for (const close of closers) await close().catch(() => {});
  await admin.end({ timeout: 1 });
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
}
