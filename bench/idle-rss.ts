/**
 * Idle memory: an app built by createApp (as `serve` builds it) with the full-size CLIP ViT-B/32
 * vision tower and Whisper tiny.en (random weights, real architectures, from
 * ../shared/fixtures/models) indexes a 20 s 720p clip with audio (and OCR), searches it once,
 * then sits idle. Reports this process's RSS when fresh, right after the job, after the models and
 * the OCR worker were unloaded (VSEARCH_MODEL_IDLE_UNLOAD_SECS, 10 s here) at each of the two
 * idle memory passes (src/system/idle-memory.ts: +1 s and +10 s after the last unload; the
 * bench waits for both), and the reload cost of everything unloaded: what the first task after
 * unloading pays to load each model again (the worker's own load time) and to start an OCR
 * worker, and a search after its caches were dropped, each against a warm call.
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
const CLIP: ActiveModel = {
  name: "bench-clip",
  dir: join(SHARED, "bench-clip-vit-base-patch32"),
  dtype: "q8",
  modelId: "bench-clip@bench",
};
const WHISPER: ActiveModel = {
  name: "bench-whisper",
  dir: join(SHARED, "bench-whisper-tiny.en"),
  dtype: "q8",
  modelId: "bench-whisper@bench",
};
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
const ff = Bun.spawn([
  ffmpegInstaller.path,
  "-loglevel",
  "error",
  "-f",
  "lavfi",
  "-i",
  "testsrc2=size=1280x720:rate=25:duration=20",
  "-f",
  "lavfi",
  "-i",
  "sine=frequency=440:duration=20",
  "-c:v",
  "libx264",
  "-preset",
  "ultrafast",
  "-g",
  "50",
  "-pix_fmt",
  "yuv420p",
  "-c:a",
  "aac",
  "-shortest",
  clip,
]);
if ((await ff.exited) !== 0) throw new Error("ffmpeg failed");
// One frame of it: as a JPEG for an image search, as grayscale pixels for OCR.
const still = async (args: string[], out: string) => {
  const p = Bun.spawn([
    ffmpegInstaller.path,
    "-loglevel",
    "error",
    "-ss",
    "5",
    "-i",
    clip,
    "-frames:v",
    "1",
    ...args,
    out,
  ]);
  if ((await p.exited) !== 0) throw new Error("ffmpeg failed");
  return new Uint8Array(await Bun.file(out).arrayBuffer());
};
const jpeg = await still(["-vf", "scale=320:-2"], join(dir, "still.jpg"));
const gray = {
  width: 1280,
  height: 720,
  pixels: await still(["-vf", "format=gray", "-f", "rawvideo"], join(dir, "still.gray")),
};

const config = loadConfig(
  { dataDir: join(dir, "data"), logLevel: "warn" },
  { VSEARCH_MODEL_IDLE_UNLOAD_SECS: String(IDLE_SECS), VSEARCH_DEVICE: "cpu", VSEARCH_SPEECH_MAX_TOKENS: "106" },
);
const app = await createApp(config, {
  runtime: await resolveRuntime(config),
  logger: createLogger("warn"),
  models: { active: (r) => (r === "image-text" ? CLIP : r === "speech" ? WHISPER : null) },
});
try {
  Bun.gc(true);
  const fresh = { rss: rssMb(), load: load() };
  const acct = await app.services.accounts.createAccount({ name: "bench" });
  const col = await app.services.collections.create(acct.id, { name: "bench" });
  const { job_id } = await app.services.uploads.ingestFile(acct.id, col.id, clip, { force: true });
  if (!job_id) throw new Error("the clip was not queued");
  await app.internals.queue.start();
  const deadline = Date.now() + 300_000;
  let status = "";
  while (Date.now() < deadline && status !== "done" && status !== "failed") {
    await Bun.sleep(100);
    status = (await app.services.jobs.get(acct.id, job_id)).status;
  }
  if (status !== "done") throw new Error(`job ended ${status}`);
  const afterJob = { rss: rssMb(), load: load() };
  // One search (image, video mode: the CLIP vision tower, the bench model has no text tower) fills
  // the search caches that the idle passes drop.
  const search = () =>
    app.services.search.search(acct.id, {
      image: jpeg,
      modes: ["video"],
      page: 1,
      perPage: 10,
      includeHidden: false,
      includeThumbnailBase64: false,
    });
  await search();

  const { inference, ocr, idleMemory } = app.internals;
  const waitUntil = Date.now() + (IDLE_SECS * 1.25 + 10) * 1000;
  while (Date.now() < waitUntil && (inference.started || (ocr?.running ?? 0) > 0)) await Bun.sleep(100);
  const unloaded = !inference.started && (ocr?.running ?? 0) === 0;
  const unloadedAt = Date.now();
  // The idle passes run 1 s and 10 s after the last unload (each unload plans them anew, so an
  // earlier one's passes — the OCR worker may end before the models — are not these): wait for
  // both, read RSS after each.
  const passesBefore = idleMemory.passCount;
  while (Date.now() < unloadedAt + 30_000 && (idleMemory.pending || idleMemory.passCount < passesBefore + 2))
    await Bun.sleep(100);
  const passes = idleMemory.history.slice(-2);
  const passLoad = load();
  await Bun.sleep(1000);
  const afterUnload = {
    rss: rssMb(),
    load: load(),
    unloaded,
    passes: passes.map((p) => ({
      rssBefore: p.rssBefore / 1e6,
      rssAfter: p.rssAfter / 1e6,
      libraryMbDropped: p.libraryBytesDropped / 1e6,
    })),
  };

  // The reload: the first task of each kind starts a worker and loads its model again.
  const pool = await inference.get();
  const frame = () => [{ rgb: new Uint8Array(224 * 224 * 3).fill(90), width: 224, height: 224 }];
  const audio = () => [{ samples: new Float32Array(16000 * 5), offsetSecs: 0 }];
  const timed = async <T extends { worker: { loadMs: number } }>(f: () => Promise<T>) => {
    const t0 = performance.now();
    const r = await f();
    return { wallMs: performance.now() - t0, loadMs: r.worker.loadMs };
  };
  const wall = async (f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  const clipCold = await timed(() => pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, frame()));
  const clipWarm = await timed(() => pool.embedImages({ modelDir: CLIP.dir, dtype: CLIP.dtype }, frame()));
  // Search right after CLIP is back (later it could idle out again on a slow machine): what is
  // left of its first call is rebuilding the caches the idle passes dropped.
  const searchCold = await wall(search);
  const searchWarm = await wall(search);
  const whisperCold = await timed(() =>
    pool.transcribeWindows({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 8 }, audio()),
  );
  const whisperWarm = await timed(() =>
    pool.transcribeWindows({ modelDir: WHISPER.dir, dtype: WHISPER.dtype, maxNewTokens: 8 }, audio()),
  );
  // The OCR worker starts again on the next frame.
  const readGray = () => (ocr?.kind === "ppocr" ? ocr.detect(gray) : ocr!.recognize(gray));
  const ocrCold = ocr ? await wall(readGray) : NaN;
  const ocrWarm = ocr ? await wall(readGray) : NaN;
  const reloaded = { rss: rssMb(), load: load() };

  const rows = [
    ["fresh app, no model loaded", fresh.rss.toFixed(0), fresh.load],
    ["right after a 20 s 720p ingest (CLIP + Whisper loaded)", afterJob.rss.toFixed(0), afterJob.load],
    ...afterUnload.passes.map((p, i) => [
      `idle ${IDLE_SECS} s: models + OCR worker unloaded${unloaded ? "" : " (NOT seen)"}, after the idle pass at +${i === 0 ? 1 : 10} s (${p.libraryMbDropped.toFixed(0)} MB of library code pages dropped)`,
      p.rssAfter.toFixed(0),
      passLoad,
    ]),
    ["idle, 1 s after the last pass", afterUnload.rss.toFixed(0), afterUnload.load],
    ["both models and the OCR worker loaded again", reloaded.rss.toFixed(0), reloaded.load],
  ];
  console.log(`\nIdle memory (${cpus()[0]?.model ?? "cpu"}, ${cpus().length} cores)\n`);
  console.log("| state | RSS MB | load avg (1 min) |\n|---|---|---|");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
  console.log(
    "\n| reload after unloading | first call ms | of which model load ms | warm call ms |\n|---|---|---|---|",
  );
  console.log(
    `| CLIP vision, 1 frame | ${clipCold.wallMs.toFixed(0)} | ${clipCold.loadMs.toFixed(0)} | ${clipWarm.wallMs.toFixed(0)} |`,
  );
  console.log(
    `| Whisper tiny.en, one 5 s window, 8 tokens | ${whisperCold.wallMs.toFixed(0)} | ${whisperCold.loadMs.toFixed(0)} | ${whisperWarm.wallMs.toFixed(0)} |`,
  );
  console.log(`| OCR, one 720p frame (worker start + read) | ${ocrCold.toFixed(0)} | – | ${ocrWarm.toFixed(0)} |`);
  console.log(
    `| search, image → video mode (caches dropped; models loaded) | ${searchCold.toFixed(0)} | – | ${searchWarm.toFixed(0)} |`,
  );
  console.log(`(load avg ${load()})`);
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify(
      {
        idleSecs: IDLE_SECS,
        fresh,
        afterJob,
        afterUnload,
        reloaded,
        clipCold,
        clipWarm,
        whisperCold,
        whisperWarm,
        ocrCold,
        ocrWarm,
        searchCold,
        searchWarm,
      },
      null,
      2,
    ),
  );
  console.log(`wrote ${OUT}`);
} finally {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
}
