/**
 * Idle memory: an app built by createApp (as `serve` builds it) with the full-size CLIP ViT-B/32
 * vision tower and Whisper tiny.en (random weights, real architectures, from
 * ../shared/fixtures/models) indexes a 20 s 720p clip with audio, then sits idle. Reports this
 * process's RSS when fresh, right after the job, after the models were unloaded
 * (VSEARCH_MODEL_IDLE_UNLOAD_SECS, 10 s here), and the reload cost: what the first task after
 * unloading pays to load each model again (the worker's own load time), against a warm call.
 * Target: an idle server returns to < 150 MB.
 *
 *   node_modules/.bin/bun bench/idle-rss.ts [--idle 10]
 *
 * Prints a table and writes bench/results/idle-rss.json. Not a test.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import type { ActiveModel } from "../src/models/roles.ts";

const ROOT = join(import.meta.dirname, "..");
const SHARED = join(ROOT, "..", "shared", "fixtures", "models");
const CLIP: ActiveModel = { name: "bench-clip", dir: join(SHARED, "bench-clip-vit-base-patch32"), dtype: "q8", modelId: "bench-clip@bench" };
const WHISPER: ActiveModel = { name: "bench-whisper", dir: join(SHARED, "bench-whisper-tiny.en"), dtype: "q8", modelId: "bench-whisper@bench" };
const OUT = join(ROOT, "bench", "results", "idle-rss.json");
const idleArg = process.argv.indexOf("--idle");
const IDLE_SECS = idleArg > 0 ? Number(process.argv[idleArg + 1]) : 10;
if (!existsSync(CLIP.dir) || !existsSync(WHISPER.dir)) {
  console.error(`needs ${CLIP.dir} and ${WHISPER.dir}`);
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "vsearch-idle-bench-"));
const load = () => loadavg()[0].toFixed(2);
const rssMb = () => process.memoryUsage().rss / 1e6;

const clip = join(dir, "clip.mp4");
const ff = Bun.spawn([ffmpegInstaller.path, "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25:duration=20",
  "-f", "lavfi", "-i", "sine=frequency=440:duration=20", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-pix_fmt", "yuv420p",
  "-c:a", "aac", "-shortest", clip]);
if ((await ff.exited) !== 0) throw new Error("ffmpeg failed");

const config = loadConfig({ dataDir: join(dir, "data"), logLevel: "warn" }, { VSEARCH_MODEL_IDLE_UNLOAD_SECS: String(IDLE_SECS), VSEARCH_DEVICE: "cpu", VSEARCH_SPEECH_MAX_TOKENS: "106" });
const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models: { active: (r) => (r === "image-text" ? CLIP : r === "speech" ? WHISPER : null) } });
try {
  Bun.gc(true);
  const fresh = { rss: rssMb(), load: load() };
  const acct = app.services.accounts.createAccount({ name: "bench" });
  const col = app.services.collections.create(acct.id, { name: "bench" });
  const { job_id } = await app.services.uploads.ingestFile(acct.id, col.id, clip, { force: true });
  if (!job_id) throw new Error("the clip was not queued");
  app.internals.runner.start();
  const deadline = Date.now() + 300_000;
  let status = "";
  while (Date.now() < deadline && status !== "done" && status !== "failed") {
    await Bun.sleep(100);
    status = app.services.jobs.get(acct.id, job_id).status;
  }
  if (status !== "done") throw new Error(`job ended ${status}`);
  const afterJob = { rss: rssMb(), load: load() };

  const inference = app.internals.inference;
  const waitUntil = Date.now() + (IDLE_SECS * 1.25 + 10) * 1000;
  while (Date.now() < waitUntil && inference.started) await Bun.sleep(100);
  const unloaded = !inference.started;
  // The host trims 1 s and 11 s after closing the pools; read RSS once both have passed.
  await Bun.sleep(12_000);
  const afterUnload = { rss: rssMb(), load: load(), unloaded };

  // The reload: the first task of each kind starts a worker and loads its model again.
  const pool = await inference.get();
  const frame = () => [{ rgb: new Uint8Array(224 * 224 * 3).fill(90), width: 224, height: 224 }];
  const audio = () => [{ samples: new Float32Array(16000 * 5), offsetSecs: 0 }];
  const timed = async <T extends { worker: { loadMs: number } }>(f: () => Promise<T>) => {
    const t0 = performance.now();
    const r = await f();
    return { wallMs: performance.now() - t0, loadMs: r.worker.loadMs };
  };
  const clipCold = await timed(() => pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, frame()));
  const clipWarm = await timed(() => pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, frame()));
  const whisperCold = await timed(() => pool.transcribeWindows({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 8 }, audio()));
  const whisperWarm = await timed(() => pool.transcribeWindows({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 8 }, audio()));
  const reloaded = { rss: rssMb(), load: load() };

  const rows = [
    ["fresh app, no model loaded", fresh.rss.toFixed(0), fresh.load],
    ["right after a 20 s 720p ingest (CLIP + Whisper loaded)", afterJob.rss.toFixed(0), afterJob.load],
    [`idle ${IDLE_SECS} s: models unloaded${unloaded ? "" : " (NOT seen)"}`, afterUnload.rss.toFixed(0), afterUnload.load],
    ["both models loaded again", reloaded.rss.toFixed(0), reloaded.load],
  ];
  console.log(`\nIdle memory (${cpus()[0]?.model ?? "cpu"}, ${cpus().length} cores)\n`);
  console.log("| state | RSS MB | load avg (1 min) |\n|---|---|---|");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log("\n| reload after unloading | first call ms | of which model load ms | warm call ms |\n|---|---|---|---|");
  console.log(`| CLIP vision, 1 frame | ${clipCold.wallMs.toFixed(0)} | ${clipCold.loadMs.toFixed(0)} | ${clipWarm.wallMs.toFixed(0)} |`);
  console.log(`| Whisper tiny.en, one 5 s window, 8 tokens | ${whisperCold.wallMs.toFixed(0)} | ${whisperCold.loadMs.toFixed(0)} | ${whisperWarm.wallMs.toFixed(0)} |`);
  console.log(`(load avg ${load()})`);
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ idleSecs: IDLE_SECS, fresh, afterJob, afterUnload, reloaded, clipCold, clipWarm, whisperCold, whisperWarm }, null, 2));
  console.log(`wrote ${OUT}`);
} finally {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
