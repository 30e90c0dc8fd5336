/**
 * Shared plumbing for loading transformers.js models from a local folder: dtype → file names,
 * presence checks (→ MODEL_NOT_INSTALLED), a content fingerprint for model ids, the transformers
 * `env` settings, and ONNX Runtime session options.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { env } from "@huggingface/transformers";
import { InferenceError, describeError } from "./errors.ts";
import type { Dtype, ExecDevice } from "./dtype.ts";
import { signedWeightsModelDir } from "./derived-model.ts";

export * from "./dtype.ts";

/** Absolute model path. transformers.js treats a relative `a/b` as a hub id, an absolute path never. */
export function resolveModelDir(modelDir: string): string {
  if (typeof modelDir !== "string" || modelDir.length === 0) {
    throw new InferenceError("INVALID_INPUT", "modelDir must be a non-empty path");
  }
  return isAbsolute(modelDir) ? resolve(modelDir) : resolve(process.cwd(), modelDir);
}

export async function fileExists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** Throws MODEL_NOT_INSTALLED naming the first missing file. */
export async function requireFiles(modelDir: string, files: string[], what: string): Promise<void> {
  for (const f of files) {
    if (!(await fileExists(join(modelDir, f)))) {
      throw new InferenceError("MODEL_NOT_INSTALLED", `${what}: missing ${f} in ${modelDir}`);
    }
  }
}

/** Reads `config.json`; a missing folder or file is MODEL_NOT_INSTALLED, bad JSON MODEL_LOAD_FAILED. */
export async function readModelConfig(modelDir: string): Promise<Record<string, any>> {
  const path = join(modelDir, "config.json");
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    throw new InferenceError("MODEL_NOT_INSTALLED", `no model installed at ${modelDir} (config.json not found)`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InferenceError("MODEL_LOAD_FAILED", `${path} is not valid JSON: ${describeError(e)}`);
  }
}

export async function readJson(path: string): Promise<Record<string, any>> {
  try {
    return JSON.parse(await readFile(path, "utf8"));
  } catch (e) {
    throw new InferenceError("MODEL_LOAD_FAILED", `cannot read ${path}: ${describeError(e)}`);
  }
}

/**
 * `name@sha` model id: folder name plus the first 12 hex digits of a SHA-256 over the given files
 * (path-tagged, in order). Streams the files, so large ONNX weights are hashed without buffering.
 */
export async function fingerprint(modelDir: string, files: string[]): Promise<string> {
  const hash = createHash("sha256");
  for (const f of files) {
    hash.update(`\0${f}\0`);
    await new Promise<void>((ok, fail) => {
      createReadStream(join(modelDir, f))
        .on("data", (chunk) => hash.update(chunk))
        .on("end", () => ok())
        .on("error", fail);
    });
  }
  return `${basename(modelDir)}@${hash.digest("hex").slice(0, 12)}`;
}

/**
 * transformers.js settings: local files only, and nothing pointing at the package's own folder
 * (inside a compiled binary that is the read-only embedded filesystem). Models are always loaded
 * by absolute path, so `localModelPath` only needs to be a real place; the file cache is off
 * (nothing is downloaded, and a stale cache must never shadow the installed files).
 * Idempotent; called before every load, never at import time.
 */
export function configureTransformersEnv(modelDir: string, cacheDir?: string): void {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = dirname(modelDir) + "/";
  env.cacheDir = cacheDir ?? join(dirname(modelDir), ".transformers-cache");
  env.useFSCache = false;
  env.useBrowserCache = false;
}

export interface RuntimeOptions {
  /** Execution provider. Default `cpu`. */
  device?: ExecDevice;
  /** ONNX Runtime intra-op threads per session. Default 1. */
  intraOpThreads?: number;
  /**
   * Let ORT's intra-op threads busy-wait between ops. Off by default: the CPU is shared with
   * ffmpeg and the HTTP server, and spinning burns a core for ~1 s after every run.
   */
  allowSpinning?: boolean;
  /** Where transformers.js may keep a cache (a data-dir path). Default: next to the model. */
  cacheDir?: string;
  /**
   * Where to keep models whose uint8 MatMulInteger weights were made int8 for ONNX Runtime's VNNI
   * kernels (derived-model.ts). Absent: models load exactly as installed. The caller sets it only
   * on CPUs with VNNI (see `signedWeightsPolicy`).
   */
  signedWeightsDir?: string;
}

/**
 * The folder to load a model's ONNX files from: the installed one, or (when `signedWeightsDir` is
 * set) a derived copy with signed int8 weights. A failed conversion is not fatal: the model then
 * loads as installed, only slower.
 */
export async function loadableModelDir(modelDir: string, onnxFiles: string[], rt: RuntimeOptions): Promise<string> {
  if (!rt.signedWeightsDir || (rt.device ?? "cpu") !== "cpu") return modelDir;
  try {
    return (await signedWeightsModelDir(modelDir, onnxFiles, rt.signedWeightsDir)).dir;
  } catch {
    return modelDir;
  }
}

/**
 * The first steps of every model load: the folder made absolute, the dtype present (it is always
 * explicit), the device (default cpu), and config.json, whose model_type must be `modelType`.
 */
export async function openModelDir(
  modelDir: string,
  opts: RuntimeOptions & { dtype: Dtype },
  modelType: string,
  name: string,
): Promise<{ dir: string; device: ExecDevice; config: Record<string, any> }> {
  const dir = resolveModelDir(modelDir);
  if (opts.dtype === undefined)
    throw new InferenceError("INVALID_INPUT", `${name} load: dtype is required (fp32 or q8)`);
  const device = opts.device ?? "cpu";
  const config = await readModelConfig(dir);
  if (config.model_type !== modelType) {
    throw new InferenceError("MODEL_LOAD_FAILED", `${dir} is a "${config.model_type}" model, not ${name}`);
  }
  return { dir, device, config };
}

/** The folder to load `onnxFiles` from (loadableModelDir), with transformers.js set up to load from it. */
export async function prepareModelLoad(modelDir: string, onnxFiles: string[], rt: RuntimeOptions): Promise<string> {
  const loadDir = await loadableModelDir(modelDir, onnxFiles, rt);
  configureTransformersEnv(loadDir, rt.cacheDir);
  return loadDir;
}

export function sessionOptions(rt: RuntimeOptions): Record<string, unknown> {
  const intra = Math.max(1, Math.floor(rt.intraOpThreads ?? 1));
  return {
    intraOpNumThreads: intra,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    extra: { session: { intra_op: { allow_spinning: rt.allowSpinning ? "1" : "0" } } },
  };
}

/** Wraps a transformers.js/ORT load failure; keeps our own errors (e.g. a missing file). */
export function loadFailed(e: unknown, what: string, device: ExecDevice): InferenceError {
  if (e instanceof InferenceError) return e;
  const msg = describeError(e);
  if (device !== "cpu" && /execution ?provider|shared library|adapter|cuda|webgpu/i.test(msg)) {
    return new InferenceError("DEVICE_UNAVAILABLE", `${what}: device "${device}" is not usable here: ${msg}`, {
      cause: e,
    });
  }
  return new InferenceError("MODEL_LOAD_FAILED", `${what}: ${msg}`, { cause: e });
}

/** L2-normalises `v` in place (a zero vector stays zero) and returns it. */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}
