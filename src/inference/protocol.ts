/** Messages between the pool (main thread) and the Piscina worker (worker.ts). Types only. */
import type { RgbFrame } from "./clip.ts";
import type { InferenceErrorCode } from "./errors.ts";
import type { Dtype, ExecDevice, WeightDtype } from "./dtype.ts";
import type { SelfTestResult } from "./selftest.ts";
import type { TranscriptSegment } from "./whisper.ts";

/** Settings every task carries (they are part of the worker's model cache key). */
export interface TaskRuntime {
  device: ExecDevice;
  intraOpThreads: number;
  allowSpinning?: boolean;
  cacheDir?: string;
  signedWeightsDir?: string;
}

export interface EmbedImagesTask extends TaskRuntime {
  kind: "embedImages";
  modelDir: string;
  dtype: Dtype;
  batchSize?: number;
  /** The RGB buffers are transferred to the worker, not copied. */
  frames: RgbFrame[];
}

export interface EmbedTextsTask extends TaskRuntime {
  kind: "embedTexts";
  modelDir: string;
  dtype: Dtype;
  batchSize?: number;
  texts: string[];
}

export interface TranscribeTask extends TaskRuntime {
  kind: "transcribe";
  modelDir: string;
  dtype: Dtype;
  /** 16 kHz mono; transferred. */
  samples: Float32Array;
  offsetSecs: number;
  language?: string;
  task?: "transcribe" | "translate";
  maxNewTokens?: number;
}

/** Independent ≤ 30 s windows decoded `maxBatch` at a time (WhisperModel.transcribeWindows). */
export interface TranscribeWindowsTask extends TaskRuntime {
  kind: "transcribeWindows";
  modelDir: string;
  dtype: Dtype;
  /** 16 kHz mono each; transferred. */
  windows: { samples: Float32Array; offsetSecs: number }[];
  maxBatch?: number;
  language?: string;
  task?: "transcribe" | "translate";
  maxNewTokens?: number;
}

export interface SelfTestTask extends TaskRuntime {
  kind: "selfTest";
  modelDir: string;
  dtype?: WeightDtype;
}

export type InferenceTask = EmbedImagesTask | EmbedTextsTask | TranscribeTask | TranscribeWindowsTask | SelfTestTask;

export interface EmbedValue {
  modelId: string;
  dim: number;
  count: number;
  /** `count × dim`, row-major, L2-normalised rows; transferred back. */
  data: Float32Array;
}

export interface TranscribeValue {
  modelId: string;
  segments: TranscriptSegment[];
}

/** Facts about the worker that ran a task. */
export interface WorkerMeta {
  threadId: number;
  /** How many times this worker has loaded the task's model (1 once cached; selfTest: 0). */
  modelLoads: number;
  /** Load time when this task loaded the model, else 0. */
  loadMs: number;
  runMs: number;
}

export type TaskReply<T> =
  | { ok: true; value: T; meta: WorkerMeta }
  | { ok: false; error: { code: InferenceErrorCode; message: string }; meta: WorkerMeta };
