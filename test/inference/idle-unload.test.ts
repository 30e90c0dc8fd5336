/**
 * Idle models leave memory: the host closes a pool that had no task for `modelIdleUnloadSecs`,
 * never one with a task in flight, and the next task starts it again. Real worker threads, real
 * ONNX sessions on the tiny random models. After an unload the idle memory passes hand memory
 * back, never while work is in flight (src/system/idle-memory.ts; the OCR side: test/ocr/idle.test.ts).
 */
import { afterEach, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { InferenceHost } from "../../src/inference/host.ts";
import { dropLibraryPages, trimNativeHeap } from "../../src/inference/native-heap.ts";
import { IdleMemory } from "../../src/system/idle-memory.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { WORKER_FILE } from "./helpers.ts";

const dirs = tempDirs("vsearch-idle-");
/**
 * How long a test waits for a pool to close (or a pass to run) before calling it a failure. A
 * bound on a hang, not a speed target: closing terminates worker threads, and on a loaded 2-core
 * machine (load ~30) that took longer than the 5 s this used to be. Without the idle unload the
 * condition never holds, so any bound catches it.
 */
const CLOSE_WAIT_MS = 30_000;
const hosts: InferenceHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  dirs.cleanup();
});

function host(idleSecs: number, onUnloaded: (() => void) | null = null): InferenceHost {
  const dir = dirs.make();
  const config = loadConfig(
    { dataDir: dir, logLevel: "silent" },
    { VSEARCH_MODEL_IDLE_UNLOAD_SECS: String(idleSecs), VSEARCH_DEVICE: "cpu" },
  );
  const h = new InferenceHost(
    config,
    WORKER_FILE,
    fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }),
    createLogger("silent"),
    null,
    onUnloaded,
  );
  hosts.push(h);
  return h;
}

const embed = async (h: InferenceHost, text: string) =>
  (await h.get()).embedTexts({ modelDir: tinyClip.dir, dtype: tinyClip.dtype }, [text]);

describe("idle model unloading", () => {
  test("a pool with no task for the idle time closes; the next task starts it again with the same answer", async () => {
    let unloads = 0;
    const h = host(0.3, () => unloads++);
    const first = await embed(h, "a red car");
    expect(h.started).toBe(true);
    expect(await until(async () => !h.started, CLOSE_WAIT_MS)).toBe(true);
    // The hook that hands memory back runs once the pool has closed.
    expect(await until(async () => unloads === 1, CLOSE_WAIT_MS)).toBe(true);
    const again = await embed(h, "a red car");
    expect(h.started).toBe(true);
    // A fresh worker loaded the model again (its load counter restarts at 1) and answers identically.
    expect(again.worker.modelLoads).toBe(1);
    expect(Array.from(again.vectors[0])).toEqual(Array.from(first.vectors[0]));
  });

  test("a pool is never closed while a task is in flight, however long it runs", async () => {
    const h = host(0.05);
    const pool = await h.get();
    const windows = Array.from({ length: 2 }, (_, i) => ({
      samples: new Float32Array(16000 * 20),
      offsetSecs: i * 20,
    }));
    const running = pool.transcribeWindows(
      { modelDir: tinyWhisper.dir, dtype: tinyWhisper.dtype, maxNewTokens: 32 },
      windows,
    );
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
    expect(await until(async () => !h.started, CLOSE_WAIT_MS)).toBe(true);
  });

  test("busy counts tasks in flight only", async () => {
    const h = host(60);
    const pool = await h.get();
    const running = pool.embedTexts({ modelDir: tinyClip.dir, dtype: tinyClip.dtype }, ["x"]);
    expect(h.busy).toBe(true);
    await running;
    expect(h.busy).toBe(false);
    expect(h.started).toBe(true);
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

  test("library code pages can be dropped, and the library keeps working", async () => {
    const h = host(60);
    const before = await embed(h, "a red car");
    // ONNX Runtime's code (loaded by the worker) leaves RSS; a later task faults it back in and runs on.
    expect(dropLibraryPages(/\/[^/]*onnxruntime[^/]*$/)).toBeGreaterThan(0);
    const after = await embed(h, "a red car");
    expect(Array.from(after.vectors[0])).toEqual(Array.from(before.vectors[0]));
  });
});

describe("idle memory passes", () => {
  const logger = createLogger("silent");

  test("a pass runs only when nothing is in flight; a skipped one releases nothing", async () => {
    let busy = true;
    let released = 0;
    const m = new IdleMemory({
      busy: () => busy,
      release: [
        {
          name: "cache",
          run: async () => {
            released++;
          },
        },
      ],
      logger,
    });
    expect(await m.pass()).toBeNull();
    expect(released).toBe(0);
    busy = false;
    const p = await m.pass();
    expect(p).not.toBeNull();
    expect(released).toBe(1);
    expect(m.passCount).toBe(1);
    expect(p!.rssAfter).toBeGreaterThan(0);
  });

  test("schedule plans the passes from the last unload (replacing pending ones); passes that find work in flight are skipped", async () => {
    let busy = false;
    const m = new IdleMemory({ busy: () => busy, release: [], logger, passesMs: [20, 60] });
    m.schedule();
    m.schedule(); // a second unload before any pass: its passes replace the first one's
    expect(m.pending).toBe(true);
    expect(await until(async () => !m.pending, CLOSE_WAIT_MS, 5)).toBe(true);
    await Bun.sleep(100);
    expect(m.passCount).toBe(2);
    busy = true; // work in flight at both passes: nothing runs
    m.schedule();
    expect(await until(async () => !m.pending, CLOSE_WAIT_MS, 5)).toBe(true);
    expect(m.passCount).toBe(2);
    m.close();
  });

  test("library pages are dropped only when nothing uses them; a failing release does not stop the pass", async () => {
    let unused = false;
    const m = new IdleMemory({
      busy: () => false,
      release: [
        {
          name: "broken",
          run: () => {
            throw new Error("boom");
          },
        },
      ],
      libraries: { path: /\/libc\.so\.6$/, unused: () => unused },
      logger,
    });
    expect((await m.pass())!.libraryBytesDropped).toBe(0);
    unused = true;
    expect((await m.pass())!.libraryBytesDropped).toBeGreaterThan(0);
  });
});
