import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the OCR engine's files are for this process (dev: node_modules; binary: extracted). */
export interface OcrPaths {
  /** The tesseract.js worker thread's program (src/ocr/tesseract-worker.ts or its copy inside the binary). */
  workerFile: string;
  /** Folder holding `eng.traineddata.gz` (@tesseract.js-data/eng, 4.0.0_best_int). */
  langDir: string;
  /** The wasm cores; null in dev, where the worker resolves them from node_modules. */
  wasm: OcrWasmPaths | null;
}

export interface OcrWasmPaths {
  simd: string;
  plain: string;
}

/** The `worker_threads` environment-data key under which the main thread publishes OcrWasmPaths. */
export const OCR_PATHS_KEY = "vsearch:ocr-wasm-paths";

/** The files as npm installed them (dev and tests): the worker as TypeScript, the data from @tesseract.js-data/eng. */
export function devOcrPaths(): OcrPaths {
  const require = createRequire(import.meta.url);
  return {
    workerFile: join(dirname(fileURLToPath(import.meta.url)), "tesseract-worker.ts"),
    langDir: join(dirname(require.resolve("@tesseract.js-data/eng/package.json")), OCR_LANG_MODEL),
    wasm: null,
  };
}

/** Which of the packaged English models: LSTM integer weights, 3 MB, the fastest (the 4.0.0 float one is 11 MB). */
export const OCR_LANG_MODEL = "4.0.0_best_int";
