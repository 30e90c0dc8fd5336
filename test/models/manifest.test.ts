/** The checked-in model list, manifest parsing, layout rules and registry parsing. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { checkLayout, detectDtype } from "../../src/models/layout.ts";
import { builtinManifest, parseModelManifest, planPull } from "../../src/models/manifest.ts";
import { modelBaseUrl } from "../../src/models/pull.ts";
import { ModelRegistry } from "../../src/models/registry.ts";
import { appError, tempDirs } from "./helpers.ts";

const tmp = tempDirs();
afterEach(() => tmp.cleanup());

describe("models/manifest.json", () => {
  test("is valid and its default set is CLIP ViT-B/32 + Whisper tiny.en, int8, MIT", () => {
    const b = builtinManifest();
    expect(b.default).toEqual(["clip-vit-base-patch32", "whisper-tiny.en"]);
    const byName = new Map(b.models.map((m) => [m.name, m]));
    expect(byName.get("clip-vit-base-patch32")).toMatchObject({ role: "image-text", dtype: "q8", license: "MIT" });
    expect(byName.get("whisper-tiny.en")).toMatchObject({ role: "speech", dtype: "q8", license: "MIT" });
  });

  test("every entry lists a complete layout for its role and dtype (a pull could install it)", () => {
    for (const m of builtinManifest().models) {
      const layout = checkLayout(
        m.files.map((f) => f.path),
        m.role,
        m.dtype,
      );
      expect(layout.dtype, m.name).toBe(m.dtype);
      expect(
        m.files.every((f) => layout.keep(f.path)),
        m.name,
      ).toBe(true);
    }
  });

  test("a broken list is rejected", () => {
    expect(() => builtinManifest({ format: "vsearch-models/1", default: ["x"], models: [] })).toThrow(/default "x"/);
    expect(() =>
      builtinManifest({
        format: "vsearch-models/1",
        default: [],
        models: [{ name: "a", role: "speech", files: [{ path: "../a", size: null, sha256: null }] }],
      }),
    ).toThrow(/refused/);
  });
});

describe("model manifests", () => {
  const ok = {
    format: "vsearch-model/1",
    name: "m",
    role: "speech",
    files: [{ path: "config.json", size: 2, sha256: "a".repeat(64) }],
  };

  test("parse, and refuse unsafe paths, duplicates and bad hashes", async () => {
    expect(parseModelManifest(JSON.stringify(ok), "x", { strict: true })?.name).toBe("m");
    expect(parseModelManifest(JSON.stringify({ something: "else" }), "x", { strict: false })).toBeNull();
    for (const files of [
      [{ path: "../../etc/passwd", size: 1, sha256: null }],
      [{ path: "/abs", size: 1, sha256: null }],
      [
        { path: "a", size: 1, sha256: null },
        { path: "a", size: 1, sha256: null },
      ],
      [{ path: "a", size: 1, sha256: "XYZ" }],
    ]) {
      const err = await appError(
        Promise.resolve().then(() => parseModelManifest(JSON.stringify({ ...ok, files }), "x", { strict: true })),
      );
      expect(err.code, JSON.stringify(files)).toBe("INVALID_MODEL");
    }
  });

  test("planPull: mirror hashes fill in unknown built-in ones; the built-in role must agree", async () => {
    const builtin = { name: "m", role: "speech" as const, files: [{ path: "config.json", size: null, sha256: null }] };
    const mirror = parseModelManifest(JSON.stringify(ok), "x", { strict: true });
    expect(planPull("m", mirror, builtin, "u").files).toEqual(ok.files);
    expect(planPull("m", null, builtin, "u")).toMatchObject({ fromMirror: false, files: builtin.files });
    const err = await appError(
      Promise.resolve().then(() => planPull("m", mirror, { ...builtin, role: "image-text" }, "u")),
    );
    expect(err.message).toContain("role");
  });

  test("base URLs: appended name, {name} placeholder, http(s) only", async () => {
    expect(modelBaseUrl("http://mirror.lan/models/", "whisper-tiny.en")).toBe(
      "http://mirror.lan/models/whisper-tiny.en",
    );
    expect(modelBaseUrl("https://hf.example/Xenova/{name}/resolve/main", "clip-vit-base-patch32")).toBe(
      "https://hf.example/Xenova/clip-vit-base-patch32/resolve/main",
    );
    expect((await appError(Promise.resolve().then(() => modelBaseUrl("file:///etc", "x")))).code).toBe(
      "INVALID_BASE_URL",
    );
  });
});

describe("layout", () => {
  const clip = ["config.json", "tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"];
  test("q8 preferred when both are complete; fp32 when only it is; null when neither", () => {
    const both = new Set([
      ...clip,
      "onnx/text_model.onnx",
      "onnx/vision_model.onnx",
      "onnx/text_model_quantized.onnx",
      "onnx/vision_model_quantized.onnx",
    ]);
    expect(detectDtype(both, "image-text")).toBe("q8");
    expect(detectDtype(both, "image-text", "fp32")).toBe("fp32");
    expect(
      detectDtype(
        new Set([...clip, "onnx/text_model.onnx", "onnx/vision_model.onnx", "onnx/text_model_quantized.onnx"]),
        "image-text",
      ),
    ).toBe("fp32");
    expect(detectDtype(new Set([...clip, "onnx/text_model_quantized.onnx"]), "image-text")).toBeNull();
  });

  test("keeps external-data files of the chosen graphs, drops other ONNX variants", () => {
    const l = checkLayout(
      [
        ...clip,
        "onnx/text_model.onnx",
        "onnx/vision_model.onnx",
        "onnx/vision_model.onnx_data",
        "onnx/model_fp16.onnx",
        "LICENSE",
      ],
      "image-text",
    );
    expect(l.dtype).toBe("fp32");
    expect(l.loaded).toContain("onnx/vision_model.onnx_data");
    expect(["onnx/vision_model.onnx_data", "LICENSE", "onnx/text_model.onnx"].every(l.keep)).toBe(true);
    expect(l.keep("onnx/model_fp16.onnx")).toBe(false);
  });
});

describe("registry", () => {
  test("a missing file is an empty registry; a hand-broken one is a clear error", () => {
    const dir = tmp.make();
    const reg = new ModelRegistry(join(dir, "models"));
    expect(reg.list()).toEqual([]);
    expect(reg.active("image-text")).toBeNull();
    mkdirSync(join(dir, "models"));
    writeFileSync(
      join(dir, "models", "registry.json"),
      '{"format":"vsearch-registry/1","active":{"speech":"x"},"models":{"x":{}}}',
    );
    expect(() => reg.active("speech")).toThrow(/registry\.json: models\.x\.name/);
  });
});
