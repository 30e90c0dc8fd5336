/**
 * The inference pool: a Piscina pool of worker threads running worker.ts. Every worker keeps its
 * own models (loaded once, on first use), so memory is threads × models; each ONNX session uses
 * `intraOpThreads` threads. On the 2-core target the sensible plans are 1 worker × 2 ORT threads
 * (lowest latency per call, the default) or 2 workers × 1 ORT thread (more throughput when two
 * jobs run at once); `planThreads` keeps threads × intraOpThreads within the cores.
 */
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import type { Logger } from "../core/logger.ts";
import type { RgbFrame } from "./clip.ts";
import { InferenceError, describeError } from "./errors.ts";
import { type Dtype, type ExecDevice, type WeightDtype, dtypeKey } from "./dtype.ts";
import type { EmbedValue, InferenceTask, TaskReply, TaskRuntime, TranscribeValue, WorkerMeta } from "./protocol.ts";
import type { SelfTestResult } from "./selftest.ts";
import type { TranscriptSegment } from "./whisper.ts";

/** How long closing a pool waits for the tasks running in its threads (a CLIP batch, a Whisper window). */
const CLOSE_WAIT_MS = 10_000;

export interface InferencePoolOptions {
  /** Filesystem path (or file: URL) of the worker module: worker.ts in dev, the binary's entry when compiled. */
  workerFile: string | URL;
  /** Worker threads. Default 1. */
  threads?: number;
  /** ORT intra-op threads per session. Default: cores / threads (at least 1). */
  intraOpThreads?: number;
  /** Execution provider, already resolved (see device.ts `chooseDevice`). Default cpu. */
  device?: ExecDevice;
  logger?: Logger;
  /** transformers.js cache directory (a data-dir path). */
  cacheDir?: string;
  /** Derived models with signed int8 weights go here (VNNI CPUs); absent: load models as installed. */
  signedWeightsDir?: string;
  /** Let ORT threads spin between ops (off by default, see model-files.ts). */
  allowSpinning?: boolean;
  /** Cores to plan for. Default `os.availableParallelism()`. */
  cores?: number;
}

export interface ModelRef {
  /** Model folder (transformers.js layout). */
  modelDir: string;
  /** fp32 / q8, or per ONNX file. Always explicit. */
  dtype: Dtype;
}

export interface Embeddings {
  modelId: string;
  dim: number;
  /** One L2-normalised vector per input, in order (views into one transferred buffer). */
  vectors: Float32Array[];
  worker: WorkerMeta;
}

export interface Transcript {
  modelId: string;
  segments: TranscriptSegment[];
  worker: WorkerMeta;
}

export interface PoolSelfTest extends SelfTestResult {
  worker: WorkerMeta;
}

export interface InferencePool {
  readonly threads: number;
  readonly intraOpThreads: number;
  readonly device: ExecDevice;
  /**
   * CLIP image embeddings of RGB frames at the model's input size (224×224). The frames' buffers are
   * transferred to the worker: after the call they are detached (every view on them reads as empty).
   */
  embedImages(model: ModelRef & { batchSize?: number }, frames: RgbFrame[]): Promise<Embeddings>;
  embedTexts(model: ModelRef & { batchSize?: number }, texts: string[]): Promise<Embeddings>;
  /** Whisper transcript of 16 kHz mono samples (copied, the caller keeps them), times shifted by offsetSecs. */
  transcribe(
    model: ModelRef & { maxNewTokens?: number },
    samples: Float32Array,
    offsetSecs?: number,
    opts?: { language?: string; task?: "transcribe" | "translate" },
  ): Promise<Transcript>;
  /**
   * Transcripts of independent ≤ 30 s windows (consecutive pieces of one soundtrack), decoded
   * `maxBatch` at a time in one worker (batched decoding costs far less per window). The windows'
   * buffers are copied; segments of all windows come back in window order.
   */
  transcribeWindows(
    model: ModelRef & { maxNewTokens?: number },
    windows: { samples: Float32Array; offsetSecs: number }[],
    opts?: { language?: string; task?: "transcribe" | "translate"; maxBatch?: number },
  ): Promise<Transcript>;
  /** Loads a model in a worker, runs it once, releases it (smoke test of ORT inside a worker). */
  selfTest(modelDir: string, opts?: { dtype?: WeightDtype }): Promise<PoolSelfTest>;
  close(): Promise<void>;
}

