/**
 * Ingest speed and memory (issue 3 targets), with the full-size random-weight benchmark models
 * from ../shared/fixtures/models and a 1080p H.264 clip made by ffmpeg:
 *   - ×realtime for visual-only and for visual + speech (Whisper tiny.en int8)
 *   - images/s of the CLIP image encoder alone (same pool, same batch size)
 *   - pipeline overhead over pure model time
 *   - peak RSS of the whole process (main thread + worker threads)
 * Run: npx bun bench/ingest-bench.ts [--secs 60]   → prints a table, writes bench/results/ingest.json
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { streamAudio16kMono } from "../src/media/audio.ts";
import type { ActiveModel, ModelCatalog } from "../src/pipeline/deps.ts";

const ROOT = join(import.meta.dirname, "..");
const SHARED = join(ROOT, "..", "shared", "fixtures");
const CLIP: ActiveModel = { name: "bench-clip", dir: join(SHARED, "models", "bench-clip-vit-base-patch32"), dtype: "q8", modelId: "bench-clip@q8" };
const WHISPER: ActiveModel = { name: "bench-whisper", dir: join(SHARED, "models", "bench-whisper-tiny.en"), dtype: "q8", modelId: "bench-whisper@q8" };
const secsArg = process.argv.indexOf("--secs");
const SECS = secsArg > 0 ? Number(process.argv[secsArg + 1]) : 60;

if (!existsSync(CLIP.dir) || !existsSync(WHISPER.dir)) {
  console.log(`benchmark models not found under ${SHARED}/models; nothing to measure`);
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), "vsearch-ingest-bench-"));
const env = { ...process.env, VSEARCH_LOG_LEVEL: "warn" };

async function run(cmd: string[]) {
  const p = Bun.spawn(cmd, { stdout: "ignore", stderr: "pipe" });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`${cmd[0]} failed: ${err}`);
}

const CLIPS = join(ROOT, "..", "shared", "media", "video", "clips");
const REAL = ["mdnla_frog.mp4", "exo_big_buck_bunny_10s.mp4", "exo_london_skyline_360p.mp4", "mdn_flower.webm", "mdnla_rabbit.mp4", "exo_seagull_sample.avi", "mdnla_pig.mp4", "mdn_stream-of-water.mp4"];

/**
 * 1080p30 H.264 with a 2 s GOP (typical of cameras and web video), made of real footage (the
 * shared clips, upscaled and cut together, so there are real shot changes and real motion) with
 * real speech looped under it. Synthetic test patterns are too static: near-duplicate dropping
 * would hide most of the model work.
 */
async function makeClip(ffmpeg: string): Promise<string> {
  const out = join(work, `bench-1080p-${SECS}s.mp4`);
  const speech = join(SHARED, "testdata", "speech30s.wav");
  const clips = REAL.map((f) => join(CLIPS, f)).filter(existsSync);
  const args = ["-hide_banner", "-loglevel", "error", "-y"];
  let filter = "";
  if (clips.length) {
    clips.forEach((c) => args.push("-i", c));
    filter = clips.map((_, i) => `[${i}:v]scale=1920:1080:force_original_aspect_ratio=increase,crop=1920:1080,fps=30,setsar=1,format=yuv420p[v${i}]`).join(";");
    filter += `;${clips.map((_, i) => `[v${i}]`).join("")}concat=n=${clips.length}:v=1:a=0,loop=loop=-1:size=32767,trim=duration=${SECS}[v]`;
  } else {
    args.push("-f", "lavfi", "-i", `testsrc2=size=1920x1080:rate=30:duration=${SECS}`);
    filter = "[0:v]null[v]";
  }
  args.push("-stream_loop", "-1", "-i", speech, "-filter_complex", filter, "-map", "[v]", "-map", `${clips.length || 1}:a`, "-t", String(SECS),
    "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac", out);
  await run([ffmpeg, ...args]);
  return out;
}

const catalog = (m: Partial<Record<"image-text" | "speech", ActiveModel>>): ModelCatalog => ({ active: (r) => (m as any)[r] ?? null });

async function ingestOnce(clip: string, models: ModelCatalog, label: string) {
  const dataDir = join(work, label);
  const config = loadConfig({ dataDir, logLevel: "warn" }, env);
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models });
  try {
    const acct = app.services.accounts.createAccount({ name: "bench" });
    const col = app.services.collections.create(acct.id, { name: "bench" });
    // Warm the pool (model load is a one-time cost, reported separately).
    const t0 = performance.now();
    const pool = await app.inference.get();
    if (models.active("image-text")) await pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, [{ rgb: new Uint8Array(224 * 224 * 3), width: 224, height: 224 }]);
    if (models.active("speech")) await pool.transcribe({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 4 }, new Float32Array(16000), 0);
    const loadMs = performance.now() - t0;
    const { job_id, video_id } = await app.services.uploads.ingestFile(acct.id, col.id, clip);
    const start = performance.now();
    app.runner.start();
    for (;;) {
      const job = app.services.jobs.get(acct.id, job_id);
      if (job.status === "done" || job.status === "failed") {
        if (job.status === "failed") throw new Error(`${label}: job failed ${JSON.stringify(job.error)}`);
        break;
      }
      await Bun.sleep(50);
    }
    const wallMs = performance.now() - start;
    const video = app.services.videos.get(acct.id, video_id);
    return { wallMs, loadMs, stages: video.stages, frames: video.stages.embeddings?.count ?? 0, duration: video.duration_secs ?? SECS };
  } finally {
    await app.close();
  }
}

