/** Shared helpers for the inference tests: fixture paths, reference.json, WAV/PNG decoding, vector maths. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RawImage } from "@huggingface/transformers";
import type { RgbFrame } from "../../src/inference/clip.ts";

export const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
export const CLIP_DIR = `${FIXTURES}models/tiny-random-clip`;
export const WHISPER_DIR = `${FIXTURES}models/tiny-random-whisper`;
export const TESTDATA = `${FIXTURES}testdata`;
export const WORKER_FILE = fileURLToPath(new URL("../../src/inference/worker.ts", import.meta.url));

export function reference(modelDir: string): any {
  return JSON.parse(readFileSync(`${modelDir}/reference.json`, "utf8"));
}

/** 16-bit PCM mono WAV → float32 in [-1, 1) (what soundfile/librosa give the reference). */
export function readWav16(path: string): { samples: Float32Array; sampleRate: number } {
  const buf = readFileSync(path);
  if (buf.toString("ascii", 0, 4) !== "RIFF" || buf.toString("ascii", 8, 12) !== "WAVE")
    throw new Error(`${path}: not a WAV file`);
  let off = 12;
  let sampleRate = 0;
  let channels = 0;
  let bits = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString("ascii", off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === "fmt ") {
      const format = buf.readUInt16LE(body);
      channels = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
      bits = buf.readUInt16LE(body + 14);
      if (format !== 1 || bits !== 16 || channels !== 1) throw new Error(`${path}: want 16-bit PCM mono`);
    } else if (id === "data") {
      const n = Math.floor(Math.min(size, buf.length - body) / 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = buf.readInt16LE(body + 2 * i) / 32768;
      return { samples, sampleRate };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

/**
 * A PNG scaled and centre-cropped to 224×224 RGB exactly as the transformers.js CLIP processor does
 * it (sharp bicubic, shortest edge 224, centre crop) — i.e. the frame its reference embeddings saw.
 */
export async function clipFrameLikeTransformersJs(path: string, size = 224): Promise<RgbFrame> {
  let img = (await RawImage.read(path)).rgb();
  const f = Math.max(size / img.width, size / img.height);
  const w = Math.floor(Number((img.width * f).toFixed(2)));
  const h = Math.floor(Number((img.height * f).toFixed(2)));
  img = await img.resize(w, h, { resample: 3 });
  img = await img.center_crop(size, size);
  return { rgb: new Uint8Array(img.data), width: img.width, height: img.height };
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

export function norm(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * a[i];
  return Math.sqrt(s);
}

/** Formula-defined synthetic CLIP input from reference.json: already-normalised pixel_values [2,3,224,224]. */
export function syntheticPixelValues(): Float32Array {
  const out = new Float32Array(2 * 3 * 224 * 224);
  let i = 0;
  for (let b = 0; b < 2; b++)
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < 224; y++)
        for (let x = 0; x < 224; x++) out[i++] = Math.sin(0.05 * (b + 1) * x + 0.03 * (2 * b + 1) * y + 1.7 * c) * 1.5;
  return out;
}

/** Formula-defined synthetic Whisper input: input_features [1,80,3000]. */
export function syntheticWhisperFeatures(): Float32Array {
  const out = new Float32Array(80 * 3000);
  for (let m = 0; m < 80; m++) for (let t = 0; t < 3000; t++) out[m * 3000 + t] = Math.sin(0.01 * t + 0.3 * m) * 0.8;
  return out;
}
