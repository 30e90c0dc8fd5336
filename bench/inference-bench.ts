/**
 * Inference throughput through the real path (Piscina pool → worker → transformers.js → ORT):
 *  - full-size CLIP ViT-B/32 vision tower, q8: images/s at batch 1 / 8 / 16, with 1 worker × 2 ORT
 *    threads and 2 workers × 1 ORT thread;
 *  - Whisper tiny.en, q8: seconds per 30 s window (random weights: the decoder repeats one token
 *    until the per-pass cap, so a window costs exactly one pass of `maxNewTokens` tokens).
 * Uses ../shared/fixtures/models/bench-* (random weights, real architectures); skips what is absent.
 *
 *   node_modules/.bin/bun bench/inference-bench.ts [--images 64] [--windows 3]
 *
 * Prints a table and writes bench/results/inference.json. Not a test.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInferencePool, type InferencePool } from "../src/inference/pool.ts";
import type { RgbFrame } from "../src/inference/clip.ts";

const SHARED = fileURLToPath(new URL("../../shared/fixtures/", import.meta.url));
const CLIP_DIR = `${SHARED}models/bench-clip-vit-base-patch32`;
const WHISPER_DIR = `${SHARED}models/bench-whisper-tiny.en`;
const SPEECH = `${SHARED}testdata/speech30s.wav`;
const WORKER = fileURLToPath(new URL("../src/inference/worker.ts", import.meta.url));
const OUT = fileURLToPath(new URL("./results/inference.json", import.meta.url));

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const IMAGES = arg("images", 64);
const WINDOWS = arg("windows", 3);
const PLANS = [
  { threads: 1, intraOpThreads: 2 },
  { threads: 2, intraOpThreads: 1 },
];
/**
 * Weights as installed, and with uint8 MatMulInteger weights made int8 (what the app does on
 * CPUs with VNNI, src/inference/signed-weights.ts); the derived copies live in a temp folder.
 */
const SIGNED_DIR = mkdtempSync(join(tmpdir(), "vsearch-bench-signed-"));
const WEIGHTS = [
  { weights: "as installed", signedWeightsDir: undefined },
  { weights: "signed int8", signedWeightsDir: SIGNED_DIR },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function cpuSince(c0: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(c0);
  return (d.user + d.system) / 1e6;
}

function frames(n: number, seed: number): RgbFrame[] {
  let x = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    const rgb = new Uint8Array(224 * 224 * 3);
    for (let i = 0; i < rgb.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      rgb[i] = x & 255;
    }
    return { rgb, width: 224, height: 224 };
  });
}

