/**
 * Ingest speed and memory (issue 3 targets), with the full-size random-weight benchmark models
 * from ../shared/fixtures/models and a 1080p H.264 clip made by ffmpeg:
 *   - ×realtime for visual-only and for visual + speech (Whisper tiny.en int8)
 *   - images/s of the CLIP image encoder alone (same pool, same batch size, two batches in flight
 *     as the pipeline keeps them)
 *   - pipeline overhead over pure model time (encoder alone for the same frames, Whisper alone for
 *     the same windows, batched as the pipeline batches them)
 *   - peak RSS of the whole process (main thread + worker threads)
 *
 * Speech, twice: random weights never emit end-of-text, so every 30 s window decodes to the
 * 224-token cap — the worst case (a hallucination loop). Real speech stops far earlier: the 57
 * reference transcripts in ../shared/media/speech run at 3.07 text tokens/s (real tokenizer), i.e.
 * ~92 text tokens per 30 s plus a timestamp pair per ~4 s segment ≈ 106. The "realistic" run caps
 * decoding there (speech_max_tokens = 106), which is what a real model costs on real speech.
 *
 * Each configuration indexes the clip --runs times (default 3) in one warm app; medians are reported.
 *
 * Run: npx bun bench/ingest-bench.ts [--secs 60] [--runs 3]   → prints a table, writes bench/results/ingest.json
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { streamAudio16kMono } from "../src/media/audio.ts";
import type { ActiveModel, ModelCatalog } from "../src/models/roles.ts";
import { WINDOWS_PER_BATCH } from "../src/pipeline/stage-transcript.ts";
import { encoderImagesPerSec, makeBenchClip } from "./lib/bench-clip.ts";

const ROOT = join(import.meta.dirname, "..");
const SHARED = join(ROOT, "..", "shared", "fixtures");
const CLIP: ActiveModel = {
  name: "bench-clip",
  dir: join(SHARED, "models", "bench-clip-vit-base-patch32"),
  dtype: "q8",
  modelId: "bench-clip@q8",
};
const WHISPER: ActiveModel = {
  name: "bench-whisper",
  dir: join(SHARED, "models", "bench-whisper-tiny.en"),
  dtype: "q8",
  modelId: "bench-whisper@q8",
};
const secsArg = process.argv.indexOf("--secs");
const SECS = secsArg > 0 ? Number(process.argv[secsArg + 1]) : 60;
const runsArg = process.argv.indexOf("--runs");
/** Ingests per configuration; the median is reported. */
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 3;

// Child mode: one app indexing one clip with both models, reporting its own peak RSS (the
// parent runs several apps in turn, so its own peak says little about one server).
const childArg = process.argv.indexOf("--rss-child");
const RSS_CHILD = childArg > 0 ? process.argv[childArg + 1] : null;

if (!existsSync(CLIP.dir) || !existsSync(WHISPER.dir)) {
  console.log(`benchmark models not found under ${SHARED}/models; nothing to measure`);
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), "vsearch-ingest-bench-"));
const env = { ...process.env, VSEARCH_LOG_LEVEL: "warn" };

/** 1080p30 H.264 with a 2 s GOP (typical of cameras and web video): see bench/lib/bench-clip.ts. */
async function makeClip(ffmpeg: string): Promise<string> {
  return makeBenchClip(ffmpeg, join(work, `bench-1080p-${SECS}s.mp4`), { secs: SECS, gop: 60 });
}

const catalog = (m: Partial<Record<"image-text" | "speech", ActiveModel>>): ModelCatalog => ({
  active: (r) => (m as any)[r] ?? null,
});
/** Tokens per 30 s window of real speech (see the header). */
const REALISTIC_TOKENS = 106;

/**
 * Indexes the clip `runs` times in one warm app (models loaded before timing; the load is a
 * one-time cost, reported separately) and reports the median wall time from enqueue to done.
 */
