import { accessSync, constants, existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { prepareRuntime } from "../../src/runtime/index.ts";
import type { NativeKey } from "../../src/runtime/native-files.ts";
import { prepareFromEmbedded } from "../../src/runtime/prepare.ts";
import type { EmbeddedAssets } from "../../src/runtime/types.ts";
import { tempDirs } from "../helpers/temp.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const WORKER_THREAD_TS = join(ROOT, "src", "runtime", "worker-thread.ts");

const tempDir = tempDirs("vsearch-prepare-").make;

const executable = (p: string) => {
  accessSync(p, constants.X_OK);
  return true;
};

/** An embedded-file table made of ordinary files, laid out like build.ts's. */
function fakeEmbedded(dir: string): EmbeddedAssets {
  const layout: Record<NativeKey, [string, boolean]> = {
    vec0: ["vec0.so", false],
    ffmpeg: ["ffmpeg", true],
    ffprobe: ["ffprobe", true],
    ortBinding: ["onnxruntime/onnxruntime_binding.node", false],
    ortLibrary: ["onnxruntime/libonnxruntime.so.1", false],
    sharpBinding: ["@img/sharp-x/lib/sharp.node", false],
    sharpLibvips: ["@img/sharp-libvips-x/lib/libvips-cpp.so.8", false],
    ocrWasmSimd: ["tesseract/tesseract-core-simd-lstm.wasm", false],
    ocrWasm: ["tesseract/tesseract-core-lstm.wasm", false],
    ocrLang: ["tesseract/eng.traineddata.gz", false],
    ppocrDet: ["ppocr/ch_PP-OCRv4_det_infer.onnx", false],
    ppocrRec: ["ppocr/ch_PP-OCRv4_rec_infer.onnx", false],
    ppocrKeys: ["ppocr/ppocr_keys_v1.txt", false],
  };
  const files = {} as EmbeddedAssets["files"];
  for (const [key, [target, exe]] of Object.entries(layout) as [NativeKey, [string, boolean]][]) {
    const path = join(dir, `embedded-${key}`);
    writeFileSync(path, `contents of ${key}\n`.repeat(100));
    files[key] = { path, target, executable: exe };
  }
  const inferenceWorker = join(dir, "worker.js");
  const piscinaWorker = join(dir, "piscina-worker.js");
  writeFileSync(inferenceWorker, "");
  const ocrWorker = join(dir, "tesseract-worker.js");
  const ppocrWorker = join(dir, "ppocr-worker.js");
  const storeReader = join(dir, "read-worker.js");
  writeFileSync(storeReader, "");
  writeFileSync(piscinaWorker, "");
  writeFileSync(ocrWorker, "");
  writeFileSync(ppocrWorker, "");
  return {
    platform: `${process.platform}-${process.arch}`,
    files,
    entries: { inferenceWorker, piscinaWorker, ocrWorker, ppocrWorker, storeReader },
  };
}

/** What a worker thread started now sees of the runtime (runs src/runtime/worker-thread.ts there). */
function inWorker(): Promise<{ ok: boolean; paths?: unknown; error?: string }> {
  const dir = tempDir();
  const file = join(dir, "probe.ts");
  writeFileSync(
    file,
    `import { parentPort } from "node:worker_threads";
     import { nativeLoadPaths } from ${JSON.stringify(WORKER_THREAD_TS)};
     try { parentPort.postMessage({ ok: true, paths: nativeLoadPaths() }); }
     catch (e) { parentPort.postMessage({ ok: false, error: String(e) }); }`,
  );
  return new Promise((ok, fail) => {
    const w = new Worker(file);
    w.once("message", (m) => {
      ok(m);
      void w.terminate();
    });
    w.once("error", fail);
  });
}

describe("prepareRuntime in dev", () => {
  test("paths come from node_modules and src/; nothing is written", async () => {
    const dataDir = join(tempDir(), "data");
    const p = await prepareRuntime({ dataDir, version: "1.2.3" });
    expect(p.compiled).toBe(false);
    expect(p.runtimeDir).toBeNull();
    expect(p.extracted).toEqual([]);
    expect(p.ffmpeg).toMatch(/node_modules[\\/]@ffmpeg-installer[\\/]/);
    expect(p.ffprobe).toMatch(/node_modules[\\/]@ffprobe-installer[\\/]/);
    expect(p.vecExtension).toMatch(/vec0\.so$/);
    expect(executable(p.ffmpeg) && executable(p.ffprobe)).toBe(true);
    expect(statSync(p.vecExtension).isFile()).toBe(true);
    expect(p.inferenceWorkerFile).toBe(join(ROOT, "src", "inference", "worker.ts"));
    expect(existsSync(p.inferenceWorkerFile)).toBe(true);
    expect(p.storeReaderFile).toBe(join(ROOT, "src", "store", "sqlite", "read-worker.ts"));
    expect(existsSync(p.storeReaderFile)).toBe(true);
    expect(p.ocr.workerFile).toBe(join(ROOT, "src", "ocr", "tesseract-worker.ts"));
    expect(statSync(join(p.ocr.langDir, "eng.traineddata.gz")).size).toBeGreaterThan(1_000_000);
    expect(p.ocr.ppocr.workerFile).toBe(join(ROOT, "src", "ocr", "ppocr", "worker.ts"));
    for (const f of [p.ocr.ppocr.det, p.ocr.ppocr.rec, p.ocr.ppocr.keys])
      expect(statSync(f).size, f).toBeGreaterThan(10_000);
    expect(existsSync(dataDir)).toBe(false);
  });

  test("an override from the config wins; one that is not a file is refused by name", async () => {
    const d = tempDir();
    const mine = join(d, "my-ffmpeg");
    writeFileSync(mine, "#!/bin/sh\n", { mode: 0o755 });
    const p = await prepareRuntime({ dataDir: d, version: "1", overrides: { ffmpeg: mine } });
    expect(p.ffmpeg).toBe(mine);
    expect(p.ffprobe).toMatch(/@ffprobe-installer/);
    await expect(prepareRuntime({ dataDir: d, version: "1", overrides: { ffprobe: join(d, "nope") } })).rejects.toThrow(
      /ffprobe path from the configuration \(ffprobe_path\) is not a file: .*nope/,
    );
  });
});

describe("prepareFromEmbedded (the compiled binary's path, driven with ordinary files)", () => {
  test("extracts once into <dataDir>/runtime/<version>/, later starts write nothing, workers get the addon paths", async () => {
    const d = tempDir();
    const embedded = fakeEmbedded(d);
    const dataDir = join(d, "data");
    const first = await prepareFromEmbedded(embedded, { dataDir, version: "0.1.0" });
    const rt = join(dataDir, "runtime", "0.1.0");
    expect(first).toMatchObject({
      compiled: true,
      runtimeDir: rt,
      ffmpeg: join(rt, "ffmpeg"),
      ffprobe: join(rt, "ffprobe"),
      vecExtension: join(rt, "vec0.so"),
      inferenceWorkerFile: embedded.entries.inferenceWorker,
      storeReaderFile: embedded.entries.storeReader,
      // OCR: the worker from the binary, the data and wasm cores extracted beside the native files.
      ocr: {
        workerFile: embedded.entries.ocrWorker,
        langDir: join(rt, "tesseract"),
        wasm: {
          simd: join(rt, "tesseract", "tesseract-core-simd-lstm.wasm"),
          plain: join(rt, "tesseract", "tesseract-core-lstm.wasm"),
        },
        // PP-OCR: its task module from the binary, the models extracted (ONNX Runtime opens files by path).
        ppocr: {
          workerFile: embedded.entries.ppocrWorker,
          det: join(rt, "ppocr", "ch_PP-OCRv4_det_infer.onnx"),
          rec: join(rt, "ppocr", "ch_PP-OCRv4_rec_infer.onnx"),
          keys: join(rt, "ppocr", "ppocr_keys_v1.txt"),
        },
      },
    });
    expect(first.extracted.sort()).toEqual(
      Object.values(embedded.files)
        .map((f) => f.target)
        .sort(),
    );
    expect(executable(first.ffmpeg)).toBe(true);

    const second = await prepareFromEmbedded(embedded, { dataDir, version: "0.1.0" });
    expect(second.extracted).toEqual([]);

    const seen = await inWorker();
    expect(seen).toEqual({
      ok: true,
      paths: {
        ortBinding: join(rt, "onnxruntime", "onnxruntime_binding.node"),
        sharpBinding: join(rt, "@img/sharp-x/lib/sharp.node"),
      },
    });
    // The worker bootstrap reports a removed runtime folder by name instead of failing in dlopen.
    rmSync(join(rt, "onnxruntime"), { recursive: true });
    const gone = await inWorker();
    expect(gone.ok).toBe(false);
    expect(gone.error).toMatch(/onnxruntime_binding\.node is missing/);
  });

  test("an overridden ffmpeg/ffprobe is used and ours is not written", async () => {
    const d = tempDir();
    const embedded = fakeEmbedded(d);
    const mine = join(d, "ffmpeg-7");
    writeFileSync(mine, "#!/bin/sh\n", { mode: 0o755 });
    const dataDir = join(d, "data");
    const p = await prepareFromEmbedded(embedded, { dataDir, version: "2.0.0", overrides: { ffmpeg: mine } });
    expect(p.ffmpeg).toBe(mine);
    expect(p.ffprobe).toBe(join(dataDir, "runtime", "2.0.0", "ffprobe"));
    expect(p.extracted).not.toContain("ffmpeg");
    expect(readdirSync(join(dataDir, "runtime", "2.0.0"))).not.toContain("ffmpeg");
  });

  test("refuses a version that is not one folder name, and a binary that lacks an entry point", async () => {
    const d = tempDir();
    const embedded = fakeEmbedded(d);
    await expect(prepareFromEmbedded(embedded, { dataDir: d, version: "../x" })).rejects.toThrow(
      /not usable as a folder name/,
    );
    rmSync(embedded.entries.piscinaWorker);
    await expect(prepareFromEmbedded(embedded, { dataDir: d, version: "1" })).rejects.toThrow(
      /lacks its piscinaWorker entry point/,
    );
  });
});
