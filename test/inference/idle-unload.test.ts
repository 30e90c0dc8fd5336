/**
 * Idle models leave memory: the host closes a pool that had no task for `modelIdleUnloadSecs`,
 * never one with a task in flight, and the next task starts it again. Real worker threads, real
 * ONNX sessions on the tiny random models.
 */
import { afterEach, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { InferenceHost } from "../../src/inference/host.ts";
import { trimNativeHeap } from "../../src/inference/native-heap.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { WORKER_FILE } from "./helpers.ts";

const dirs = tempDirs("vsearch-idle-");
const hosts: InferenceHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  dirs.cleanup();
});

function host(idleSecs: number): InferenceHost {
  const dir = dirs.make();
  const config = loadConfig({ dataDir: dir, logLevel: "silent" }, { VSEARCH_MODEL_IDLE_UNLOAD_SECS: String(idleSecs), VSEARCH_DEVICE: "cpu" });
  const h = new InferenceHost(config, WORKER_FILE, fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }), createLogger("silent"));
  hosts.push(h);
  return h;
}

const embed = async (h: InferenceHost, text: string) => (await h.get()).embedTexts({ modelDir: tinyClip.dir, dtype: tinyClip.dtype }, [text]);

describe("idle model unloading", () => {
  test("a pool with no task for the idle time closes; the next task starts it again with the same answer", async () => {
    const h = host(0.3);
    const first = await embed(h, "a red car");
    expect(h.started).toBe(true);
    expect(await until(() => !h.started, 5_000)).toBe(true);
    const again = await embed(h, "a red car");
    expect(h.started).toBe(true);
    // A fresh worker loaded the model again (its load counter restarts at 1) and answers identically.
    expect(again.worker.modelLoads).toBe(1);
    expect(Array.from(again.vectors[0])).toEqual(Array.from(first.vectors[0]));
  });

  test("a pool is never closed while a task is in flight, however long it runs", async () => {
    const h = host(0.05);
    const pool = await h.get();
    const windows = Array.from({ length: 2 }, (_, i) => ({ samples: new Float32Array(16000 * 20), offsetSecs: i * 20 }));
    const running = pool.transcribeWindows({ modelDir: tinyWhisper.dir, dtype: tinyWhisper.dtype, maxNewTokens: 32 }, windows);
    // Check repeatedly while the task runs: the speech pool must stay up.
    let closedMidTask = 0;
    let done = false;
    void running.finally(() => (done = true));
    while (!done) {
      closedMidTask += await h.unloadIdle();
      await Bun.sleep(10);
    }
    await running;
    expect(closedMidTask).toBe(0);
    expect(await until(() => !h.started, 5_000)).toBe(true);
  });

  test("0 keeps models loaded", async () => {
    const h = host(0);
    await embed(h, "x");
    await Bun.sleep(300);
    expect(await h.unloadIdle()).toBe(0);
    expect(h.started).toBe(true);
  });

  test("the native heap trim runs on glibc", () => {
    expect(trimNativeHeap()).toBe(true);
  });
});
