import { statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setEnvironmentData } from "node:worker_threads";
import { devOcrPaths, OCR_PATHS_KEY, type OcrWasmPaths } from "../ocr/paths.ts";
import { embeddedAssets } from "./embedded.ts";
import { type ExtractJob, extractAll } from "./extract.ts";
import { type NativeKey, resolveToolFiles } from "./native-files.ts";
import { removeOrtDebugLogAtExit } from "./ort-debug-log.ts";
import { switchOffOrtTelemetry } from "./ort-telemetry.ts";
import {
  type EmbeddedAssets,
  NATIVE_PATHS_KEY,
  type NativeLoadPaths,
  type PrepareRuntimeOptions,
  type RuntimeOverrides,
  type RuntimePaths,
} from "./types.ts";

/**
 * Finds (dev) or extracts (compiled binary) the native pieces: ffmpeg, ffprobe, the sqlite-vec
 * extension, ONNX Runtime and sharp. Call once per process, before creating the inference pool or
 * importing anything that loads @huggingface/transformers or onnxruntime-node in this thread.
 */
export async function prepareRuntime(opts: PrepareRuntimeOptions): Promise<RuntimePaths> {
  // ONNX Runtime 1.30's telemetry writes under $HOME/.cache/Microsoft and $TMPDIR in each process
  // that loads a model; it reads its switch when the first session is made, so it is set here. The
  // exit hook removes the empty mat-debug file where the switch could not be set or stays on.
  switchOffOrtTelemetry();
  removeOrtDebugLogAtExit();
  const embedded = embeddedAssets();
  return embedded ? prepareFromEmbedded(embedded, opts) : prepareDev(opts.overrides);
}

/** A configured ffmpeg/ffprobe path must name an existing file; a typo should stop the start, not every later ingest. */
function override(kind: keyof RuntimeOverrides, path: string | undefined): string | undefined {
  if (path === undefined || path === "") return undefined;
  const abs = resolve(path);
  let ok = false;
  try {
    ok = statSync(abs).isFile();
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(`${kind} path from the configuration (${kind}_path) is not a file: ${abs}`);
  return abs;
}

function prepareDev(overrides: RuntimeOverrides = {}): RuntimePaths {
  const tools = resolveToolFiles();
  return {
    compiled: false,
    ffmpeg: override("ffmpeg", overrides.ffmpeg) ?? tools.ffmpeg,
    ffprobe: override("ffprobe", overrides.ffprobe) ?? tools.ffprobe,
    vecExtension: tools.vec0,
    inferenceWorkerFile: join(dirname(fileURLToPath(import.meta.url)), "..", "inference", "worker.ts"),
    storeReaderFile: join(dirname(fileURLToPath(import.meta.url)), "..", "store", "sqlite", "read-worker.ts"),
    ocr: devOcrPaths(),
    runtimeDir: null,
    extracted: [],
  };
}

/** One path segment: the version names a folder. */
function versionSegment(version: string): string {
  if (!/^[0-9A-Za-z][0-9A-Za-z._+-]*$/.test(version))
    throw new Error(`runtime version "${version}" is not usable as a folder name`);
  return version;
}

/**
 * The compiled binary's half of prepareRuntime, taking the embedded file table as a parameter so
 * tests can drive it with ordinary files: extract to `<dataDir>/runtime/<version>/` and publish the
 * addon paths to worker threads.
 */
export async function prepareFromEmbedded(
  embedded: EmbeddedAssets,
  opts: PrepareRuntimeOptions,
): Promise<RuntimePaths> {
  const here = `${process.platform}-${process.arch}`;
  if (embedded.platform !== here)
    throw new Error(`this vsearch binary was built for ${embedded.platform}, not ${here}`);
  for (const [name, path] of Object.entries(embedded.entries)) {
    if (!statSync(path, { throwIfNoEntry: false })?.isFile())
      throw new Error(`this vsearch binary lacks its ${name} entry point (${path}); rebuild it with build.ts`);
  }
  const ffmpeg = override("ffmpeg", opts.overrides?.ffmpeg);
  const ffprobe = override("ffprobe", opts.overrides?.ffprobe);
  const runtimeDir = join(resolve(opts.dataDir), "runtime", versionSegment(opts.version));

  // An operator's own ffmpeg/ffprobe replaces ours: ours is then not written to disk at all.
  const keys = (Object.keys(embedded.files) as NativeKey[]).filter(
    (k) => !(k === "ffmpeg" && ffmpeg) && !(k === "ffprobe" && ffprobe),
  );
  const jobs: ExtractJob[] = keys.map((k) => ({
    source: embedded.files[k].path,
    target: embedded.files[k].target,
    executable: embedded.files[k].executable,
  }));
  const results = await extractAll(jobs, runtimeDir);
  const at = (k: NativeKey) => join(runtimeDir, embedded.files[k].target);

  // Every worker thread started after this gets a clone (worker_threads environment data); the
  // build-time patches of onnxruntime-node and sharp load their addons from these paths.
  const load: NativeLoadPaths = { ortBinding: at("ortBinding"), sharpBinding: at("sharpBinding") };
  setEnvironmentData(NATIVE_PATHS_KEY, load);
  // The OCR worker reads its wasm core from here (there is no node_modules inside the binary).
  const wasm: OcrWasmPaths = { simd: at("ocrWasmSimd"), plain: at("ocrWasm") };
  setEnvironmentData(OCR_PATHS_KEY, wasm);

  return {
    compiled: true,
    ffmpeg: ffmpeg ?? at("ffmpeg"),
    ffprobe: ffprobe ?? at("ffprobe"),
    vecExtension: at("vec0"),
    inferenceWorkerFile: embedded.entries.inferenceWorker,
    storeReaderFile: embedded.entries.storeReader,
    ocr: {
      workerFile: embedded.entries.ocrWorker,
      langDir: dirname(at("ocrLang")),
      wasm,
      ppocr: {
        workerFile: embedded.entries.ppocrWorker,
        det: at("ppocrDet"),
        rec: at("ppocrRec"),
        keys: at("ppocrKeys"),
      },
    },
    runtimeDir,
    extracted: jobs.filter((_, i) => results[i].written).map((j) => j.target),
  };
}
