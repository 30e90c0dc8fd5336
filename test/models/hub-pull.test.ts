/**
 * `pull` from a local server speaking the Hugging Face hub's layout (test/models/hub.ts): a 302 to a
 * second loopback origin for the ONNX files with X-Linked-Etag, ETag = git blob sha1 for the rest,
 * Range, a dropped connection, corrupted bytes and hashes that do not match.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { ModelService } from "../../src/models/service.ts";
import type { BuiltinManifest } from "../../src/models/types.ts";
import { appError, CLIP_SRC, ortVerifyLoad, sha256, tempDirs, WHISPER_SRC } from "./helpers.ts";
import { COMMIT, type FakeHub, startHub } from "./hub.ts";

const tmp = tempDirs();
let hub: FakeHub | null = null;
afterEach(async () => {
  await hub?.stop();
  hub = null;
  tmp.cleanup();
});

const REV = "a".repeat(40);
const clipFiles = [
  "config.json",
  "preprocessor_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "onnx/text_model_quantized.onnx",
  "onnx/vision_model_quantized.onnx",
];
const whisperFiles = [
  "config.json",
  "generation_config.json",
  "preprocessor_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "onnx/encoder_model_quantized.onnx",
  "onnx/decoder_model_merged_quantized.onnx",
];
const unpinned = (paths: string[]) => paths.map((path) => ({ path, size: null, sha256: null }));

const builtin: BuiltinManifest = {
  format: "vsearch-models/1",
  default: ["clip", "whisper"],
  models: [
    {
      name: "clip",
      role: "image-text",
      dtype: "q8",
      license: "MIT",
      hub: { repo: "test-org/tiny-clip", revision: REV },
      files: unpinned(clipFiles),
    },
    {
      name: "whisper",
      role: "speech",
      dtype: "q8",
      license: "MIT",
      hub: { repo: "test-org/tiny-whisper", revision: "main" },
      files: unpinned(whisperFiles),
    },
    {
      name: "pinned",
      role: "image-text",
      dtype: "q8",
      hub: { repo: "test-org/tiny-clip", revision: REV },
      files: unpinned(clipFiles).map((f) =>
        f.path === "onnx/vision_model_quantized.onnx" ? { ...f, sha256: "b".repeat(64) } : f,
      ),
    },
    { name: "no-hub", role: "speech", files: unpinned(whisperFiles) },
  ],
};

function setup() {
  hub = startHub({ [`test-org/tiny-clip@${REV}`]: CLIP_SRC, "test-org/tiny-whisper@main": WHISPER_SRC });
  const modelsDir = join(tmp.make(), "models");
  const svc = new ModelService({ modelsDir, verifyLoad: ortVerifyLoad(), builtin });
  return { svc, modelsDir, h: hub };
}

const fast = { retries: 0, retryDelayMs: 0, stallMs: 5000 };
const partOf = (modelsDir: string, name: string, path: string) => join(modelsDir, ".partial", name, `${path}.part`);

describe("pull from the hub", () => {
  test("resolves every file at the pinned revision, follows the 302 to the CDN, checks each hash and installs", async () => {
    const { svc, h } = setup();
    const ref = await new ModelService({ modelsDir: join(tmp.make(), "models") }).importModel(CLIP_SRC, {
      role: "image-text",
      name: "clip",
    });
    const r = await svc.pull("clip", { hubEndpoint: h.url, ...fast });

    expect(r.model.model_id).toBe(ref.model.model_id);
    expect(r).toMatchObject({ source: "hub", manifest: "built-in", commit: COMMIT, unverified: [], resumed: [] });
    expect(r.from).toBe(`${h.url}/test-org/tiny-clip/resolve/${REV}`);
    expect(r.model.source).toEqual({ kind: "pull", from: r.from });
    expect(svc.registry.active("image-text")?.modelId).toBe(ref.model.model_id);
    // Every file: a HEAD on the hub; the ONNX ones then a GET on the CDN, the rest a GET on the hub.
    const heads = h.requests.filter((q) => q.method === "HEAD").map((q) => q.path);
    expect(heads.sort()).toEqual(clipFiles.map((p) => `/test-org/tiny-clip/resolve/${REV}/${p}`).sort());
    const cdnGets = h.requests.filter((q) => q.origin === "cdn" && q.method === "GET");
    expect(cdnGets.map((q) => q.path).sort()).toEqual(
      ["onnx/text_model_quantized.onnx", "onnx/vision_model_quantized.onnx"]
        .map((p) => `/blobs/${sha256(join(CLIP_SRC, p))}`)
        .sort(),
    );
    const hubGets = h.requests
      .filter((q) => q.origin === "hub" && q.method === "GET")
      .map((q) => q.path.split("/").slice(5).join("/"));
    expect(hubGets.sort()).toEqual(clipFiles.filter((p) => !p.endsWith(".onnx")).sort());
    expect((await svc.verify("clip"))[0].ok).toBe(true);
  });

  test("a dropped connection to the CDN is resumed with Range, in the same run or the next", async () => {
    const { svc, modelsDir, h } = setup();
    const file = "onnx/decoder_model_merged_quantized.onnx";
    const full = statSync(join(WHISPER_SRC, file)).size;

    h.cutOnce.add(file);
    const err = await appError(svc.pull("whisper", { hubEndpoint: h.url, ...fast }));
    expect(err.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(err.message).toContain("run the same pull again to resume");
    const kept = statSync(partOf(modelsDir, "whisper", file)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(full);
    expect(svc.registry.list()).toEqual([]);

    h.requests.length = 0;
    const r = await svc.pull("whisper", { hubEndpoint: h.url, ...fast });
    expect(r.resumed).toEqual([file]);
    const get = h.requests.find(
      (q) => q.origin === "cdn" && q.method === "GET" && q.path === `/blobs/${sha256(join(WHISPER_SRC, file))}`,
    );
    expect(get?.range).toBe(`bytes=${kept}-`);
    // The files finished before the cut stayed as verified .part files: only the rest is fetched.
    expect(r.downloaded_bytes).toBe(full - kept);
    expect((await svc.verify("whisper"))[0].ok).toBe(true);

    // With retries, the same run asks again (a fresh HEAD: CDN links expire) and finishes.
    const { svc: svc2, h: h2 } = { svc: new ModelService({ modelsDir: join(tmp.make(), "models"), builtin }), h };
    h2.cutOnce.add(file);
    h2.requests.length = 0;
    const r2 = await svc2.pull("whisper", { hubEndpoint: h2.url, retries: 2, retryDelayMs: 0, stallMs: 5000 });
    expect(r2.model.model_id).toBe(r.model.model_id);
    const ranges = h2.requests
      .filter((q) => q.origin === "cdn" && q.path.endsWith(sha256(join(WHISPER_SRC, file))))
      .map((q) => q.range);
    expect(ranges[0]).toBeNull();
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
  });

  test("bytes that do not match X-Linked-Etag are refused: nothing installed, the .part deleted", async () => {
    const { svc, modelsDir, h } = setup();
    const file = "onnx/vision_model_quantized.onnx";
    h.corrupt.add(file);
    const err = await appError(svc.pull("clip", { hubEndpoint: h.url, ...fast }));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toContain(`${file} from ${h.url}/test-org/tiny-clip/resolve/${REV} has sha256`);
    expect(err.message).toContain(sha256(join(CLIP_SRC, file)));
    expect(existsSync(partOf(modelsDir, "clip", file))).toBe(false);
    expect(svc.registry.list()).toEqual([]);
    expect(readdirSync(modelsDir).filter((e) => e.startsWith("clip-"))).toEqual([]);
  });

  test("a plain git file is checked against its ETag (git blob sha1)", async () => {
    const { svc, modelsDir, h } = setup();
    h.wrongEtag.add("tokenizer.json");
    const err = await appError(svc.pull("clip", { hubEndpoint: h.url, ...fast }));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toMatch(/tokenizer\.json .* has git blob id [0-9a-f]{40}, the source reports [0-9a-f]{40}/);
    expect(svc.registry.list()).toEqual([]);
    expect(existsSync(partOf(modelsDir, "clip", "tokenizer.json"))).toBe(false);
  });

  test("a hash pinned in the built-in list wins over the hub's: refused before the download", async () => {
    const { svc, h } = setup();
    const err = await appError(svc.pull("pinned", { hubEndpoint: h.url, ...fast }));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toContain(`the built-in list pins ${"b".repeat(64)}`);
    expect(
      h.requests.some(
        (q) => q.origin === "cdn" && q.path === `/blobs/${sha256(join(CLIP_SRC, "onnx/vision_model_quantized.onnx"))}`,
      ),
    ).toBe(false);
    expect(svc.registry.list()).toEqual([]);
  });

  test("a renamed repository's relative redirect is followed on the hub before the CDN hop", async () => {
    hub = startHub({ [`test-org/tiny-clip@${REV}`]: CLIP_SRC }, { "old-org/tiny-clip": "test-org/tiny-clip" });
    const moved: BuiltinManifest = {
      ...builtin,
      models: builtin.models.map((m) =>
        m.name === "clip" ? { ...m, hub: { repo: "old-org/tiny-clip", revision: REV } } : m,
      ),
    };
    const svc = new ModelService({ modelsDir: join(tmp.make(), "models"), builtin: moved });
    const r = await svc.pull("clip", { hubEndpoint: hub.url, ...fast });
    expect(r.unverified).toEqual([]);
    const heads = hub.requests
      .filter((q) => q.method === "HEAD" && q.path.endsWith("/onnx/vision_model_quantized.onnx"))
      .map((q) => q.path);
    expect(heads).toEqual([
      `/old-org/tiny-clip/resolve/${REV}/onnx/vision_model_quantized.onnx`,
      `/test-org/tiny-clip/resolve/${REV}/onnx/vision_model_quantized.onnx`,
    ]);
    expect((await svc.verify("clip"))[0].ok).toBe(true);
  });

  test("unknown revision or model, and a model with no hub repository, fail with the reason", async () => {
    const { svc, h } = setup();
    const other: BuiltinManifest = {
      ...builtin,
      models: builtin.models.map((m) =>
        m.name === "clip" ? { ...m, hub: { repo: "test-org/tiny-clip", revision: "nope" } } : m,
      ),
    };
    const svc2 = new ModelService({ modelsDir: svc.modelsDir, builtin: other });
    const e1 = await appError(svc2.pull("clip", { hubEndpoint: h.url, ...fast }));
    expect(e1.code).toBe("MODEL_DOWNLOAD_FAILED");
    expect(e1.message).toMatch(/HTTP 404.*no such file at this revision/);
    expect((await appError(svc.pull("nothing", { hubEndpoint: h.url, ...fast }))).code).toBe("MODEL_NOT_FOUND");
    const e3 = await appError(svc.pull("no-hub", { hubEndpoint: h.url, ...fast }));
    expect(e3.message).toContain("--base-url");
    expect(svc.registry.list()).toEqual([]);
  });
});