async function encoderAlone(batch: number, n: number) {
  const config = loadConfig({ dataDir: join(work, "enc"), logLevel: "warn" }, env);
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models: catalog({ "image-text": CLIP }) });
  try {
    const pool = await app.inference.get();
    const frame = () => ({ rgb: new Uint8Array(224 * 224 * 3).map((_, i) => (i * 7919) % 251), width: 224, height: 224 });
    await pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype, batchSize: batch }, Array.from({ length: batch }, frame));
    const t0 = performance.now();
    for (let i = 0; i < n; i += batch) await pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype, batchSize: batch }, Array.from({ length: batch }, frame));
    return (n / (performance.now() - t0)) * 1000;
  } finally {
    await app.close();
  }
}

async function whisperAlone(clip: string, ffmpeg: string, ffprobe: string) {
  const config = loadConfig({ dataDir: join(work, "wh"), logLevel: "warn" }, env);
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models: catalog({ speech: WHISPER }) });
  try {
    const pool = await app.inference.get();
    const windows = [];
    for await (const w of streamAudio16kMono({ ffmpeg, ffprobe }, clip)) windows.push(w);
    await pool.transcribe({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 4 }, new Float32Array(16000), 0);
    const t0 = performance.now();
    for (const w of windows) await pool.transcribe({ modelDir: WHISPER.dir, dtype: WHISPER.dtype }, w.samples, w.offsetSecs);
    return performance.now() - t0;
  } finally {
    await app.close();
  }
}

const runtime = await resolveRuntime(loadConfig({ dataDir: join(work, "rt") }, env));
console.log(`making a ${SECS} s 1080p H.264 clip …`);
const clip = await makeClip(runtime.ffmpeg);
const batch = loadConfig({ dataDir: join(work, "rt") }, env).batchSize;

const ips = await encoderAlone(batch, 128);
const visual = await ingestOnce(clip, catalog({ "image-text": CLIP }), "visual");
const both = await ingestOnce(clip, catalog({ "image-text": CLIP, speech: WHISPER }), "visual-speech");
const whisperMs = await whisperAlone(clip, runtime.ffmpeg, runtime.ffprobe);
const modelMsVisual = (visual.frames / ips) * 1000;
const peakRssMb = process.resourceUsage().maxRSS / 1024;

const rows = [
  ["clip", `${SECS} s 1080p30 H.264 (2 s GOP), real footage with cuts + speech`],
  ["machine", `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${process.platform}`],
  ["CLIP B/32 vision q8, images/s (batch " + batch + ")", ips.toFixed(1)],
  ["visual-only: wall s / ×realtime", `${(visual.wallMs / 1000).toFixed(2)} s / ${(visual.duration / (visual.wallMs / 1000)).toFixed(1)}×`],
  ["visual-only: frames embedded", String(visual.frames)],
  ["visual-only: pure model time s", (modelMsVisual / 1000).toFixed(2)],
  ["visual-only: pipeline overhead over model time", `${((visual.wallMs / modelMsVisual - 1) * 100).toFixed(1)} %`],
  ["visual + speech: wall s / ×realtime", `${(both.wallMs / 1000).toFixed(2)} s / ${(both.duration / (both.wallMs / 1000)).toFixed(1)}×`],
  ["Whisper tiny.en q8 alone, s for the audio", (whisperMs / 1000).toFixed(2)],
  ["visual + speech: overhead over model time", `${((both.wallMs / (modelMsVisual + whisperMs) - 1) * 100).toFixed(1)} %`],
  ["model load (one-time), s", (both.loadMs / 1000).toFixed(2)],
  ["peak RSS of the process, MB", peakRssMb.toFixed(0)],
];
const w = Math.max(...rows.map((r) => r[0].length));
console.log(rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join("\n"));
console.log("\nstages (visual + speech):", JSON.stringify(both.stages));
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench", "results", "ingest.json"),
  JSON.stringify({ secs: SECS, batch, images_per_sec: ips, visual, visual_speech: both, whisper_ms: whisperMs, model_ms_visual: modelMsVisual, peak_rss_mb: peakRssMb, rows }, null, 2),
);
rmSync(work, { recursive: true, force: true });