function readWav16Mono(path: string): Float32Array {
  const buf = readFileSync(path);
  let off = 12;
  while (off + 8 <= buf.length) {
    const id = buf.toString("ascii", off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === "data") {
      const n = Math.floor(size / 2);
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = buf.readInt16LE(off + 8 + 2 * i) / 32768;
      return out;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

interface ClipRow {
  weights: string;
  threads: number;
  intraOpThreads: number;
  batch: number;
  images: number;
  seconds: number;
  imagesPerSec: number;
  /** Process CPU seconds (all threads) spent in the timed section: robust to other load on the box. */
  cpuSeconds: number;
  imagesPerCpuSec: number;
}

async function benchClip(): Promise<{ loadMs: number[]; rows: ClipRow[] } | { skipped: string }> {
  if (!existsSync(`${CLIP_DIR}/onnx/vision_model_quantized.onnx`)) return { skipped: `${CLIP_DIR} not found` };
  const rows: ClipRow[] = [];
  const loadMs: number[] = [];
  for (const { weights, signedWeightsDir } of WEIGHTS)
    for (const plan of PLANS) {
      const pool = createInferencePool({ workerFile: WORKER, ...plan, device: "cpu", signedWeightsDir });
      try {
        // Warm every worker: load the model and run it once at each batch size.
        const warm = await Promise.all(
          Array.from({ length: plan.threads * 2 }, () =>
            pool.embedImages({ modelDir: CLIP_DIR, dtype: "q8", batchSize: 16 }, frames(16, 7)),
          ),
        );
        for (const w of warm) if (w.worker.loadMs > 0) loadMs.push(w.worker.loadMs);
        for (const batch of [1, 8, 16]) {
          await pool.embedImages({ modelDir: CLIP_DIR, dtype: "q8", batchSize: batch }, frames(batch, 3));
          const tasks = Math.max(plan.threads, Math.ceil(IMAGES / batch));
          const inputs = Array.from({ length: tasks }, (_, i) => frames(batch, 100 + i));
          const t0 = performance.now();
          const c0 = process.cpuUsage();
          await Promise.all(
            inputs.map((f) => pool.embedImages({ modelDir: CLIP_DIR, dtype: "q8", batchSize: batch }, f)),
          );
          const seconds = (performance.now() - t0) / 1000;
          const cpuSeconds = cpuSince(c0);
          const images = tasks * batch;
          rows.push({
            weights,
            ...plan,
            batch,
            images,
            seconds,
            imagesPerSec: images / seconds,
            cpuSeconds,
            imagesPerCpuSec: images / cpuSeconds,
          });
          console.error(
            `clip q8 ${weights} ${plan.threads}x${plan.intraOpThreads} batch ${batch}: ${(images / seconds).toFixed(1)} img/s, ${(images / cpuSeconds).toFixed(1)} img/CPU-s`,
          );
        }
      } finally {
        await pool.close();
      }
    }
  return { loadMs, rows };
}

interface WhisperRow {
  weights: string;
  threads: number;
  intraOpThreads: number;
  maxNewTokens: number;
  windows: number;
  /** Median wall seconds of one window when windows run one at a time. */
  secondsPerWindowSerial: number;
  /** Wall seconds / windows when `threads` windows run at once. */
  secondsPerWindowParallel: number;
  /** Process CPU seconds per window (serial runs). */
  cpuSecondsPerWindow: number;
}

async function benchWhisper(): Promise<{ loadMs: number[]; rows: WhisperRow[] } | { skipped: string }> {
  if (!existsSync(`${WHISPER_DIR}/onnx/encoder_model_quantized.onnx`)) return { skipped: `${WHISPER_DIR} not found` };
  if (!existsSync(SPEECH)) return { skipped: `${SPEECH} not found` };
  const speech = readWav16Mono(SPEECH).subarray(0, 30 * 16000);
  const rows: WhisperRow[] = [];
  const loadMs: number[] = [];
  for (const { weights, signedWeightsDir } of WEIGHTS)
    for (const plan of PLANS) {
      const pool = createInferencePool({ workerFile: WORKER, ...plan, device: "cpu", signedWeightsDir });
      try {
        for (const maxNewTokens of [100, 224]) {
          const model = { modelDir: WHISPER_DIR, dtype: "q8" as const, maxNewTokens };
          const warm = await Promise.all(Array.from({ length: plan.threads }, () => pool.transcribe(model, speech)));
          for (const w of warm) if (w.worker.loadMs > 0) loadMs.push(w.worker.loadMs);
          const serial: number[] = [];
          const c0 = process.cpuUsage();
          for (let i = 0; i < WINDOWS; i++) {
            const t0 = performance.now();
            await pool.transcribe(model, speech, i * 30);
            serial.push((performance.now() - t0) / 1000);
          }
          const cpuSecondsPerWindow = cpuSince(c0) / WINDOWS;
          const n = plan.threads * WINDOWS;
          const t0 = performance.now();
          await Promise.all(Array.from({ length: n }, (_, i) => pool.transcribe(model, speech, i * 30)));
          const parallel = (performance.now() - t0) / 1000 / n;
          rows.push({
            weights,
            ...plan,
            maxNewTokens,
            windows: WINDOWS,
            secondsPerWindowSerial: median(serial),
            secondsPerWindowParallel: parallel,
            cpuSecondsPerWindow,
          });
          console.error(
            `whisper q8 ${weights} ${plan.threads}x${plan.intraOpThreads} cap ${maxNewTokens}: ${median(serial).toFixed(2)} s/window serial, ${parallel.toFixed(2)} parallel`,
          );
        }
      } finally {
        await pool.close();
      }
    }
  return { loadMs, rows };
}

const started = new Date().toISOString();
const load0 = loadavg();
const clip = await benchClip();
const whisper = await benchWhisper();

console.log(
  `\nInference bench — ${cpus()[0]?.model ?? "cpu"}, ${availableParallelism()} cores, Bun ${Bun.version}, load avg at start ${load0.map((x) => x.toFixed(2)).join(" ")}`,
);
if ("skipped" in clip) console.log(`CLIP: skipped (${clip.skipped})`);
else {
  console.log(
    `\nCLIP ViT-B/32 vision, q8 (model load per worker: ${clip.loadMs.map((x) => x.toFixed(0)).join(", ")} ms)`,
  );
  console.log("weights      | workers × ORT threads | batch | images | img/s | img per CPU-s");
  for (const r of clip.rows) {
    console.log(
      `${r.weights.padEnd(12)} | ${`${r.threads} × ${r.intraOpThreads}`.padEnd(21)} | ${String(r.batch).padStart(5)} | ${String(r.images).padStart(6)} | ${r.imagesPerSec.toFixed(1).padStart(5)} | ${r.imagesPerCpuSec.toFixed(1).padStart(14)}`,
    );
  }
}
if ("skipped" in whisper) console.log(`Whisper: skipped (${whisper.skipped})`);
else {
  console.log(
    `\nWhisper tiny.en, q8, 30 s window of speech (model load per worker: ${whisper.loadMs.map((x) => x.toFixed(0)).join(", ")} ms)`,
  );
  console.log(
    "weights      | workers × ORT threads | tokens/pass | s/window (one at a time) | s/window (all workers busy) | CPU-s/window",
  );
  for (const r of whisper.rows) {
    console.log(
      `${r.weights.padEnd(12)} | ${`${r.threads} × ${r.intraOpThreads}`.padEnd(21)} | ${String(r.maxNewTokens).padStart(11)} | ${r.secondsPerWindowSerial.toFixed(2).padStart(24)} | ${r.secondsPerWindowParallel.toFixed(2).padStart(27)} | ${r.cpuSecondsPerWindow.toFixed(2).padStart(12)}`,
    );
  }
}

mkdirSync(fileURLToPath(new URL("./results/", import.meta.url)), { recursive: true });
writeFileSync(
  OUT,
  JSON.stringify(
    {
      started,
      cpu: cpus()[0]?.model,
      cores: availableParallelism(),
      bun: Bun.version,
      loadavgAtStart: load0,
      loadavgAtEnd: loadavg(),
      images: IMAGES,
      windows: WINDOWS,
      clip: { model: CLIP_DIR, dtype: "q8", ...clip },
      whisper: { model: WHISPER_DIR, dtype: "q8", ...whisper },
    },
    null,
    2,
  ) + "\n",
);
rmSync(SIGNED_DIR, { recursive: true, force: true });
console.log(`\nwrote ${OUT}`);
