/**
 * Entry point of every Piscina worker thread in the compiled binary (build.ts lists it as an extra
 * entry point and patches Piscina to start it instead of piscina/dist/worker.js, which is not a
 * file of its own inside the binary). In dev Piscina starts its own worker.js and this file is unused.
 *
 * This module is a thread's program, so its top level runs on purpose: first check that the
 * native libraries the main thread extracted are there for this thread (onnxruntime-node and sharp,
 * patched by build.ts, load their addons from those paths when the task module imports
 * @huggingface/transformers), then hand the thread to Piscina's worker loop.
 */
import { nativeLoadPaths } from "./worker-thread.ts";

nativeLoadPaths();
await import("piscina/dist/worker.js");