async function ingestRuns(clip: string, models: ModelCatalog, label: string, speechMaxTokens = 224, runs = RUNS) {
  const dataDir = join(work, label);
  const config = loadConfig(
    { dataDir, logLevel: "warn" },
    { ...env, VSEARCH_SPEECH_MAX_TOKENS: String(speechMaxTokens) },
  );
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("warn"), models });
  try {
    const acct = await app.services.accounts.createAccount({ name: "bench" });
    const col = await app.services.collections.create(acct.id, { name: "bench" });
    const t0 = performance.now();
    const pool = await app.internals.inference.get();
    if (models.active("image-text"))
      await pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, [
        { rgb: new Uint8Array(224 * 224 * 3), width: 224, height: 224 },
      ]);
    if (models.active("speech"))
      await pool.transcribeWindows({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 4 }, [
        { samples: new Float32Array(16000), offsetSecs: 0 },
      ]);
    const loadMs = performance.now() - t0;
    const walls: number[] = [];
    let last: { stages: any; frames: number; duration: number } | null = null;
    for (let i = 0; i < runs; i++) {
      // force: each run after the first re-indexes the same video (the same bytes are not added twice).
      const { job_id: jobId, video_id } = await app.services.uploads.ingestFile(acct.id, col.id, clip, { force: true });
      const job_id = jobId!;
      const start = performance.now();
      await app.internals.queue.start();
      for (;;) {
        const job = await app.services.jobs.get(acct.id, job_id);
        if (job.status === "done" || job.status === "failed") {
          if (job.status === "failed") throw new Error(`${label}: job failed ${JSON.stringify(job.error)}`);
          break;
        }
        await Bun.sleep(5);
      }
      walls.push(performance.now() - start);
      const video = await app.services.videos.get(acct.id, video_id);
      last = {
        stages: video.stages,
        frames: video.stages.embeddings?.count ?? 0,
        duration: video.duration_secs ?? SECS,
      };
    }
    return { wallMs: median(walls), walls, loadMs, ...last!, int8: app.internals.inference.signedWeights().reason };
  } finally {
    await app.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function encoderAlone(batch: number, n: number) {
  const config = loadConfig({ dataDir: join(work, "enc"), logLevel: "warn" }, env);
  const app = await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("warn"),
    models: catalog({ "image-text": CLIP }),
  });
  try {
    return await encoderImagesPerSec(app, CLIP, batch, n, true);
  } finally {
    await app.close();
  }
}

async function whisperAlone(clip: string, ffmpeg: string, ffprobe: string, maxNewTokens: number) {
  const config = loadConfig({ dataDir: join(work, "wh"), logLevel: "warn" }, env);
  const app = await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("warn"),
    models: catalog({ speech: WHISPER }),
  });
  try {
    const pool = await app.internals.inference.get();
    const windows = [];
    for await (const w of streamAudio16kMono({ ffmpeg, ffprobe }, clip))
      windows.push({ samples: w.samples, offsetSecs: w.offsetSecs });
    const model = { modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens };
    await pool.transcribeWindows({ ...model, maxNewTokens: 4 }, [{ samples: new Float32Array(16000), offsetSecs: 0 }]); // load
    const t0 = performance.now();
    for (let i = 0; i < windows.length; i += WINDOWS_PER_BATCH)
      await pool.transcribeWindows(model, windows.slice(i, i + WINDOWS_PER_BATCH), { maxBatch: WINDOWS_PER_BATCH });
    return performance.now() - t0;
  } finally {
    await app.close();
  }
}

if (RSS_CHILD) {
  const r = await ingestRuns(RSS_CHILD, catalog({ "image-text": CLIP, speech: WHISPER }), "rss", 224, 1);
  console.log(JSON.stringify({ peakRssMb: process.resourceUsage().maxRSS / 1024, wallMs: r.wallMs }));
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

/** Peak RSS of a separate process that indexes the clip once with both models. */
async function serverPeakRss(clip: string): Promise<number> {
  const p = Bun.spawn([process.execPath, import.meta.path, "--rss-child", clip], {
    stdout: "pipe",
    stderr: "ignore",
    env,
  });
  const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`RSS child exited ${code}`);
  return JSON.parse(out.trim().split("\n").at(-1)!).peakRssMb;
}

const runtime = await resolveRuntime(loadConfig({ dataDir: join(work, "rt") }, env));
console.log(`making a ${SECS} s 1080p H.264 clip …`);
const clip = await makeClip(runtime.ffmpeg);
const batch = loadConfig({ dataDir: join(work, "rt") }, env).batchSize;

