/** The Piscina pool on the tiny models: same results as in-process, one load per worker, clear errors. */
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClipModel, type RgbFrame } from "../../src/inference/clip.ts";
import { InferenceError } from "../../src/inference/errors.ts";
import { createInferencePool, planThreads, type InferencePool } from "../../src/inference/pool.ts";
import { WhisperModel } from "../../src/inference/whisper.ts";
import {
  CLIP_DIR,
  TESTDATA,
  WHISPER_DIR,
  WORKER_FILE,
  clipFrameLikeTransformersJs,
  cosine,
  maxAbsDiff,
  readWav16,
  reference,
} from "./helpers.ts";

const ref = reference(CLIP_DIR);
const fox = readWav16(`${TESTDATA}/fox.wav`);
const FP32 = { modelDir: CLIP_DIR, dtype: "fp32" as const };
const Q8 = { modelDir: CLIP_DIR, dtype: "q8" as const };

let pool: InferencePool;
let localFp32: ClipModel;
let localQ8: ClipModel;
let photos: RgbFrame[];
const logLines: any[] = [];
const logger = {
  debug: () => {},
  info: (msg: string, f?: object) => logLines.push({ level: "info", msg, ...f }),
  warn: (msg: string, f?: object) => logLines.push({ level: "warn", msg, ...f }),
  error: (msg: string, f?: object) => logLines.push({ level: "error", msg, ...f }),
  child() {
    return this;
  },
};

/** Fresh copies: the pool transfers (detaches) frame buffers. */
const copyFrames = (frames: RgbFrame[]) => frames.map((f) => ({ ...f, rgb: f.rgb.slice() }));

beforeAll(async () => {
  pool = createInferencePool({ workerFile: WORKER_FILE, threads: 2, cores: 2, logger });
  [localFp32, localQ8, photos] = await Promise.all([
    ClipModel.load(CLIP_DIR, { dtype: "fp32", intraOpThreads: 1 }),
    ClipModel.load(CLIP_DIR, { dtype: "q8", intraOpThreads: 1 }),
    Promise.all(ref.image.inputs.map((f: string) => clipFrameLikeTransformersJs(`${TESTDATA}/${f}`))),
  ]);
});

afterAll(async () => {
  await pool?.close();
  await Promise.all([localFp32?.dispose(), localQ8?.dispose()]);
});

describe("planThreads", () => {
  it("keeps workers × ORT threads within the cores", () => {
    expect(planThreads(2)).toEqual({ threads: 1, intraOpThreads: 2 });
    expect(planThreads(2, 2)).toEqual({ threads: 2, intraOpThreads: 1 });
    expect(planThreads(2, 3)).toEqual({ threads: 3, intraOpThreads: 1 });
    expect(planThreads(8, 2)).toEqual({ threads: 2, intraOpThreads: 4 });
    expect(planThreads(2, 1, 4)).toEqual({ threads: 1, intraOpThreads: 4 });
    expect(planThreads(0, 0, 0)).toEqual({ threads: 1, intraOpThreads: 1 });
  });
});

