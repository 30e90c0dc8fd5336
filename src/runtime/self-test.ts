import { execFile } from "node:child_process";
import type { ExecDevice } from "../inference/dtype.ts";
import type { RuntimePaths } from "./types.ts";
import { checkVecExtension } from "../store/sqlite/vec-check.ts";

/** `vsearch doctor`'s view of the native runtime. JSON-able; snake_case like the API. */
export interface SelfTestReport {
  /** Every check that ran passed. */
  ok: boolean;
  compiled: boolean;
  runtime_dir: string | null;
  sqlite_version: string | null;
  vec_version: string | null;
  /**
   * A real vec0 KNN query returned the expected neighbours in the expected order; null when not
   * checked: on PostgreSQL (database_url) neither SQLite nor sqlite-vec is used.
   */
  vec_query_ok: boolean | null;
  ffmpeg_version: string | null;
  ffprobe_version: string | null;
  /** Only with `modelDir`: an ONNX session loaded and ran inside an inference pool worker thread. */
  onnx_ok?: boolean;
  device?: string;
  onnx?: {
    model_id: string;
    model_type: string;
    ran: string;
    dtype: string;
    load_ms: number;
    run_ms: number;
    worker_thread_id: number;
  };
  /** One line per failed check. */
  errors: string[];
}

export interface SelfTestOptions {
  /** A model folder (transformers.js layout) to run once in a pool worker. */
  modelDir?: string;
  /** Execution provider for the ONNX check. Default cpu. */
  device?: ExecDevice;
  /** Bound on each check. Default 120 s (the ONNX check loads a model). */
  timeoutMs?: number;
  /** Check SQLite and sqlite-vec (default true; false on PostgreSQL, where they are not used). */
  sqliteVec?: boolean;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** First line of `<tool> -version`, e.g. "ffmpeg version 4.1 Copyright …" → "4.1". */
function toolVersion(path: string, tool: string, timeoutMs: number): Promise<string> {
  return new Promise((ok, fail) => {
    execFile(path, ["-hide_banner", "-version"], { timeout: timeoutMs, maxBuffer: 1 << 20 }, (err, stdout) => {
      if (err) return fail(new Error(`${tool} (${path}): ${message(err)}`));
      const m = /^\S+ version (\S+)/.exec(stdout);
      if (!m) return fail(new Error(`${tool} (${path}): unexpected -version output: ${stdout.split("\n")[0]}`));
      ok(m[1]);
    });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

async function checkOnnx(
  paths: RuntimePaths,
  modelDir: string,
  device: ExecDevice,
  timeoutMs: number,
): Promise<NonNullable<SelfTestReport["onnx"]> & { device: string }> {
  // Imported here, not at the top: the pool is only needed when a model is given.
  const { createInferencePool } = await import("../inference/pool.ts");
  const pool = createInferencePool({ workerFile: paths.inferenceWorkerFile, threads: 1, device });
  try {
    const r = await withTimeout(pool.selfTest(modelDir), timeoutMs, "ONNX self test");
    return {
      model_id: r.modelId,
      model_type: r.modelType,
      ran: r.ran,
      dtype: r.dtype,
      device: r.device,
      load_ms: Math.round(r.loadMs),
      run_ms: Math.round(r.runMs),
      worker_thread_id: r.worker.threadId,
    };
  } finally {
    await pool.close();
  }
}

/**
 * Exercises each native piece for real: loads sqlite-vec into an in-memory database (store/sqlite/vec-check.ts) and
 * runs a vec0 KNN query (unless `sqliteVec: false`), runs `ffmpeg -version` and `ffprobe -version`, and, given a model folder,
 * starts a one-thread inference pool and runs its selfTest task (an ONNX session in a worker
 * thread). A failing check is reported in `errors` (and `ok: false`), never thrown.
 */
export async function runSelfTest(paths: RuntimePaths, opts: SelfTestOptions = {}): Promise<SelfTestReport> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const errors: string[] = [];
  const report: SelfTestReport = {
    ok: false,
    compiled: paths.compiled,
    runtime_dir: paths.runtimeDir,
    sqlite_version: null,
    vec_version: null,
    vec_query_ok: false,
    ffmpeg_version: null,
    ffprobe_version: null,
    errors,
  };

  if (opts.sqliteVec === false) report.vec_query_ok = null;
  else {
    try {
      const vec = checkVecExtension(paths.vecExtension);
      report.sqlite_version = vec.sqlite_version;
      report.vec_version = vec.vec_version;
      report.vec_query_ok = vec.vec_query_ok;
      if (vec.error) errors.push(vec.error);
    } catch (e) {
      errors.push(`sqlite-vec (${paths.vecExtension}): ${message(e)}`);
    }
  }

  const [ffmpeg, ffprobe] = await Promise.allSettled([
    toolVersion(paths.ffmpeg, "ffmpeg", timeoutMs),
    toolVersion(paths.ffprobe, "ffprobe", timeoutMs),
  ]);
  if (ffmpeg.status === "fulfilled") report.ffmpeg_version = ffmpeg.value;
  else errors.push(message(ffmpeg.reason));
  if (ffprobe.status === "fulfilled") report.ffprobe_version = ffprobe.value;
  else errors.push(message(ffprobe.reason));

  if (opts.modelDir !== undefined) {
    report.onnx_ok = false;
    try {
      const { device, ...onnx } = await checkOnnx(paths, opts.modelDir, opts.device ?? "cpu", timeoutMs);
      report.onnx_ok = true;
      report.device = device;
      report.onnx = onnx;
    } catch (e) {
      errors.push(`onnx (${opts.modelDir}): ${message(e)}`);
    }
  }

  report.ok = errors.length === 0;
  return report;
}
