/**
 * Start to first vector search after a restart, with and without the index snapshot (issue 27).
 *
 *   node_modules/.bin/bun bench/index-restart-bench.ts [--frames 1000000] [--changed 20] [--dir DIR]
 *
 * One account of `--frames` 512-d frames (clustered synthetic vectors, bench/lib/synthetic.ts; 1 000
 * frames a video), written once into a data dir that is kept (`--dir`, default
 * bench/results/restart-data: ~2.3 GB at 1 M; delete it when done). Then, side by side in one run:
 *
 *   before   no snapshot: `start()` reads every vector from the store (the warm-up pass) and the
 *            lists train; timed until a vector search of the account answers, and until the
 *            index is complete (no retrain left);
 *   save     `close()`: the snapshot written (file size, time);
 *   after    `start()` loads the snapshot, then reads again the videos changed since it was
 *            written (`--changed` videos re-indexed by a process that never started, as a CLI
 *            reindex would); timed the same way.
 *
 * RSS is this process's (the index lives in it); CPU is process CPU over the phase. The 1-minute
 * load average is written beside every figure: the box is shared. Prints a table and writes
 * bench/results/index-restart.json. Not a test.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { join } from "node:path";
import { type BenchApp, createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { IndexStore } from "../src/indexing/store.ts";
import { FixedEmbedder } from "./lib/fixed-embedder.ts";
import { parseSearchRequest } from "../src/search/schema.ts";
import { VideoStore } from "../src/videos/store.ts";
import { readyVideo } from "./lib/search-data.ts";
import { clusteredStream, generateQueries } from "./lib/synthetic.ts";

const argv = process.argv;
const arg = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : fallback;
};
const FRAMES = arg("frames", 1_000_000);
const CHANGED = arg("changed", 20);
const DIR = (() => {
  const i = argv.indexOf("--dir");
  return i > 0 ? argv[i + 1] : join(import.meta.dir, "results", "restart-data");
})();
const DIM = 512;
const PER_VIDEO = 1000;
const MODEL = "bench-clip@synthetic";
const OUT = join(import.meta.dir, "results", "index-restart.json");
const load1 = () => Math.round(loadavg()[0] * 100) / 100;
const r2 = (x: number) => Math.round(x * 100) / 100;
const rssMb = () => Math.round(process.memoryUsage().rss / 2 ** 20);

const stream = clusteredStream({ n: FRAMES, dim: DIM, seed: 3, framesPerVideo: PER_VIDEO });
// A text-like query is made from the generator's directions alone (no row is read).
const query = generateQueries({ ...stream, row: () => new Float32Array(DIM) }, 1, "text", 5);

async function open(): Promise<BenchApp> {
  const config = loadConfig({ dataDir: DIR, logLevel: "silent" }, { VSEARCH_RATE_LIMIT_SEARCH: "1000000" });
  return createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("silent"),
    queryEmbedder: new FixedEmbedder(query, MODEL),
  });
}

interface Meta {
  accountId: string;
  videos: string[];
  collectionId: string;
}

async function write(): Promise<Meta> {
  mkdirSync(DIR, { recursive: true });
  const app = await open();
  const s = app.services;
  const account = await s.accounts.createAccount({ name: "Bench", plan: "enterprise" });
  const col = await s.collections.create(account.id, { name: "c" });
  const index = new IndexStore(app.internals.db, true);
  const videos = new VideoStore(app.internals.db);
  const buf = new Float32Array(PER_VIDEO * DIM);
  const ids: string[] = [];
  const t0 = performance.now();
  for (let from = 0; from < FRAMES; from += PER_VIDEO) {
    const n = Math.min(PER_VIDEO, FRAMES - from);
    stream.fill(from, from + n, buf);
    const video_id = await readyVideo(app, videos, DIR, {
      accountId: account.id,
      collectionId: col.id,
      filename: `v${from}.mp4`,
      durationSecs: n,
    });
    await index.replaceFrames(
      { videoId: video_id, accountId: account.id, collectionId: col.id },
      Array.from({ length: n }, (_, k) => ({
        timestamp: k,
        shotIndex: Math.floor(k / 10),
        embedding: buf.subarray(k * DIM, (k + 1) * DIM),
      })),
      MODEL,
    );
    ids.push(video_id);
    if (ids.length % 100 === 0)
      console.log(`written ${from + n} frames, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  await app.close();
  const meta = { accountId: account.id, videos: ids, collectionId: col.id };
  writeFileSync(join(DIR, "bench.json"), JSON.stringify(meta));
  return meta;
}

/** start() until a vector search of the account answers (polled every 50 ms), then until no retrain is left. */
async function restart(meta: Meta, label: string) {
  const load = load1();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const app = await open();
  await app.start();
  const req = parseSearchRequest({ query: "anything", modes: "video" });
  let firstMs = 0;
  for (;;) {
    try {
      await app.services.search.search(meta.accountId, req);
      firstMs = performance.now() - t0;
      break;
    } catch (e) {
      if ((e as { code?: string }).code !== "SEARCH_UNAVAILABLE") throw e;
      await Bun.sleep(50);
    }
  }
  await app.internals.search.indexes.whenVectorIndexIdle();
  const completeMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const row = {
    phase: label,
    first_vector_search_s: r2(firstMs / 1000),
    index_complete_s: r2(completeMs / 1000),
    cpu_s: r2((cpu.user + cpu.system) / 1e6),
    vectors: app.internals.search.indexes.memoryRows,
    ready: app.internals.search.indexes.statusLine(),
    rss_mb: rssMb(),
    load1: load,
  };
  console.log(JSON.stringify(row));
  return { app, row };
}

