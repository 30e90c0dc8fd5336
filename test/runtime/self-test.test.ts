import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { prepareRuntime, runSelfTest } from "../../src/runtime/index.ts";
import { tempDirs } from "../helpers/temp.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const CLIP = join(ROOT, "test", "fixtures", "models", "tiny-random-clip");

const tempDir = tempDirs("vsearch-selftest-").make;

describe("runSelfTest", () => {
  test("dev runtime: vec0 KNN query, ffmpeg/ffprobe versions, an ONNX session in a pool worker thread", async () => {
    const paths = await prepareRuntime({ dataDir: tempDir(), version: "0.0.0" });
    const r = await runSelfTest(paths, { modelDir: CLIP });
    expect(r.errors).toEqual([]);
    expect(r).toMatchObject({
      ok: true,
      compiled: false,
      vec_query_ok: true,
      vec_version: expect.stringMatching(/^v0\.1\./),
      onnx_ok: true,
      device: "cpu",
    });
    expect(r.sqlite_version).toMatch(/^3\.\d+\.\d+$/);
    expect(r.ffmpeg_version).toBeTruthy();
    expect(r.ffprobe_version).toBeTruthy();
    expect(r.onnx).toMatchObject({ model_type: "clip", model_id: expect.stringMatching(/^tiny-random-clip@/) });
    expect(r.onnx!.worker_thread_id).toBeGreaterThan(0); // not the main thread (0)
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  test("without a model folder the ONNX check is skipped, not failed", async () => {
    const r = await runSelfTest(await prepareRuntime({ dataDir: tempDir(), version: "0.0.0" }));
    expect(r.ok).toBe(true);
    expect(r.onnx_ok).toBeUndefined();
  });

  test("each broken piece is reported by name; nothing throws", async () => {
    const d = tempDir();
    const failing = join(d, "ffmpeg");
    writeFileSync(failing, "#!/bin/sh\necho broken >&2\nexit 3\n", { mode: 0o755 });
    const chatty = join(d, "ffprobe");
    writeFileSync(chatty, "#!/bin/sh\necho hello\n", { mode: 0o755 });
    const paths = await prepareRuntime({ dataDir: d, version: "0.0.0" });
    const r = await runSelfTest(
      { ...paths, ffmpeg: failing, ffprobe: chatty, vecExtension: join(d, "missing-vec0.so") },
      { modelDir: join(d, "no-model"), timeoutMs: 30_000 },
    );
    expect(r).toMatchObject({
      ok: false,
      vec_query_ok: false,
      vec_version: null,
      ffmpeg_version: null,
      ffprobe_version: null,
      onnx_ok: false,
    });
    expect(r.errors).toHaveLength(4);
    expect(r.errors[0]).toMatch(/^sqlite-vec \(.*missing-vec0\.so\)/);
    expect(r.errors.find((e) => e.startsWith("ffmpeg"))).toMatch(/ffmpeg \(.*\): .*(exit|code|failed)/i);
    expect(r.errors.find((e) => e.startsWith("ffprobe"))).toMatch(/unexpected -version output: hello/);
    expect(r.errors.find((e) => e.startsWith("onnx"))).toMatch(/no-model/);
  });
});
