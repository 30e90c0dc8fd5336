/**
 * A process as vsearch starts one (prepareRuntime), that loads a tiny model with ONNX Runtime — in
 * a worker thread, as the inference pool does, or with `thread=main` in its own — and exits
 * normally: ort-debug-log.test.ts looks at its HOME and TMPDIR after it. Prints one JSON line: its
 * pid, ORT_DISABLE_TELEMETRY as its start environment had it and as the C library sees it after
 * prepareRuntime, and whether its `mat-debug` file was there after the load. Arguments: the data
 * dir, then `thread=main` and/or `write` (writes a byte into that file: a log with something in
 * it, which must be kept).
 */
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { isMainThread, parentPort, Worker } from "node:worker_threads";
import { prepareRuntime } from "../../src/runtime/index.ts";
import { ortDebugLogPath } from "../../src/runtime/ort-debug-log.ts";
import { cEnvironmentValue } from "../../src/runtime/ort-telemetry.ts";

const MODEL = join(
  import.meta.dirname,
  "..",
  "fixtures",
  "models",
  "tiny-random-clip",
  "onnx",
  "text_model_quantized.onnx",
);

async function loadModel(): Promise<string[]> {
  const ort = await import("onnxruntime-node");
  const session = await ort.InferenceSession.create(MODEL);
  const inputs = [...session.inputNames];
  await session.release();
  return inputs;
}

function loadInWorker(): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url));
    let inputs: string[] | null = null;
    worker.once("message", (m: string[]) => {
      inputs = m;
    });
    worker.once("error", reject);
    worker.once("exit", () => (inputs ? resolve(inputs) : reject(new Error("the worker ended without an answer"))));
  });
}

if (!isMainThread) {
  parentPort?.postMessage(await loadModel());
} else {
  const startValue = process.env.ORT_DISABLE_TELEMETRY ?? null;
  const args = process.argv.slice(3);
  await prepareRuntime({ dataDir: process.argv[2]!, version: "test" });
  const cValue = cEnvironmentValue("ORT_DISABLE_TELEMETRY") ?? null;
  const inputs = args.includes("thread=main") ? await loadModel() : await loadInWorker();
  const debugLog = existsSync(ortDebugLogPath());
  if (args.includes("write") && debugLog) appendFileSync(ortDebugLogPath(), "x");
  console.log(JSON.stringify({ pid: process.pid, startValue, cValue, debugLog, inputs }));
}
