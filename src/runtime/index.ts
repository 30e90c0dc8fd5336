/** The native runtime: where ffmpeg, ffprobe, sqlite-vec and ONNX Runtime are, and a check that they work. */
export { prepareRuntime } from "./prepare.ts";
export { runSelfTest, type SelfTestOptions, type SelfTestReport } from "./self-test.ts";
export type { PrepareRuntimeOptions, RuntimeOverrides, RuntimePaths } from "./types.ts";
