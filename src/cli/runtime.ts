import type { AppRuntime } from "../app.ts";
import type { Config } from "../config/config.ts";
import { prepareRuntime } from "../runtime/index.ts";
import { VERSION } from "../version.ts";

/** Native paths for this process: node_modules in dev, extracted from the binary when compiled. */
export function resolveRuntime(config: Config): Promise<AppRuntime> {
  return prepareRuntime({
    dataDir: config.dataDir,
    version: VERSION,
    overrides: { ffmpeg: config.ffmpegPath, ffprobe: config.ffprobePath },
  });
}
