/** `importModel` from folders and tars of the tiny models, with a real ONNX Runtime load check. */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { ModelRegistry } from "../../src/models/registry.ts";
import { ModelService } from "../../src/models/service.ts";
import { appError, CLIP_SRC, copyModel, ortVerifyLoad, sha256, sysTar, tempDirs, WHISPER_SRC } from "./helpers.ts";

const tmp = tempDirs();
afterEach(() => tmp.cleanup());

function setup(opts: { calls?: { dir: string; role: string; dtype: string }[] } = {}) {
  const root = tmp.make();
  const modelsDir = join(root, "models");
  return { root, modelsDir, svc: new ModelService({ modelsDir, verifyLoad: ortVerifyLoad(opts.calls) }) };
}

/** What is in the models folder besides the registry (no staging or lock may be left behind). */
const leftovers = (modelsDir: string) =>
  existsSync(modelsDir)
    ? readdirSync(modelsDir)
        .filter((e) => e !== "registry.json")
        .sort()
    : [];

describe("importModel", () => {
  test("a CLIP folder: copied, hashed, q8 chosen, load-checked, registered and active", async () => {
    const calls: { dir: string; role: string; dtype: string }[] = [];
    const { modelsDir, svc } = setup({ calls });
    const r = await svc.importModel(CLIP_SRC, { role: "image-text" });
    const m = r.model;
    expect(m.name).toBe("tiny-random-clip");
    expect(m.dtype).toBe("q8");
    expect(m.model_id).toMatch(/^tiny-random-clip@[0-9a-f]{12}$/);
    expect(m.dir).toBe(join(modelsDir, `tiny-random-clip-${m.model_id.split("@")[1]}`));
    expect(r.skipped.sort()).toEqual(["onnx/text_model.onnx", "onnx/vision_model.onnx"]);
    expect(m.files.map((f) => f.path)).toEqual([
      "config.json",
      "onnx/text_model_quantized.onnx",
      "onnx/vision_model_quantized.onnx",
      "preprocessor_config.json",
      "reference.json",
      "special_tokens_map.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    for (const f of m.files) {
      expect(f.sha256).toBe(sha256(join(CLIP_SRC, f.path)));
      expect(sha256(join(m.dir, f.path))).toBe(f.sha256);
    }
    expect(calls).toHaveLength(1);
    expect(calls[0].role).toBe("image-text");
    expect(calls[0].dtype).toBe("q8");
    expect(calls[0].dir).not.toBe(m.dir); // loaded from staging, before it was moved into place

    // Another reader (the server) sees it through the registry file.
    const registry = new ModelRegistry(modelsDir);
    expect(registry.active("image-text")).toEqual({
      name: m.name,
      role: "image-text",
      dir: m.dir,
      dtype: "q8",
      modelId: m.model_id,
    });
    expect(registry.active("speech")).toBeNull();
    expect(JSON.parse(readFileSync(join(modelsDir, "registry.json"), "utf8")).models["tiny-random-clip"].dir).toBe(
      `tiny-random-clip-${m.model_id.split("@")[1]}`,
    );
    expect(leftovers(modelsDir)).toEqual([`tiny-random-clip-${m.model_id.split("@")[1]}`]);
  });

  test("a Whisper tar (top-level folder) and a tar.gz (files at the root) give the same model id", async () => {
    const { root, modelsDir, svc } = setup();
    const tar = join(root, "whisper.tar");
    const tgz = join(root, "whisper-flat.tar.gz");
    sysTar(["-C", join(WHISPER_SRC, ".."), "-cf", tar, "tiny-random-whisper"]);
    sysTar(["-C", WHISPER_SRC, "-czf", tgz, "."]);

    const a = await svc.importModel(tar, { role: "speech" });
    expect(a.model.name).toBe("tiny-random-whisper");
    expect(a.model.dtype).toBe("q8");
    const b = await svc.importModel(tgz, { role: "speech", name: "tiny-random-whisper" });
    expect(b.model.model_id).toBe(a.model.model_id);
    expect(b.replaced).toBeNull();
    expect(b.model.dir).toBe(a.model.dir);
    expect(svc.registry.active("speech")?.modelId).toBe(a.model.model_id);
    expect(leftovers(modelsDir)).toEqual([`tiny-random-whisper-${a.model.model_id.split("@")[1]}`]);

    // The name falls back to the archive's file name when it has no top folder.
    const c = await svc.importModel(tgz, { role: "speech", activate: false });
    expect(c.model.name).toBe("whisper-flat");
    expect(svc.registry.activeName("speech")).toBe("tiny-random-whisper");
  });

  test("a folder missing a required file: clear error, nothing copied or registered", async () => {
    const { root, modelsDir, svc } = setup();
    const src = copyModel(CLIP_SRC, join(root, "broken-clip"));
    rmSync(join(src, "tokenizer.json"));
    rmSync(join(src, "onnx", "vision_model_quantized.onnx"));
    rmSync(join(src, "onnx", "vision_model.onnx"));
    const err = await appError(svc.importModel(src, { role: "image-text" }));
    expect(err.code).toBe("INVALID_MODEL");
    expect(err.status).toBe(400);
    expect(err.message).toContain("tokenizer.json");
    expect(err.message).toContain("onnx/vision_model_quantized.onnx");
    expect(existsSync(join(modelsDir, "registry.json"))).toBe(false);
    expect(leftovers(modelsDir)).toEqual([]);
  });

  test("a model that does not load (corrupt ONNX) is refused and nothing changes", async () => {
    const { root, modelsDir, svc } = setup();
    const first = await svc.importModel(CLIP_SRC, { role: "image-text" });
    const src = copyModel(CLIP_SRC, join(root, "tiny-random-clip"));
    writeFileSync(join(src, "onnx", "vision_model_quantized.onnx"), Buffer.alloc(4096, 7));
    const err = await appError(svc.importModel(src, { role: "image-text" }));
    expect(err.code).toBe("MODEL_LOAD_FAILED");
    expect(svc.registry.active("image-text")?.modelId).toBe(first.model.model_id);
    expect(leftovers(modelsDir)).toEqual([`tiny-random-clip-${first.model.model_id.split("@")[1]}`]);
  });

  test("the wrong role or a bad name is refused", async () => {
    const { svc } = setup();
    expect((await appError(svc.importModel(WHISPER_SRC, { role: "image-text" }))).code).toBe("INVALID_MODEL");
    expect((await appError(svc.importModel(CLIP_SRC, {}))).message).toContain("role is required");
    expect((await appError(svc.importModel(CLIP_SRC, { role: "image-text", name: "../x" }))).code).toBe(
      "INVALID_MODEL",
    );
    expect((await appError(svc.importModel("/nonexistent/model", { role: "image-text" }))).status).toBe(404);
  });

  test("a changed model replaces the old version: new id, new folder, old folder removed", async () => {
    const { root, modelsDir, svc } = setup();
    const v1 = await svc.importModel(CLIP_SRC, { role: "image-text", name: "clip" });
    const src = copyModel(CLIP_SRC, join(root, "clip-v2"));
    const cfg = JSON.parse(readFileSync(join(src, "preprocessor_config.json"), "utf8"));
    writeFileSync(join(src, "preprocessor_config.json"), JSON.stringify({ ...cfg, note: "v2" }));
    const v2 = await svc.importModel(src, { role: "image-text", name: "clip" });
    expect(v2.model.model_id).not.toBe(v1.model.model_id);
    expect(v2.replaced).toBe(v1.model.model_id);
    expect(existsSync(v1.model.dir)).toBe(false);
    expect(svc.registry.active("image-text")?.dir).toBe(v2.model.dir);

    // A README does not change the id: only the files the runtime loads count.
    const src3 = copyModel(src, join(root, "clip-v3"));
    writeFileSync(join(src3, "README.md"), "# notes");
    const v3 = await svc.importModel(src3, { role: "image-text", name: "clip" });
    expect(v3.model.model_id).toBe(v2.model.model_id);
    expect(v3.model.files.some((f) => f.path === "README.md")).toBe(true);
    expect(leftovers(modelsDir)).toEqual([`clip-${v3.model.model_id.split("@")[1]}`]);
  });

  test("--dtype fp32 installs the fp32 graphs under another id", async () => {
    const { svc } = setup();
    const q8 = await svc.importModel(CLIP_SRC, { role: "image-text", name: "c8" });
    const fp = await svc.importModel(CLIP_SRC, { role: "image-text", name: "c32", dtype: "fp32" });
    expect(fp.model.dtype).toBe("fp32");
    expect(fp.model.files.filter((f) => f.path.startsWith("onnx/")).map((f) => f.path)).toEqual([
      "onnx/text_model.onnx",
      "onnx/vision_model.onnx",
    ]);
    expect(fp.model.model_id.split("@")[1]).not.toBe(q8.model.model_id.split("@")[1]);
    expect(svc.list().active["image-text"]).toBe("c32");
    await svc.activate("c8");
    expect(svc.registry.active("image-text")?.modelId).toBe(q8.model.model_id);
    await svc.remove("c8");
    expect(svc.registry.active("image-text")).toBeNull();
    expect(existsSync(q8.model.dir)).toBe(false);
    expect(svc.list().installed.map((m) => m.name)).toEqual(["c32"]);
  });

  test("another live process holding the models lock makes changes fail fast; a dead one's lock is taken over", async () => {
    const { modelsDir, svc } = setup();
    await svc.importModel(CLIP_SRC, { role: "image-text" });
    writeFileSync(join(modelsDir, ".lock"), String(process.ppid));
    const err = await appError(svc.importModel(WHISPER_SRC, { role: "speech" }));
    expect(err.code).toBe("MODELS_BUSY");
    expect(err.message).toContain(`pid ${process.ppid}`);

    const dead = Bun.spawnSync(["true"]).pid;
    writeFileSync(join(modelsDir, ".lock"), String(dead));
    await svc.importModel(WHISPER_SRC, { role: "speech" });
    expect(existsSync(join(modelsDir, ".lock"))).toBe(false);
    expect(svc.registry.activeName("speech")).toBe("tiny-random-whisper");
  });
});