async function main() {
  const started = new Date().toISOString();
  const load0 = loadavg();
  const meta = existsSync(join(DIR, "bench.json"))
    ? (JSON.parse(readFileSync(join(DIR, "bench.json"), "utf8")) as Meta)
    : await write();
  const snap = join(DIR, "index", "vectors.snap");
  rmSync(snap, { force: true });
  const rows: Record<string, unknown>[] = [];

  const before = await restart(meta, "before: no snapshot, every vector read from the store");
  rows.push(before.row);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await before.app.close();
  const saveMs = performance.now() - t0;
  const saveCpu = process.cpuUsage(c0);
  rows.push({
    phase: "close(): snapshot written",
    seconds: r2(saveMs / 1000),
    cpu_s: r2((saveCpu.user + saveCpu.system) / 1e6),
    file_mb: existsSync(snap) ? Math.round(statSync(snap).size / 2 ** 20) : null,
    load1: load1(),
  });

  // Videos re-indexed while no server runs (what a CLI reindex does): read again after the load.
  if (CHANGED > 0) {
    const app = await open();
    const index = new IndexStore(app.internals.db, true);
    // New rows for every 7th video, from a stream of another seed.
    const again = clusteredStream({ n: CHANGED * PER_VIDEO, dim: DIM, seed: 4, framesPerVideo: PER_VIDEO });
    const buf = new Float32Array(PER_VIDEO * DIM);
    for (let i = 0; i < CHANGED; i++) {
      again.fill(i * PER_VIDEO, (i + 1) * PER_VIDEO, buf);
      await index.replaceFrames(
        {
          videoId: meta.videos[(i * 7) % meta.videos.length],
          accountId: meta.accountId,
          collectionId: meta.collectionId,
        },
        Array.from({ length: PER_VIDEO }, (_, k) => ({
          timestamp: k,
          shotIndex: Math.floor(k / 10),
          embedding: buf.subarray(k * DIM, (k + 1) * DIM),
        })),
        MODEL,
      );
    }
    await app.close();
  }
  const after = await restart(meta, `after: the snapshot loaded, ${CHANGED} changed videos read again`);
  rows.push(after.row);
  await after.app.close();

  const result = {
    started,
    cpu: cpus()[0]?.model ?? "unknown",
    cores: availableParallelism(),
    bun: Bun.version,
    loadavgAtStart: load0,
    loadavgAtEnd: loadavg(),
    frames: FRAMES,
    rows,
  };
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");
  for (const r of rows) console.log(JSON.stringify(r));
  console.log(`wrote ${OUT}; the data dir ${DIR} is kept (delete it when done)`);
}

await main();
