/**
 * A process as vsearch starts one (prepareRuntime), that loads a tiny model with ONNX Runtime and
 * exits normally: ort-debug-log.test.ts looks in /tmp after it. Prints one JSON line: its pid,
 * whether a `mat-debug` file of its pid was there before the load (left by an earlier process
 * that had the same pid) and whether it was there after it. `argv[3] === "write"`: writes a
 * byte into that file first (a log with something in it, which must be kept).
 */
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { prepareRuntime } from "../../src/runtime/index.ts";
import { ortDebugLogPath } from "../../src/runtime/ort-debug-log.ts";

const dataDir = process.argv[2]!;
await prepareRuntime({ dataDir, version: "test" });
const before = existsSync(ortDebugLogPath());
const ort = await import("onnxruntime-node");
const model = join(
  import.meta.dirname,
  "..",
  "fixtures",
  "models",
  "tiny-random-clip",
  "onnx",
  "text_model_quantized.onnx",
);
const session = await ort.InferenceSession.create(model);
const whileRunning = existsSync(ortDebugLogPath());
if (process.argv[3] === "write" && whileRunning) appendFileSync(ortDebugLogPath(), "x");
await session.release();
console.log(JSON.stringify({ pid: process.pid, before, whileRunning, inputs: session.inputNames }));
