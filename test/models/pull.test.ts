/** `pull` from a real HTTP mirror on 127.0.0.1: full, resumed, refused on bad hashes and 404s. */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { builtinManifest } from "../../src/models/manifest.ts";
import type { PullProgress } from "../../src/models/pull.ts";
import { ModelService } from "../../src/models/service.ts";
import type { BuiltinManifest } from "../../src/models/types.ts";
import { appError, CLIP_SRC, ortVerifyLoad, sysTar, tempDirs, WHISPER_SRC } from "./helpers.ts";
import { type Mirror, startMirror } from "./mirror.ts";

const tmp = tempDirs();
const fixed = tempDirs();
let template = "";
let clipId = "";
let whisperId = "";
let mirror: Mirror | null = null;

/** The mirror a connected machine makes: `models export` of each model, extracted side by side. */
beforeAll(async () => {
  const root = fixed.make();
  const src = new ModelService({ modelsDir: join(root, "models") });
  clipId = (await src.importModel(CLIP_SRC, { role: "image-text", name: "clip" })).model.model_id;
  whisperId = (await src.importModel(WHISPER_SRC, { role: "speech", name: "whisper" })).model.model_id;
  template = join(root, "mirror");
  mkdirSync(template);
  for (const name of ["clip", "whisper"]) {
    await src.exportModel(name, join(root, `${name}.tar`));
    sysTar(["-xf", join(root, `${name}.tar`), "-C", template]);
  }
});
afterAll(() => fixed.cleanup());
afterEach(async () => {
  await mirror?.stop();
  mirror = null;
  tmp.cleanup();
});

function setup(opts: { builtin?: BuiltinManifest } = {}) {
  const root = tmp.make();
  const mirrorDir = join(root, "mirror");
  cpSync(template, mirrorDir, { recursive: true });
  mirror = startMirror(mirrorDir);
  const modelsDir = join(root, "models");
  const svc = new ModelService({ modelsDir, verifyLoad: ortVerifyLoad(), builtin: opts.builtin ?? builtinManifest() });
  return { mirrorDir, modelsDir, svc, m: mirror };
}

const fast = { retries: 0, retryDelayMs: 0, stallMs: 5000 };
const partOf = (modelsDir: string, name: string, path: string) => join(modelsDir, ".partial", name, `${path}.part`);

