import { createRequire } from "node:module";
import type { AppRuntime } from "../app.ts";
import type { Config } from "../config/config.ts";

/** Development runtime: native pieces straight from node_modules. (The compiled binary swaps this.) */
export async function resolveRuntime(config: Config): Promise<AppRuntime> {
  const require = createRequire(import.meta.url);
  const vec = require("sqlite-vec") as { getLoadablePath(): string };
  return {
    vecExtension: vec.getLoadablePath(),
    ffmpeg: config.ffmpegPath ?? (require("@ffmpeg-installer/ffmpeg") as { path: string }).path,
    ffprobe: config.ffprobePath ?? (require("@ffprobe-installer/ffprobe") as { path: string }).path,
    inferenceWorkerFile: new URL("../inference/worker.ts", import.meta.url).pathname,
  };
}
