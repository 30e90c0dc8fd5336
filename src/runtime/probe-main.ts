// TEMPORARY (runtime engineer): proves the compiled mechanism until src/main.ts has `doctor`. Delete me.
import { prepareRuntime, runSelfTest } from "./index.ts";
const t0 = performance.now();
const p = await prepareRuntime({ dataDir: process.argv[2], version: "0.1.0" });
console.error("prepare ms", performance.now() - t0, p.extracted);
if (process.argv[4] === "main-thread") {
  const sharp = (await import("sharp")).default;
  const { data, info } = await sharp(process.argv[5]).raw().toBuffer({ resolveWithObject: true });
  console.error("sharp in main thread", info, data.length);
  const ort = await import("onnxruntime-node");
  const s = await ort.InferenceSession.create(process.argv[3] + "/onnx/text_model_quantized.onnx");
  console.error("ORT in main thread", s.inputNames, s.outputNames);
}
console.log(JSON.stringify(await runSelfTest(p, { modelDir: process.argv[3] }), null, 1));
