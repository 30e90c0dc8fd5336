/**
 * `vsearch migrate-store` throughput (issue 25): an embedded install of `--frames` 512-d frames
 * (1 000 a video, clustered synthetic vectors) copied into an empty PostgreSQL database.
 *
 *   node_modules/.bin/bun bench/migrate-store-bench.ts --to postgres://…/empty_db [--frames 100000] [--dir DIR]
 *
 * The install is written once into `--dir` (default bench/results/migrate-data; ~230 MB at 100 k
 * frames; kept for the next run, delete it when done). The copy is timed end to end (open and
 * migrate the target, copy, move sequences, verify, commit) and per table (rows/s of frames and
 * frame_vectors: the bulk). `--to` must be an empty vsearch database (a new one each run: the
 * copy refuses a non-empty target). Prints a table with the 1-minute load average beside it and
 * writes bench/results/migrate-store.json. Not a test.
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { IndexStore } from "../src/indexing/store.ts";
import { migrateStore } from "../src/store/migrate-store.ts";
import { VideoStore } from "../src/videos/store.ts";
import { readyVideo } from "./lib/search-data.ts";
import { clusteredStream } from "./lib/synthetic.ts";

const argv = process.argv;
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? argv[i + 1] : undefined;
};
const TO = opt("to");
if (!TO) throw new Error("--to postgres://…/empty_database is required");
const FRAMES = Number(opt("frames") ?? 100_000);
const DIR = opt("dir") ?? join(import.meta.dir, "results", "migrate-data");
const DIM = 512;
const PER_VIDEO = 1000;
const OUT = join(import.meta.dir, "results", "migrate-store.json");
const load1 = () => Math.round(loadavg()[0] * 100) / 100;

async function write(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  const config = loadConfig({ dataDir: DIR, logLevel: "silent" }, {});
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent") });
  const account = await app.services.accounts.createAccount({ name: "Bench", plan: "enterprise" });
  const col = await app.services.collections.create(account.id, { name: "c" });
  // No sqlite-vec rows: migrate-store does not read them.
  const index = new IndexStore(app.internals.db, false);
  const videos = new VideoStore(app.internals.db);
  const stream = clusteredStream({ n: FRAMES, dim: DIM, seed: 25, framesPerVideo: PER_VIDEO });
  const buf = new Float32Array(PER_VIDEO * DIM);
  for (let from = 0; from < FRAMES; from += PER_VIDEO) {
    const n = Math.min(PER_VIDEO, FRAMES - from);
    stream.fill(from, from + n, buf);
    const videoId = await readyVideo(app, videos, DIR, {
      accountId: account.id,
      collectionId: col.id,
      filename: `v${from}.mp4`,
      durationSecs: n,
    });
    await index.replaceFrames(
      { videoId, accountId: account.id, collectionId: col.id },
      Array.from({ length: n }, (_, k) => ({
        timestamp: k,
        shotIndex: 0,
        embedding: buf.subarray(k * DIM, (k + 1) * DIM),
      })),
      "bench-clip@synthetic",
    );
  }
  await app.close();
  writeFileSync(join(DIR, "bench.json"), JSON.stringify({ frames: FRAMES }));
}

if (!existsSync(join(DIR, "bench.json"))) await write();

const tableStart = new Map<string, number>();
const tableMs = new Map<string, number>();
const loadBefore = load1();
const t0 = performance.now();
const report = await migrateStore({
  fromDir: DIR,
  to: TO,
  onProgress: (p) => {
    if (p.done === 0) tableStart.set(p.table, performance.now());
    if (p.done === p.total) tableMs.set(p.table, performance.now() - (tableStart.get(p.table) ?? performance.now()));
  },
});
const totalS = (performance.now() - t0) / 1000;
const rows = (t: string) => report.tables.find((x) => x.table === t)?.rows ?? 0;
const perS = (t: string) => Math.round(rows(t) / Math.max((tableMs.get(t) ?? 0) / 1000, 0.001));
const result = {
  machine: { cpu: cpus()[0]?.model, cores: availableParallelism() },
  frames: FRAMES,
  dim: DIM,
  source_mb: Math.round(statSync(join(DIR, "vsearch.db")).size / 2 ** 20),
  rows: report.rows,
  total_s: Math.round(totalS * 10) / 10,
  rows_per_s: Math.round(report.rows / totalS),
  frames_per_s: perS("frames"),
  frame_vectors_per_s: perS("frame_vectors"),
  vectors_compared: report.verified.vectors_compared,
  load_before: loadBefore,
  load_after: load1(),
};
console.table([result]);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(OUT, JSON.stringify(result, null, 2));
