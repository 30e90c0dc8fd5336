/**
 * Load one model from a folder, run it once on a synthetic input, release it. Used by the worker's
 * `selfTest` task (the compiled-binary smoke test: does ONNX Runtime load and run inside a worker?)
 * and by the device probe (does this execution provider really work here?).
 */
import { join } from "node:path";
import { ClipModel } from "./clip.ts";
import { InferenceError } from "./errors.ts";
import {
  type ExecDevice,
  type RuntimeOptions,
  type WeightDtype,
  fileExists,
  onnxFile,
  readModelConfig,
  resolveModelDir,
} from "./model-files.ts";
import { WhisperModel } from "./whisper.ts";

/** One second of silence is enough to run the encoder and one decoder step. */
const WHISPER_SELFTEST_SAMPLES = 16_000;

export interface SelfTestOptions extends RuntimeOptions {
  /** Default: q8 when that model's quantized files are there, else fp32. */
  dtype?: WeightDtype;
}

export interface SelfTestResult {
  ok: true;
  modelType: "clip" | "whisper";
  modelId: string;
  dtype: WeightDtype;
  device: ExecDevice;
  /** What ran: e.g. `clip text tower` or `whisper encoder+decoder`. */
  ran: string;
  loadMs: number;
  runMs: number;
}

async function pickDtype(dir: string, stems: string[], wanted?: WeightDtype): Promise<WeightDtype> {
  if (wanted) return wanted;
  for (const d of ["q8", "fp32"] as const) {
    let all = true;
    for (const s of stems) all &&= await fileExists(join(dir, onnxFile(s, d)));
    if (all) return d;
  }
  throw new InferenceError("MODEL_NOT_INSTALLED", `${dir}: no ONNX files for ${stems.join(", ")} (fp32 or q8)`);
}

export async function selfTestModel(modelDir: string, opts: SelfTestOptions = {}): Promise<SelfTestResult> {
  const dir = resolveModelDir(modelDir);
  const device = opts.device ?? "cpu";
  const config = await readModelConfig(dir);
  const t0 = performance.now();
  if (config.model_type === "clip") {
    // The text tower is the smaller one; a vision-only install runs the vision tower.
    let pick: { tower: "text" | "vision"; dtype: WeightDtype } | null = null;
    for (const tower of ["text", "vision"] as const) {
      for (const d of opts.dtype ? [opts.dtype] : (["q8", "fp32"] as const)) {
        if (!pick && (await fileExists(join(dir, onnxFile(`${tower}_model`, d))))) pick = { tower, dtype: d };
      }
    }
    if (!pick) {
      throw new InferenceError(
        "MODEL_NOT_INSTALLED",
        `${dir}: no CLIP ONNX files${opts.dtype ? ` for ${opts.dtype}` : ""}`,
      );
    }
    const { tower, dtype } = pick;
    const model = await ClipModel.load(dir, { ...opts, device, dtype, towers: [tower] });
    try {
      const t1 = performance.now();
      let vecs: Float32Array[];
      if (tower === "text") {
        vecs = await model.embedTexts(["a self test"]);
      } else {
        const { width, height } = model.imageSpec!;
        vecs = await model.embedImages([{ rgb: new Uint8Array(width * height * 3).fill(128), width, height }]);
      }
      const runMs = performance.now() - t1;
      if (vecs.length !== 1 || vecs[0].length !== model.dim || !vecs[0].every(Number.isFinite)) {
        throw new InferenceError("INFERENCE_FAILED", `self test of ${model.id}: bad output`);
      }
      return {
        ok: true,
        modelType: "clip",
        modelId: model.id,
        dtype,
        device,
        ran: `clip ${tower} tower`,
        loadMs: t1 - t0,
        runMs,
      };
    } finally {
      await model.dispose();
    }
  }
  if (config.model_type === "whisper") {
    const dtype = await pickDtype(dir, ["encoder_model", "decoder_model_merged"], opts.dtype);
    const model = await WhisperModel.load(dir, { ...opts, device, dtype });
    try {
      const t1 = performance.now();
      const features = await model.extractFeatures(new Float32Array(WHISPER_SELFTEST_SAMPLES));
      const tokens = await model.generateTokens(features, { timestamps: false, maxNewTokens: 1 });
      const runMs = performance.now() - t1;
      if (tokens.length !== 1 || !Number.isInteger(tokens[0])) {
        throw new InferenceError("INFERENCE_FAILED", `self test of ${model.id}: bad output`);
      }
      return {
        ok: true,
        modelType: "whisper",
        modelId: model.id,
        dtype,
        device,
        ran: "whisper encoder+decoder",
        loadMs: t1 - t0,
        runMs,
      };
    } finally {
      await model.dispose();
    }
  }
  throw new InferenceError(
    "MODEL_LOAD_FAILED",
    `${dir}: model_type "${config.model_type}" is neither clip nor whisper`,
  );
}

/** In-process variant of device.ts `createPoolProbe` (loads ONNX Runtime in the calling thread). */
export function createModelProbe(
  modelDir: string,
  opts: { dtype?: WeightDtype; intraOpThreads?: number } = {},
): (device: ExecDevice) => Promise<{ ok: boolean; detail: string }> {
  return async (device) => {
    const r = await selfTestModel(modelDir, { ...opts, device });
    return { ok: true, detail: `${r.ran} of ${r.modelId} ran in ${r.runMs.toFixed(1)} ms` };
  };
}