// Let the clip's encode (both cores for ~40 s) wind down before anything is timed.
await Bun.sleep(5000);
const load0 = loadavg();
const ips = await encoderAlone(batch, 128);
const visual = await ingestRuns(clip, catalog({ "image-text": CLIP }), "visual");
const worst = await ingestRuns(clip, catalog({ "image-text": CLIP, speech: WHISPER }), "visual-speech-cap");
const real = await ingestRuns(
  clip,
  catalog({ "image-text": CLIP, speech: WHISPER }),
  "visual-speech-real",
  REALISTIC_TOKENS,
);
const whisperWorstMs = await whisperAlone(clip, runtime.ffmpeg, runtime.ffprobe, 224);
const whisperRealMs = await whisperAlone(clip, runtime.ffmpeg, runtime.ffprobe, REALISTIC_TOKENS);
const modelMsVisual = (visual.frames / ips) * 1000;
const serverRssMb = await serverPeakRss(clip);
const peakRssMb = process.resourceUsage().maxRSS / 1024;
const x = (r: { wallMs: number; walls: number[]; duration: number }) =>
  `${(r.wallMs / 1000).toFixed(2)} s / ${(r.duration / (r.wallMs / 1000)).toFixed(1)}× (median of ${r.walls.map((w) => (w / 1000).toFixed(2)).join(", ")})`;
const over = (wallMs: number, modelMs: number) =>
  `${((wallMs / modelMs - 1) * 100).toFixed(1)} % (model ${(modelMs / 1000).toFixed(2)} s)`;

const rows = [
  ["clip", `${SECS} s 1080p30 H.264 (2 s GOP), real footage with cuts + speech`],
  [
    "machine",
    `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${process.platform}, load ${load0.map((l) => l.toFixed(2)).join(" ")}`,
  ],
  ["int8 weights", visual.int8],
  ["CLIP B/32 vision q8, images/s (batch " + batch + ")", ips.toFixed(1)],
  ["visual-only: wall s / ×realtime", x(visual)],
  ["visual-only: frames embedded", String(visual.frames)],
  ["visual-only: overhead over model time", over(visual.wallMs, modelMsVisual)],
  [`visual + speech, real speech (${REALISTIC_TOKENS} tokens/window): wall / ×rt`, x(real)],
  ["  Whisper alone for the audio, s", (whisperRealMs / 1000).toFixed(2)],
  ["  overhead over model time", over(real.wallMs, modelMsVisual + whisperRealMs)],
  ["visual + speech, worst case (224-token cap): wall / ×rt", x(worst)],
  ["  Whisper alone for the audio, s", (whisperWorstMs / 1000).toFixed(2)],
  ["  overhead over model time", over(worst.wallMs, modelMsVisual + whisperWorstMs)],
  ["model load (one-time), s", (worst.loadMs / 1000).toFixed(2)],
  ["peak RSS of one server process indexing with both models, MB", serverRssMb.toFixed(0)],
  ["(peak RSS of this benchmark process, six apps in turn, MB)", peakRssMb.toFixed(0)],
];
const w = Math.max(...rows.map((r) => r[0].length));
console.log(rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join("\n"));
console.log("\nstages (visual-only):", JSON.stringify(visual.stages));
console.log("stages (visual + real speech):", JSON.stringify(real.stages));
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench", "results", "ingest.json"),
  JSON.stringify(
    {
      secs: SECS,
      batch,
      loadavg_start: load0,
      loadavg_end: loadavg(),
      images_per_sec: ips,
      visual,
      visual_speech_realistic: { ...real, tokens_per_window: REALISTIC_TOKENS, whisper_alone_ms: whisperRealMs },
      visual_speech_worst: { ...worst, tokens_per_window: 224, whisper_alone_ms: whisperWorstMs },
      model_ms_visual: modelMsVisual,
      server_peak_rss_mb: serverRssMb,
      bench_process_peak_rss_mb: peakRssMb,
      rows,
    },
    null,
    2,
  ),
);
rmSync(work, { recursive: true, force: true });