describe("pull", () => {
  test("downloads every file of the mirror's manifest, checks it and installs the same model id", async () => {
    const { modelsDir, svc, m } = setup();
    const progress: PullProgress[] = [];
    const r = await svc.pull("clip", { baseUrl: m.url, ...fast, onProgress: (p) => progress.push(p) });
    expect(r.model.model_id).toBe(clipId);
    expect(r.manifest).toBe("mirror");
    expect(r.unverified).toEqual([]);
    expect(r.resumed).toEqual([]);
    expect(svc.registry.active("image-text")?.modelId).toBe(clipId);
    const total = r.model.files.reduce((a, f) => a + f.size, 0);
    expect(r.downloaded_bytes).toBe(total);
    expect(progress.at(-1)).toMatchObject({ model: "clip", bytes: total, total });
    expect(m.requests[0]).toEqual({ path: "/clip/manifest.json", range: null });
    expect(
      m.requests
        .slice(1)
        .map((q) => q.path)
        .sort(),
    ).toEqual(r.model.files.map((f) => `/clip/${f.path}`).sort());
    expect(m.requests.every((q) => q.range === null)).toBe(true);
    expect(existsSync(join(modelsDir, ".partial", "clip"))).toBe(false);
    expect((await svc.verify("clip"))[0].ok).toBe(true);
  });

  test("an interrupted download is resumed by the next run with Range from the bytes on disk", async () => {
    const { modelsDir, svc, m } = setup();
    const file = "onnx/decoder_model_merged_quantized.onnx";
    m.cutOnce.add(`/whisper/${file}`);
    const err = await appError(svc.pull("whisper", { baseUrl: m.url, ...fast }));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain("run the same pull again to resume");
    const kept = statSync(partOf(modelsDir, "whisper", file)).size;
    const full = statSync(join(WHISPER_SRC, file)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(full);
    expect(svc.registry.get("whisper")).toBeNull();

    m.requests.length = 0;
    const r = await svc.pull("whisper", { baseUrl: m.url, ...fast });
    expect(r.model.model_id).toBe(whisperId);
    expect(r.resumed).toEqual([file]);
    const again = m.requests.filter((q) => q.path === `/whisper/${file}`);
    expect(again).toEqual([{ path: `/whisper/${file}`, range: `bytes=${kept}-` }]);
    // Files finished in the first run are not fetched again.
    expect(m.requests.filter((q) => q.path === "/whisper/config.json")).toEqual([]);
    const fetchedWhole = r.model.files.filter(
      (f) => f.path !== file && m.requests.some((q) => q.path === `/whisper/${f.path}`),
    );
    expect(r.downloaded_bytes).toBe(full - kept + fetchedWhole.reduce((a, f) => a + f.size, 0));
    expect((await svc.verify("whisper"))[0].ok).toBe(true);
  });

  test("within one run, a dropped connection is retried with Range", async () => {
    const { svc, m } = setup();
    const file = "onnx/text_model_quantized.onnx";
    m.cutOnce.add(`/clip/${file}`);
    const r = await svc.pull("clip", { baseUrl: m.url, ...fast, retries: 2 });
    expect(r.model.model_id).toBe(clipId);
    const tries = m.requests.filter((q) => q.path === `/clip/${file}`);
    expect(tries).toHaveLength(2);
    expect(tries[0].range).toBeNull();
    expect(tries[1].range).toMatch(/^bytes=[1-9]\d*-$/);
  });

  test("a stalled connection is given up after stallMs and resumed", async () => {
    const { svc, m } = setup();
    const file = "onnx/vision_model_quantized.onnx";
    m.stallOnce.add(`/clip/${file}`);
    // The mirror leaves that connection open forever, so any stallMs tells it apart; 300 ms also
    // gave up on a healthy file of the same pull at load ~40 (no data for 0.3 s), so 2 s.
    const t0 = performance.now();
    const r = await svc.pull("clip", { baseUrl: m.url, ...fast, stallMs: 2000, retries: 1 });
    // Given up and resumed rather than waited on: a bound on a hang, not a speed target.
    expect(performance.now() - t0).toBeLessThan(45_000);
    expect(r.model.model_id).toBe(clipId);
    const tries = m.requests.filter((q) => q.path === `/clip/${file}`);
    expect(tries.map((q) => q.range)).toEqual([null, `bytes=${Math.floor(statSync(join(CLIP_SRC, file)).size / 2)}-`]);
  });

  test("a file that does not match its sha256 is refused; the active model stays", async () => {
    const { mirrorDir, modelsDir, svc, m } = setup();
    await svc.importModel(CLIP_SRC, { role: "image-text", name: "old-clip" });
    const bad = join(mirrorDir, "clip", "tokenizer.json");
    const bytes = readFileSync(bad);
    bytes[100] ^= 0xff; // same size, different content
    writeFileSync(bad, bytes);
    const err = await appError(svc.pull("clip", { baseUrl: m.url, ...fast }));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toContain("tokenizer.json");
    expect(svc.registry.activeName("image-text")).toBe("old-clip");
    expect(svc.registry.get("clip")).toBeNull();
    expect(existsSync(partOf(modelsDir, "clip", "tokenizer.json"))).toBe(false); // starts over next time
    expect(readdirSync(modelsDir).filter((e) => e.startsWith("clip-"))).toEqual([]);
  });

  test("a file the mirror does not have: clear error, nothing installed", async () => {
    const { svc, m } = setup();
    m.missing.add("/clip/onnx/vision_model_quantized.onnx");
    const err = await appError(svc.pull("clip", { baseUrl: m.url, ...fast, retries: 3 }));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain(`${m.url}/clip/onnx/vision_model_quantized.onnx: HTTP 404`);
    expect(m.requests.filter((q) => q.path === "/clip/onnx/vision_model_quantized.onnx")).toHaveLength(1); // a 404 is not retried
    expect(svc.list().installed).toEqual([]);
  });

  test("without a mirror manifest the built-in entry is used and unhashed files are reported", async () => {
    const builtin: BuiltinManifest = {
      format: "vsearch-models/1",
      default: [],
      models: [
        {
          name: "clip",
          role: "image-text",
          dtype: "q8",
          license: "MIT",
          files: [
            "config.json",
            "preprocessor_config.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "onnx/text_model_quantized.onnx",
            "onnx/vision_model_quantized.onnx",
          ].map((path) => ({ path, size: null, sha256: null })),
        },
      ],
    };
    const { svc, m } = setup({ builtin });
    m.missing.add("/clip/manifest.json");
    const r = await svc.pull("clip", { baseUrl: `${m.url}/{name}`, ...fast });
    expect(r.manifest).toBe("built-in");
    expect(r.unverified).toHaveLength(6);
    expect(r.model.license).toBe("MIT");
    expect(r.model.model_id).toBe(clipId); // same loaded files, same id
    expect((await appError(svc.pull("nothing-here", { baseUrl: m.url, ...fast }))).code).toBe("MODEL_NOT_FOUND");
  });

  test("a mirror cannot override a hash the built-in list knows", async () => {
    const { svc, m } = setup();
    const pinned: BuiltinManifest = {
      format: "vsearch-models/1",
      default: [],
      models: [
        { name: "clip", role: "image-text", files: [{ path: "config.json", size: null, sha256: "0".repeat(64) }] },
      ],
    };
    const svc2 = new ModelService({ modelsDir: svc.modelsDir, builtin: pinned });
    const err = await appError(svc2.pull("clip", { baseUrl: m.url, ...fast }));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toContain("built-in list");
    expect(m.requests.map((q) => q.path)).toEqual(["/clip/manifest.json"]);
  });
});
