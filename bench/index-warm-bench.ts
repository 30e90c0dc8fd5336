/**
 * The in-memory index after a restart (issue 14): rows loaded per second, and how long the event
 * loop stalls, while an account's N frames go into the index — before (read synchronously inside
 * the account's first search, the lazy path the CLI still uses) and after (the background warm-up
 * that `app.start()` runs: 8 ms slices of 512-row pages), side by side in one run on one data file.
 *
 *   node_modules/.bin/bun bench/index-warm-bench.ts [--frames 1000000] [--dim 512]
 *
 * The inverted lists (src/vector) train in background slices as a partition grows: after a
 * synchronous load all of that is still to do, during the warm-up most of it runs between the
 * warm-up's slices — the "list training left" rows time what remains after each.
 *
 * Stall: a 2 ms interval timer records how late each tick fires (the longest and the 99th
 * percentile lateness), and a GET /healthz through the app every 20 ms records its latency — what a
 * health check or another tenant's request waits. Data: random unit vectors (load cost does not
 * depend on content), 1 000 frames per video, one large account plus a 1 000-frame one written
 * after it; the small account's synchronous load is timed too (its rows are found by a scan of
 * the whole frames table: there is no index on account_id). 1-minute load average beside every
 * figure. Prints a table and writes bench/results/index-warm.json. Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchApp, createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { IndexStore } from "../src/indexing/store.ts";
import { VideoStore } from "../src/videos/store.ts";
import { readyVideo } from "./lib/search-data.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const FRAMES = arg("frames", 1_000_000);
const DIM = arg("dim", 512);
const PER_VIDEO = 1000;
const SMALL = 1000;
const MODEL = "bench-clip@synthetic";
const OUT = fileURLToPath(new URL("./results/index-warm.json", import.meta.url));
const load1 = () => Math.round(loadavg()[0] * 100) / 100;
const r2 = (x: number) => Math.round(x * 100) / 100;

function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Event-loop lateness (a 2 ms interval) and /healthz latency (every 20 ms) while `run` goes on. */
async function watched(app: BenchApp, run: () => Promise<void>) {
  const late: number[] = [];
  const health: number[] = [];
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    late.push(Math.max(0, now - last - 2));
    last = now;
  }, 2);
  const probes: Promise<void>[] = [];
  const probe = setInterval(() => {
    const t0 = performance.now();
    probes.push(
      Promise.resolve(app.fetch(new Request("http://bench/healthz"))).then(
        () => void health.push(performance.now() - t0),
      ),
    );
  }, 20);
  const loadBefore = load1();
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  // One more turn so a timer held back by a synchronous run records how late it was.
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(tick);
  clearInterval(probe);
  await Promise.all(probes);
  const sorted = [...late].sort((a, b) => a - b);
  return {
    ms,
    max_stall_ms: r2(sorted.at(-1) ?? 0),
    p99_stall_ms: r2(sorted[Math.floor(sorted.length * 0.99)] ?? 0),
    healthz_max_ms: r2(Math.max(0, ...health)),
    healthz_answered: health.length,
    load1: [loadBefore, load1()],
  };
}

