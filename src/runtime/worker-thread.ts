import { statSync } from "node:fs";
import { getEnvironmentData, isMainThread } from "node:worker_threads";
import { NATIVE_PATHS_KEY, type NativeLoadPaths } from "./types.ts";

/**
 * The native addon paths this thread will load, as the main thread's prepareRuntime() published
 * them (worker_threads environment data, cloned into every Worker at creation). Throws a message
 * that names the cause when they are missing or gone, instead of a bare dlopen error later.
 */
export function nativeLoadPaths(): NativeLoadPaths {
  const paths = getEnvironmentData(NATIVE_PATHS_KEY) as NativeLoadPaths | undefined;
  if (!paths || typeof paths.ortBinding !== "string" || typeof paths.sharpBinding !== "string") {
    throw new Error(
      `${isMainThread ? "main thread" : "worker thread"}: the runtime was not prepared (prepareRuntime() must run in the main thread before the inference pool starts)`,
    );
  }
  for (const p of [paths.ortBinding, paths.sharpBinding]) {
    if (!statSync(p, { throwIfNoEntry: false })?.isFile())
      throw new Error(`native library ${p} is missing; was the data dir's runtime/ folder removed while vsearch ran?`);
  }
  return paths;
}