export interface ThreadPlan {
  threads: number;
  intraOpThreads: number;
}

/** Workers × ORT threads for `cores` cores: threads default 1, intra-op default cores / threads. */
export function planThreads(cores: number, threads?: number, intraOpThreads?: number): ThreadPlan {
  const c = Math.max(1, Math.floor(cores || 1));
  const t = Math.max(1, Math.floor(threads ?? 1));
  const intra = Math.max(1, Math.floor(intraOpThreads ?? c / t));
  return { threads: t, intraOpThreads: intra };
}

function workerPath(file: string | URL): string {
  if (file instanceof URL) return fileURLToPath(file);
  if (typeof file !== "string" || file.length === 0) {
    throw new InferenceError("INVALID_INPUT", "createInferencePool: workerFile must be a path");
  }
  return file.startsWith("file:") ? fileURLToPath(file) : file;
}

export function createInferencePool(opts: InferencePoolOptions): InferencePool {
  const plan = planThreads(opts.cores ?? availableParallelism(), opts.threads, opts.intraOpThreads);
  const device = opts.device ?? "cpu";
  if (!["cpu", "cuda", "webgpu"].includes(device)) {
    throw new InferenceError(
      "INVALID_INPUT",
      `pool device must be cpu, cuda or webgpu (resolve "auto" with chooseDevice first), got "${device}"`,
    );
  }
  const filename = workerPath(opts.workerFile);
  const log = opts.logger?.child({ component: "inference" });
  const runtime: TaskRuntime = {
    device,
    intraOpThreads: plan.intraOpThreads,
    allowSpinning: opts.allowSpinning ?? false,
    cacheDir: opts.cacheDir,
    signedWeightsDir: opts.signedWeightsDir,
  };
  const piscina = new Piscina({
    filename,
    minThreads: plan.threads,
    maxThreads: plan.threads,
    // One task at a time per worker: a task already uses intraOpThreads cores.
    concurrentTasksPerWorker: 1,
    // close() waits this long for the tasks running in the threads (see close).
    closeTimeout: CLOSE_WAIT_MS,
  });
  // A close that outwaited CLOSE_WAIT_MS is reported here (then the threads are ended anyway).
  piscina.on("error", (e) => log?.warn("inference pool: closing", { error: describeError(e) }));
  let closed = false;
  log?.info("inference pool started", { threads: plan.threads, intra_op_threads: plan.intraOpThreads, device });

  async function submit<T>(task: InferenceTask, transferList: ArrayBuffer[]): Promise<{ value: T; meta: WorkerMeta }> {
    if (closed) throw new InferenceError("INFERENCE_FAILED", "inference pool is closed");
    let reply: TaskReply<T>;
    try {
      reply = await piscina.run(task, { transferList: transferList as any });
    } catch (e) {
      if (e instanceof InferenceError) throw e;
      const msg = closed
        ? "inference pool closed while the task was running"
        : `inference worker failed: ${describeError(e)}`;
      // A close ends the tasks in flight (a stopped ingest's batches, whose results nobody awaits).
      if (closed) log?.info("inference task ended by the pool's close", { kind: task.kind });
      else log?.error("inference task crashed", { kind: task.kind, error: describeError(e) });
      throw new InferenceError("INFERENCE_FAILED", msg, { cause: e });
    }
    if (!reply || typeof reply !== "object" || !("ok" in reply)) {
      throw new InferenceError("INFERENCE_FAILED", `inference worker returned no reply for ${task.kind}`);
    }
    if (!reply.ok) {
      log?.warn("inference task failed", { kind: task.kind, code: reply.error.code, error: reply.error.message });
      throw new InferenceError(reply.error.code, reply.error.message);
    }
    if (reply.meta.loadMs > 0 && task.kind !== "selfTest") {
      log?.info("model loaded", {
        kind: task.kind,
        model_dir: (task as { modelDir?: string }).modelDir,
        dtype: dtypeKey((task as { dtype: Dtype }).dtype),
        thread_id: reply.meta.threadId,
        load_ms: Math.round(reply.meta.loadMs),
      });
    }
    return { value: reply.value, meta: reply.meta };
  }

  function unpack(v: EmbedValue, meta: WorkerMeta): Embeddings {
    const vectors: Float32Array[] = [];
    for (let i = 0; i < v.count; i++) vectors.push(v.data.subarray(i * v.dim, (i + 1) * v.dim));
    return { modelId: v.modelId, dim: v.dim, vectors, worker: meta };
  }

  return {
    threads: plan.threads,
    intraOpThreads: plan.intraOpThreads,
    device,

    async embedImages(model, frames) {
      if (!Array.isArray(frames)) throw new InferenceError("INVALID_INPUT", "embedImages: frames must be an array");
      const buffers = new Set<ArrayBuffer>();
      frames.forEach((f, i) => {
        if (!f || !(f.rgb instanceof Uint8Array))
          throw new InferenceError("INVALID_INPUT", `frame ${i}: rgb must be a Uint8Array`);
        if (f.rgb.buffer.byteLength === 0 && f.width * f.height > 0) {
          throw new InferenceError("INVALID_INPUT", `frame ${i}: its buffer is detached (already sent to a worker)`);
        }
        if (f.rgb.buffer instanceof ArrayBuffer) buffers.add(f.rgb.buffer);
      });
      const { value, meta } = await submit<EmbedValue>(
        {
          kind: "embedImages",
          modelDir: model.modelDir,
          dtype: model.dtype,
          batchSize: model.batchSize,
          frames,
          ...runtime,
        },
        [...buffers],
      );
      return unpack(value, meta);
    },

    async embedTexts(model, texts) {
      if (!Array.isArray(texts))
        throw new InferenceError("INVALID_INPUT", "embedTexts: texts must be an array of strings");
      const { value, meta } = await submit<EmbedValue>(
        {
          kind: "embedTexts",
          modelDir: model.modelDir,
          dtype: model.dtype,
          batchSize: model.batchSize,
          texts,
          ...runtime,
        },
        [],
      );
      return unpack(value, meta);
    },

    async transcribe(model, samples, offsetSecs = 0, o = {}) {
      if (!(samples instanceof Float32Array))
        throw new InferenceError("INVALID_INPUT", "transcribe: samples must be a Float32Array");
      const copy = samples.slice();
      const { value, meta } = await submit<TranscribeValue>(
        {
          kind: "transcribe",
          modelDir: model.modelDir,
          dtype: model.dtype,
          maxNewTokens: model.maxNewTokens,
          samples: copy,
          offsetSecs,
          language: o.language,
          task: o.task,
          ...runtime,
        },
        [copy.buffer],
      );
      return { modelId: value.modelId, segments: value.segments, worker: meta };
    },

    async transcribeWindows(model, windows, o = {}) {
      if (!Array.isArray(windows) || windows.some((w) => !(w?.samples instanceof Float32Array))) {
        throw new InferenceError(
          "INVALID_INPUT",
          "transcribeWindows: windows must be [{samples: Float32Array, offsetSecs}]",
        );
      }
      const copies = windows.map((w) => ({ samples: w.samples.slice(), offsetSecs: w.offsetSecs }));
      const { value, meta } = await submit<TranscribeValue>(
        {
          kind: "transcribeWindows",
          modelDir: model.modelDir,
          dtype: model.dtype,
          maxNewTokens: model.maxNewTokens,
          windows: copies,
          maxBatch: o.maxBatch,
          language: o.language,
          task: o.task,
          ...runtime,
        },
        copies.map((c) => c.samples.buffer as ArrayBuffer),
      );
      return { modelId: value.modelId, segments: value.segments, worker: meta };
    },

    async selfTest(modelDir, o = {}) {
      const { value, meta } = await submit<SelfTestResult>(
        { kind: "selfTest", modelDir, dtype: o.dtype, ...runtime },
        [],
      );
      return { ...value, worker: meta };
    },

    async close() {
      if (closed) return;
      closed = true;
      // Tasks not started are refused; those running finish first. A thread ended in the middle of
      // an ONNX Runtime call aborts the whole process while Bun tears it down ("terminate called
      // after throwing an instance of 'Napi::Error'"; test/jobs/cancel.test.ts hit it at its close).
      await piscina.close({ force: true });
      log?.info("inference pool closed");
    },
  };
}
