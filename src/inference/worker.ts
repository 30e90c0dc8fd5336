/**
 * Piscina task module. Each worker thread keeps its own model cache: a model is loaded once, on the
 * first task that needs it, keyed by folder + dtype + device + thread settings. Results come back in
 * an envelope (`{ok, value | error{code, message}, meta}`) because an Error's `code` does not
 * survive the thread boundary; large arrays are transferred, not copied.
 *
 * Dev/tests: `new URL("./worker.ts", import.meta.url).pathname`. The compiled binary lists this file
 * as an extra entry point and hands its path to the pool (see src/runtime/).
 */
import { threadId } from "node:worker_threads";
import { Piscina } from "piscina";
import { ClipModel } from "./clip.ts";
import { InferenceError, describeError, type InferenceErrorCode } from "./errors.ts";
import { type Dtype, dtypeKey, resolveModelDir } from "./model-files.ts";
import type {
  EmbedValue,
  InferenceTask,
  SelfTestTask,
  TaskReply,
  TaskRuntime,
  TranscribeValue,
  WorkerMeta,
} from "./protocol.ts";
import { selfTestModel, type SelfTestResult } from "./selftest.ts";
import { WhisperModel } from "./whisper.ts";

type Kind = "clip" | "whisper";
type ModelFor<K extends Kind> = K extends "clip" ? ClipModel : WhisperModel;

interface CacheEntry {
  model: Promise<ClipModel | WhisperModel>;
}

/** This worker's model cache (the only mutable module state), and how often each key was loaded. */
const cache = new Map<string, CacheEntry>();
const loadCounts = new Map<string, number>();

function cacheKey(kind: Kind, modelDir: string, dtype: Dtype, rt: TaskRuntime): string {
  return [
    kind,
    modelDir,
    dtypeKey(dtype),
    rt.device,
    rt.intraOpThreads,
    rt.allowSpinning ? "spin" : "nospin",
    rt.signedWeightsDir ?? "",
  ].join("|");
}

async function getModel<K extends Kind>(
  kind: K,
  task: { modelDir: string; dtype: Dtype; batchSize?: number; maxNewTokens?: number } & TaskRuntime,
): Promise<{ model: ModelFor<K>; key: string; loadMs: number }> {
  const modelDir = resolveModelDir(task.modelDir);
  const key = cacheKey(kind, modelDir, task.dtype, task);
  let entry = cache.get(key);
  let loadMs = 0;
  if (!entry) {
    const t0 = performance.now();
    const rt = {
      device: task.device,
      intraOpThreads: task.intraOpThreads,
      allowSpinning: task.allowSpinning,
      cacheDir: task.cacheDir,
      signedWeightsDir: task.signedWeightsDir,
    };
    const model =
      kind === "clip"
        ? ClipModel.load(modelDir, { ...rt, dtype: task.dtype })
        : WhisperModel.load(modelDir, { ...rt, dtype: task.dtype });
    entry = { model };
    cache.set(key, entry);
    loadCounts.set(key, (loadCounts.get(key) ?? 0) + 1);
    // A failed load is forgotten, so a model installed later is picked up by the next task.
    model.catch(() => {
      if (cache.get(key) === entry) cache.delete(key);
    });
    await model;
    loadMs = performance.now() - t0;
  }
  return { model: (await entry.model) as ModelFor<K>, key, loadMs };
}

function packRows(rows: Float32Array[], dim: number): Float32Array {
  const data = new Float32Array(rows.length * dim);
  rows.forEach((r, i) => data.set(r, i * dim));
  return data;
}

/** Piscina transfers `transfer` with the reply instead of copying it. */
function movable<T>(value: T, transfer: ArrayBuffer[]): T {
  return Piscina.move({
    get [Piscina.transferableSymbol]() {
      return transfer;
    },
    get [Piscina.valueSymbol]() {
      return value;
    },
  } as any) as unknown as T;
}

async function run(task: InferenceTask): Promise<{
  value: EmbedValue | TranscribeValue | SelfTestResult;
  transfer: ArrayBuffer[];
  key?: string;
  loadMs: number;
}> {
  if (task === null || typeof task !== "object" || typeof (task as any).kind !== "string") {
    throw new InferenceError("INVALID_INPUT", "inference task must be an object with a kind");
  }
  switch (task.kind) {
    case "embedImages": {
      if (!Array.isArray(task.frames))
        throw new InferenceError("INVALID_INPUT", "embedImages: frames must be an array");
      const { model, key, loadMs } = await getModel("clip", task);
      const rows = await model.embedImages(task.frames, { batchSize: task.batchSize });
      const data = packRows(rows, model.dim);
      return {
        value: { modelId: model.id, dim: model.dim, count: rows.length, data },
        transfer: [data.buffer as ArrayBuffer],
        key,
        loadMs,
      };
    }
    case "embedTexts": {
      const { model, key, loadMs } = await getModel("clip", task);
      const rows = await model.embedTexts(task.texts, { batchSize: task.batchSize });
      const data = packRows(rows, model.dim);
      return {
        value: { modelId: model.id, dim: model.dim, count: rows.length, data },
        transfer: [data.buffer as ArrayBuffer],
        key,
        loadMs,
      };
    }
    case "transcribe": {
      const { model, key, loadMs } = await getModel("whisper", task);
      const segments = await model.transcribe(task.samples, task.offsetSecs ?? 0, {
        language: task.language,
        task: task.task,
        maxNewTokens: task.maxNewTokens,
      });
      return { value: { modelId: model.id, segments }, transfer: [], key, loadMs };
    }
    case "transcribeWindows": {
      if (!Array.isArray(task.windows))
        throw new InferenceError("INVALID_INPUT", "transcribeWindows: windows must be an array");
      const { model, key, loadMs } = await getModel("whisper", task);
      const segments = await model.transcribeWindows(task.windows, {
        language: task.language,
        task: task.task,
        maxNewTokens: task.maxNewTokens,
        maxBatch: task.maxBatch,
      });
      return { value: { modelId: model.id, segments }, transfer: [], key, loadMs };
    }
    case "selfTest": {
      const t: SelfTestTask = task;
      const value = await selfTestModel(t.modelDir, {
        dtype: t.dtype,
        device: t.device,
        intraOpThreads: t.intraOpThreads,
        allowSpinning: t.allowSpinning,
        cacheDir: t.cacheDir,
      });
      return { value, transfer: [], loadMs: value.loadMs };
    }
    default:
      throw new InferenceError("INVALID_INPUT", `unknown inference task kind "${(task as any).kind}"`);
  }
}

export default async function handleInferenceTask(task: InferenceTask): Promise<TaskReply<unknown>> {
  const t0 = performance.now();
  const meta = (key: string | undefined, loadMs: number): WorkerMeta => ({
    threadId,
    modelLoads: key ? (loadCounts.get(key) ?? 0) : 0,
    loadMs,
    runMs: performance.now() - t0 - loadMs,
  });
  try {
    const { value, transfer, key, loadMs } = await run(task);
    return movable({ ok: true as const, value, meta: meta(key, loadMs) }, transfer);
  } catch (e) {
    const code: InferenceErrorCode = e instanceof InferenceError ? e.code : "INFERENCE_FAILED";
    const message = e instanceof InferenceError ? e.message : `inference worker: ${describeError(e)}`;
    return { ok: false, error: { code, message }, meta: meta(undefined, 0) };
  }
}