async function main() {
  const started = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), "vsearch-warm-bench-"));
  const config = loadConfig({ dataDir: dir, logLevel: "silent" }, {});
  const open = async () => createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent") });
  try {
    // ---- data: written once, through the index store (no vec0 table: the memory index reads frame_vectors) ----
    const t0 = performance.now();
    const loadAtWrite = load1();
    const writer = await open();
    const s = writer.services;
    const ids: Record<"big" | "small", string> = {
      big: (await s.accounts.createAccount({ name: "Big", plan: "enterprise" })).id,
      small: (await s.accounts.createAccount({ name: "Small", plan: "enterprise" })).id,
    };
    const index = new IndexStore(writer.internals.db, false);
    const videos = new VideoStore(writer.internals.db);
    const r = prng(7);
    const write = async (accountId: string, frames: number) => {
      const col = (await s.collections.create(accountId, { name: "c" })).id;
      for (let done = 0; done < frames; done += PER_VIDEO) {
        const n = Math.min(PER_VIDEO, frames - done);
        const video_id = await readyVideo(writer, videos, dir, {
          accountId,
          collectionId: col,
          filename: `v${done}.mp4`,
          durationSecs: n,
        });
        const vectors = new Float32Array(n * DIM);
        for (let i = 0; i < vectors.length; i++) vectors[i] = r() - 0.5;
        await index.replaceFrames(
          { videoId: video_id, accountId, collectionId: col },
          Array.from({ length: n }, (_, k) => ({
            timestamp: k,
            shotIndex: 0,
            embedding: vectors.subarray(k * DIM, (k + 1) * DIM),
          })),
          MODEL,
        );
      }
    };
    await write(ids.big, FRAMES);
    await write(ids.small, SMALL);
    await writer.close();
    const writeMs = performance.now() - t0;
    console.log(
      `wrote ${FRAMES + SMALL} frames (${DIM}-d) in ${Math.round(writeMs / 1000)} s (load ${loadAtWrite} → ${load1()})`,
    );

    const query = new Float32Array(DIM).fill(1 / Math.sqrt(DIM));
    const firstSearch = async (app: BenchApp, accountId: string) =>
      await app.internals.search.indexes.nearest({
        kind: "frames",
        scope: { accountId },
        modelId: MODEL,
        query,
        k: 10,
      });

    // ---- before: the account's rows read inside its first search ----------------------------------
    const before = await open();
    const sync = await watched(before, async () => void firstSearch(before, ids.big));
    const syncRows = before.internals.search.indexes.memoryRows;
    // The inverted lists train in the background once a partition grows (src/vector): during a
    // synchronous load they wait for it to end, during the warm-up they run between its slices.
    const syncTrained = await watched(before, () => before.internals.search.indexes.whenVectorIndexIdle());
    const small = await watched(before, async () => void firstSearch(before, ids.small));
    await before.close();
    Bun.gc(true);

    // ---- after: the background warm-up of app.start() ----------------------------------------------
    const after = await open();
    const warm = await watched(after, async () => {
      await after.start();
      while (after.internals.search.indexes.warmStatus?.state === "warming")
        await new Promise((res) => setTimeout(res, 10));
    });
    const warmRows = after.internals.search.indexes.memoryRows;
    const warmTrained = await watched(after, () => after.internals.search.indexes.whenVectorIndexIdle());
    const longestSliceMs = r2(after.internals.search.indexes.warmStatus?.longestSliceMs ?? 0);
    const longestSliceCpuMs = r2(after.internals.search.indexes.warmStatus?.longestSliceCpuMs ?? 0);
    const searchAfter = await watched(after, async () => void firstSearch(after, ids.big));
    await after.close();

    const row = (name: string, rows: number, m: Awaited<ReturnType<typeof watched>>) => ({
      path: name,
      rows,
      seconds: r2(m.ms / 1000),
      rows_per_s: Math.round(rows / (m.ms / 1000)),
      max_stall_ms: m.max_stall_ms,
      p99_stall_ms: m.p99_stall_ms,
      healthz_max_ms: m.healthz_max_ms,
      healthz_answered: m.healthz_answered,
      load1: m.load1.join(" → "),
    });
    const rows = [
      row("before: synchronous, in the first search", syncRows, sync),
      row("before: then list training left", 0, syncTrained),
      row("after: background warm-up (8 ms slices)", warmRows, warm),
      row("after: then list training left", 0, warmTrained),
      row("after: first search once warm", 0, searchAfter),
      row(`before: small account (${SMALL} rows) first search`, SMALL, small),
    ];
    const result = {
      started,
      cpu: cpus()[0]?.model ?? "unknown",
      cores: availableParallelism(),
      bun: Bun.version,
      data: { frames: FRAMES, small_account_frames: SMALL, dim: DIM, write_ms: Math.round(writeMs) },
      /** The longest warm-up slice as the warmer timed it (its own work, without waits for the CPU between turns). */
      warm_longest_slice_ms: longestSliceMs,
      /** Process CPU time during that slice (all threads): far below its wall time, the machine kept us waiting. */
      warm_longest_slice_cpu_ms: longestSliceCpuMs,
      rows,
    };
    mkdirSync(join(OUT, ".."), { recursive: true });
    writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");

    console.log(
      `index warm-up bench: ${FRAMES} frames (${DIM}-d) in one account + ${SMALL} in another; ${result.cpu}, ${result.cores} cores, Bun ${Bun.version}`,
    );
    const cols = Object.keys(rows[0]) as (keyof (typeof rows)[0])[];
    const w = cols.map((c) => Math.max(c.length, ...rows.map((x) => String(x[c]).length)));
    console.log(cols.map((c, i) => c.padEnd(w[i])).join("  "));
    for (const x of rows) console.log(cols.map((c, i) => String(x[c]).padEnd(w[i])).join("  "));
    console.log(
      `longest warm-up slice (as the warmer timed it): ${longestSliceMs} ms wall, ${longestSliceCpuMs} ms process CPU`,
    );
    console.log(`wrote ${OUT}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
