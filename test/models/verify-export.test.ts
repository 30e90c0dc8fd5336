/** `verify` finds changed and missing files; `export` → `import` moves a model between machines. */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { ModelService } from "../../src/models/service.ts";
import { appError, CLIP_SRC, ortVerifyLoad, sysTar, tempDirs, WHISPER_SRC } from "./helpers.ts";

const tmp = tempDirs();
afterEach(() => tmp.cleanup());

async function installed() {
  const root = tmp.make();
  const svc = new ModelService({ modelsDir: join(root, "models"), verifyLoad: ortVerifyLoad() });
  const clip = (await svc.importModel(CLIP_SRC, { role: "image-text" })).model;
  const whisper = (await svc.importModel(WHISPER_SRC, { role: "speech" })).model;
  return { root, svc, clip, whisper };
}

describe("verify", () => {
  test("reports a changed byte and a deleted file; untouched models pass", async () => {
    const { svc, clip, whisper } = await installed();
    expect((await svc.verify()).map((r) => [r.name, r.ok])).toEqual([
      ["tiny-random-clip", true],
      ["tiny-random-whisper", true],
    ]);

    const target = join(clip.dir, "onnx", "vision_model_quantized.onnx");
    const bytes = readFileSync(target);
    bytes[bytes.length - 10] ^= 0x01;
    writeFileSync(target, bytes);
    rmSync(join(clip.dir, "tokenizer_config.json"));

    const [report] = await svc.verify("tiny-random-clip");
    expect(report.ok).toBe(false);
    expect(report.missing).toEqual(["tokenizer_config.json"]);
    expect(report.mismatched).toHaveLength(1);
    expect(report.mismatched[0]).toMatchObject({
      path: "onnx/vision_model_quantized.onnx",
      expected_size: bytes.length,
      actual_size: bytes.length,
    });
    expect(report.mismatched[0].actual_sha256).not.toBe(report.mismatched[0].expected_sha256);
    expect((await svc.verify("tiny-random-whisper"))[0].ok).toBe(true);
    expect(whisper.model_id).toMatch(/^tiny-random-whisper@/);
    expect((await appError(svc.verify("nope"))).code).toBe("MODEL_NOT_FOUND");
  });
});

describe("export", () => {
  test("a tar.gz with manifest + files that imports elsewhere as the same model, no --role needed", async () => {
    const { root, svc, clip } = await installed();
    const out = join(root, "clip.tar.gz");
    const r = await svc.exportModel("tiny-random-clip", out);
    expect(r).toMatchObject({ name: "tiny-random-clip", model_id: clip.model_id, files: clip.files.length });

    // GNU tar reads it: `<name>/manifest.json` with every hash, and the files.
    const x = join(root, "x");
    mkdirSync(x);
    sysTar(["-xzf", out, "-C", x]);
    const manifest = JSON.parse(readFileSync(join(x, "tiny-random-clip", "manifest.json"), "utf8"));
    expect(manifest).toMatchObject({
      format: "vsearch-model/1",
      name: "tiny-random-clip",
      role: "image-text",
      dtype: "q8",
      model_id: clip.model_id,
    });
    expect(manifest.files).toEqual(clip.files);

    const other = new ModelService({ modelsDir: join(root, "appliance", "models"), verifyLoad: ortVerifyLoad() });
    const imported = await other.importModel(out);
    expect(imported.model.model_id).toBe(clip.model_id);
    expect(imported.model.role).toBe("image-text");
    expect(imported.model.files).toEqual(clip.files);
    expect(other.registry.active("image-text")?.modelId).toBe(clip.model_id);
  });

  test("a tampered export is refused on import", async () => {
    const { root, svc } = await installed();
    const out = join(root, "whisper.tar");
    await svc.exportModel("tiny-random-whisper", out);
    const x = join(root, "x");
    mkdirSync(x);
    sysTar(["-xf", out, "-C", x]);
    writeFileSync(join(x, "tiny-random-whisper", "generation_config.json"), "{}");
    sysTar(["-C", x, "-cf", join(root, "tampered.tar"), "tiny-random-whisper"]);
    const other = new ModelService({ modelsDir: join(root, "appliance", "models") });
    const err = await appError(other.importModel(join(root, "tampered.tar")));
    expect(err.code).toBe("MODEL_HASH_MISMATCH");
    expect(err.message).toContain("generation_config.json");
    expect(other.list().installed).toEqual([]);
  });

  test("exporting a corrupted model fails and leaves no archive", async () => {
    const { root, svc, clip } = await installed();
    writeFileSync(
      join(clip.dir, "config.json"),
      readFileSync(join(clip.dir, "config.json"), "utf8").replace("clip", "CLIP"),
    );
    const err = await appError(svc.exportModel("tiny-random-clip", join(root, "out.tar")));
    // The installed copy changed since install (409, state), not a bad incoming file (400, MODEL_HASH_MISMATCH).
    expect(err.code).toBe("MODEL_FILES_CHANGED");
    expect(err.status).toBe(409);
    expect(readdirSync(root).filter((f) => f.startsWith("out.tar"))).toEqual([]);
    expect(existsSync(join(root, "out.tar"))).toBe(false);
  });
});
