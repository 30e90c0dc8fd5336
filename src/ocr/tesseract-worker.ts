/**
 * The thread tesseract.js starts for each OCR worker (its `workerPath`), in dev and in the compiled
 * binary alike. It is tesseract.js's own Node worker script (src/worker-script/node/index.js) with
 * one change: the wasm core is loaded from an explicit file instead of from beside the core's
 * JavaScript. Inside the binary there is no `node_modules/tesseract.js-core/` for the core's glue
 * to find its `.wasm` next to, so the main thread publishes where src/runtime/ extracted it
 * (worker_threads environment data, cloned into every Worker) and we hand the bytes to the
 * Emscripten module as `wasmBinary`. No network: tesseract.js's adapter gets a `fetch` that refuses.
 *
 * This module is a thread's program, so its top level runs on purpose.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { getEnvironmentData, parentPort } from "node:worker_threads";
import { simd } from "wasm-feature-detect";
// tesseract.js has no exports map: these are its worker internals, the same files its worker uses.
import worker from "tesseract.js/src/worker-script/index.js";
import gunzip from "tesseract.js/src/worker-script/node/gunzip.js";
import cache from "tesseract.js/src/worker-script/node/cache.js";
// The two LSTM-only cores (we always run OEM.LSTM_ONLY): SIMD where the engine has it, plain otherwise.
import simdLstm from "tesseract.js-core/tesseract-core-simd-lstm.js";
import plainLstm from "tesseract.js-core/tesseract-core-lstm.js";
import { OCR_PATHS_KEY, type OcrWasmPaths } from "./paths.ts";

type CoreFactory = (opts: Record<string, unknown>) => Promise<unknown>;

function wasmFiles(): OcrWasmPaths {
  const published = getEnvironmentData(OCR_PATHS_KEY) as OcrWasmPaths | undefined;
  if (published) return published;
  // Dev (bun run / vitest): the files as npm installed them.
  const require = createRequire(import.meta.url);
  return {
    simd: require.resolve("tesseract.js-core/tesseract-core-simd-lstm.wasm"),
    plain: require.resolve("tesseract.js-core/tesseract-core-lstm.wasm"),
  };
}

let core: CoreFactory | null = null;
async function getCore(): Promise<CoreFactory> {
  if (!core) {
    const useSimd = await simd();
    const factory = (useSimd ? simdLstm : plainLstm) as CoreFactory;
    const wasmBinary = readFileSync(useSimd ? wasmFiles().simd : wasmFiles().plain);
    // print/printErr: tesseract's own chatter ("Estimating resolution as …") stays out of our logs.
    core = (opts) => factory({ ...opts, wasmBinary, print: () => {}, printErr: () => {} });
  }
  return core;
}

const noFetch = () => Promise.reject(new Error("vsearch OCR never downloads: langPath must be a local folder"));

parentPort!.on("message", (packet: unknown) => {
  worker.dispatchHandlers(packet, (obj: unknown) => parentPort!.postMessage(obj));
});
worker.setAdapter({ getCore, gunzip, fetch: noFetch, ...cache });