describe("inference pool (2 workers × 1 ORT thread)", () => {
  it("gives the same embeddings as the in-process model", async () => {
    expect(pool.threads).toBe(2);
    expect(pool.intraOpThreads).toBe(1);
    const texts = await pool.embedTexts(FP32, ref.text.inputs);
    const want = await localFp32.embedTexts(ref.text.inputs);
    expect(texts.modelId).toBe(localFp32.id);
    expect(texts.dim).toBe(localFp32.dim);
    texts.vectors.forEach((v, i) => expect(maxAbsDiff(v, want[i])).toBeLessThan(1e-6));

    const images = await pool.embedImages(FP32, copyFrames(photos));
    const wantImages = await localFp32.embedImages(photos);
    images.vectors.forEach((v, i) => expect(maxAbsDiff(v, wantImages[i])).toBeLessThan(1e-6));

    // q8 moves a little with batch mates and thread count (fixtures README): cosine > 0.99.
    const q8 = await pool.embedImages({ ...Q8, batchSize: 1 }, copyFrames(photos));
    const wantQ8 = await localQ8.embedImages(photos, { batchSize: 2 });
    expect(q8.modelId).toBe(localQ8.id);
    q8.vectors.forEach((v, i) => expect(cosine(v, wantQ8[i])).toBeGreaterThan(0.99));
  });

  it("transfers frame buffers instead of copying them, and copies audio", async () => {
    const frames = copyFrames(photos);
    // Two frames as views of one buffer (how a decoder might hand them over): sent once.
    const shared = new Uint8Array(frames[0].rgb.length * 2);
    shared.set(frames[0].rgb, 0);
    shared.set(frames[1].rgb, frames[0].rgb.length);
    const views = [
      { ...frames[0], rgb: shared.subarray(0, frames[0].rgb.length) },
      { ...frames[1], rgb: shared.subarray(frames[0].rgb.length) },
    ];
    const r = await pool.embedImages(FP32, views);
    expect(r.vectors.length).toBe(2);
    expect(shared.byteLength).toBe(0); // detached: it moved to the worker
    await expect(pool.embedImages(FP32, views)).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringContaining("detached"),
    });

    const samples = fox.samples.slice();
    await pool.transcribe({ modelDir: WHISPER_DIR, dtype: "q8", maxNewTokens: 8 }, samples, 0);
    expect(samples.length).toBe(fox.samples.length);
  });

  it("loads each model once per worker, lazily", async () => {
    const jobs = [];
    for (let i = 0; i < 6; i++) {
      jobs.push(pool.embedTexts(Q8, [`query ${i}`]));
      jobs.push(pool.embedImages(Q8, copyFrames(photos.slice(0, 1))));
    }
    const replies = await Promise.all(jobs);
    const threads = new Set(replies.map((r) => r.worker.threadId));
    expect(threads.size).toBeGreaterThanOrEqual(1);
    expect(threads.size).toBeLessThanOrEqual(2);
    for (const r of replies) expect(r.worker.modelLoads).toBe(1);
    // Over the whole file so far: one "model loaded" per worker and model (folder + dtype), never more.
    const loads = logLines
      .filter((l) => l.msg === "model loaded")
      .map((l) => `${l.thread_id}|${l.model_dir}|${l.dtype}`);
    expect(loads.length).toBeGreaterThan(0);
    expect(new Set(loads).size).toBe(loads.length);
    expect(replies.filter((r) => r.worker.loadMs > 0).length).toBeLessThanOrEqual(2);
  });

  it("transcribes like the in-process model", async () => {
    const local = await WhisperModel.load(WHISPER_DIR, { dtype: "fp32", intraOpThreads: 1 });
    try {
      const long = new Float32Array(16000 * 33);
      for (let at = 0; at + fox.samples.length <= long.length; at += fox.samples.length + 8000)
        long.set(fox.samples, at);
      const viaPool = await pool.transcribe({ modelDir: WHISPER_DIR, dtype: "fp32", maxNewTokens: 40 }, long, 7);
      const want = await local.transcribe(long, 7, { maxNewTokens: 40 });
      expect(viaPool.modelId).toBe(local.id);
      expect(viaPool.segments).toEqual(want);
      expect(want.length).toBeGreaterThan(0);
    } finally {
      await local.dispose();
    }
  });

  it("transcribes independent windows in one batched task like the in-process model, and keeps the caller's buffers", async () => {
    const local = await WhisperModel.load(WHISPER_DIR, { dtype: "fp32", intraOpThreads: 1 });
    try {
      const windows = [0, 30].map((offsetSecs, i) => ({
        samples: fox.samples.map((x) => x * (1 - 0.3 * i)),
        offsetSecs,
      }));
      const viaPool = await pool.transcribeWindows(
        { modelDir: WHISPER_DIR, dtype: "fp32", maxNewTokens: 40 },
        windows,
        { maxBatch: 2 },
      );
      const want = await local.transcribeWindows(windows, { maxNewTokens: 40, maxBatch: 2 });
      expect(viaPool.modelId).toBe(local.id);
      expect(viaPool.segments).toEqual(want);
      expect(want.length).toBeGreaterThan(0);
      expect(windows.every((w) => w.samples.length === fox.samples.length)).toBe(true); // copied, not detached
    } finally {
      await local.dispose();
    }
  });

  it("turns task errors into rejections with a code and a clear message; the pool keeps working", async () => {
    const missing = pool.embedTexts({ modelDir: "/nonexistent/models/clip", dtype: "q8" }, ["a cat"]);
    await expect(missing).rejects.toBeInstanceOf(InferenceError);
    await expect(missing).rejects.toMatchObject({
      code: "MODEL_NOT_INSTALLED",
      message: expect.stringContaining("/nonexistent/models/clip"),
    });
    await expect(pool.transcribe({ modelDir: "/nonexistent/whisper", dtype: "q8" }, fox.samples)).rejects.toMatchObject(
      {
        code: "MODEL_NOT_INSTALLED",
      },
    );
    const wrongSize = { rgb: new Uint8Array(32 * 32 * 3), width: 32, height: 32 };
    await expect(pool.embedImages(FP32, [wrongSize])).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(
      pool.transcribe({ modelDir: WHISPER_DIR, dtype: "q8" }, fox.samples, 0, { language: "fr" }),
    ).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    expect(logLines.some((l) => l.level === "warn" && l.code === "MODEL_NOT_INSTALLED")).toBe(true);
    // Still serving.
    expect((await pool.embedTexts(FP32, ["still alive"])).vectors.length).toBe(1);
  });

  it("self-tests a model inside a worker without caching it", async () => {
    const clip = await pool.selfTest(CLIP_DIR);
    expect(clip).toMatchObject({ ok: true, modelType: "clip", dtype: "q8", device: "cpu", ran: "clip text tower" });
    expect(clip.modelId).toBe(localQ8.id);
    const whisper = await pool.selfTest(WHISPER_DIR, { dtype: "fp32" });
    expect(whisper).toMatchObject({ ok: true, modelType: "whisper", dtype: "fp32" });
    expect(whisper.worker.modelLoads).toBe(0);
    await expect(pool.selfTest("/nonexistent/model")).rejects.toMatchObject({ code: "MODEL_NOT_INSTALLED" });
  });
});

describe("pool lifecycle", () => {
  it("takes a file: URL for the worker, refuses unresolved devices, rejects work after close", async () => {
    expect(() => createInferencePool({ workerFile: WORKER_FILE, device: "auto" as any })).toThrow(/chooseDevice/);
    const small = createInferencePool({ workerFile: pathToFileURL(WORKER_FILE).href, threads: 1, cores: 2 });
    expect(small.intraOpThreads).toBe(2);
    expect((await small.embedTexts(Q8, ["one"])).vectors[0].length).toBe(ref.projection_dim);
    await small.close();
    await expect(small.embedTexts(Q8, ["two"])).rejects.toMatchObject({
      code: "INFERENCE_FAILED",
      message: expect.stringContaining("closed"),
    });
    await small.close(); // idempotent
  });
});
