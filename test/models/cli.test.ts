/** `vsearch models …` through commander, in process; the default import load check runs the real worker pool. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError } from "commander";
import { afterEach, describe, expect, test } from "vitest";
import { createCliContext } from "../../src/cli/context.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { AppError } from "../../src/core/errors.ts";
import { registerModelCommands } from "../../src/commands/models.ts";
import { CLIP_SRC, sysTar, tempDirs, WHISPER_SRC } from "./helpers.ts";
import { type Mirror, startMirror } from "./mirror.ts";

const tmp = tempDirs();
let mirror: Mirror | null = null;
afterEach(async () => {
  await mirror?.stop();
  mirror = null;
  tmp.cleanup();
});

/** Same global options and error line as src/commands/index.ts, with only the models commands. */
async function cli(argv: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const io = { stdout: (s: string) => void (stdout += s), stderr: (s: string) => void (stderr += s) };
  const program = new Command("vsearch")
    .option("--data-dir <dir>")
    .option("--json")
    .option("--log-level <level>")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  registerModelCommands(program, createCliContext(env, resolveRuntime, io));
  let code = 0;
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) code = 2;
    else {
      code = 1;
      io.stderr(`error: ${e instanceof AppError ? `${e.message} (${e.code})` : (e as Error).message}\n`);
    }
  }
  return { code, stdout, stderr };
}

describe("vsearch models", () => {
  test("import (load-checked in the worker pool), list, verify, export", async () => {
    const data = tmp.make();
    const d = ["--data-dir", data];
    const imp = await cli([...d, "--json", "models", "import", CLIP_SRC, "--role", "image-text", "--name", "clip"]);
    expect(imp.stderr).toBe("");
    expect(imp.code).toBe(0);
    const r = JSON.parse(imp.stdout);
    expect(r.model).toMatchObject({ name: "clip", role: "image-text", dtype: "q8" });
    expect(r.model.dir.startsWith(join(data, "models"))).toBe(true);

    const list = JSON.parse((await cli([...d, "--json", "models", "list"])).stdout);
    expect(list.active).toEqual({ "image-text": "clip", speech: null, text: null });
    expect(list.available.map((a: { name: string }) => a.name)).toContain("whisper-tiny.en");
    const human = await cli([...d, "models", "list"]);
    expect(human.stdout).toContain(`image-text  ${r.model.model_id} (q8)`);
    expect(human.stdout).toMatch(/speech\s+-/);

    expect((await cli([...d, "models", "verify"])).stdout).toContain(`ok    ${r.model.model_id}`);
    writeFileSync(join(r.model.dir, "tokenizer.json"), "{}");
    const bad = await cli([...d, "models", "verify", "clip"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("changed   tokenizer.json");
    expect(bad.stderr).toBe("error: clip failed verification; re-import or pull it again (MODEL_VERIFY_FAILED)\n");
    const exp = await cli([...d, "models", "export", "clip", join(data, "clip.tar")]);
    expect(exp.code).toBe(1);
    expect(exp.stderr).toContain("MODEL_FILES_CHANGED");
  });

  test("a model that fails the pool load check is not installed", async () => {
    const data = tmp.make();
    const src = join(data, "broken");
    sysTar(["-C", join(WHISPER_SRC, ".."), "-cf", join(data, "w.tar"), "tiny-random-whisper"]);
    mkdirSync(src);
    sysTar(["-xf", join(data, "w.tar"), "-C", src]);
    const dir = join(src, "tiny-random-whisper");
    writeFileSync(join(dir, "onnx", "encoder_model_quantized.onnx"), readFileSync(join(dir, "config.json")));
    const r = await cli(["--data-dir", data, "--log-level", "silent", "models", "import", dir, "--role", "speech"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: tiny-random-whisper \(speech, q8\) does not load: .*\(MODEL_LOAD_FAILED\)\n$/s);
    expect(JSON.parse((await cli(["--data-dir", data, "--json", "models", "list"])).stdout).installed).toEqual([]);
  });

  test("pull from VSEARCH_MODELS_BASE_URL, a line per file on a non-terminal stderr (none with --json); errors are one line", async () => {
    const src = tmp.make();
    const mirrorDir = join(src, "mirror");
    mkdirSync(mirrorDir);
    expect(
      (await cli(["--data-dir", src, "models", "import", CLIP_SRC, "--role", "image-text", "--no-load-check"])).code,
    ).toBe(0);
    expect((await cli(["--data-dir", src, "models", "export", "tiny-random-clip", join(src, "c.tar.gz")])).code).toBe(
      0,
    );
    sysTar(["-xzf", join(src, "c.tar.gz"), "-C", mirrorDir]);
    mirror = startMirror(mirrorDir);

    const data = tmp.make();
    const r = await cli(["--data-dir", data, "models", "pull", "tiny-random-clip", "--no-load-check"], {
      VSEARCH_MODELS_BASE_URL: mirror.url,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Installed tiny-random-clip \(image-text, q8\) as tiny-random-clip@[0-9a-f]{12}, now the active image-text model/,
    );
    expect(r.stderr).toContain("tiny-random-clip: onnx/text_model_quantized.onnx 0.8 MiB\n");
    expect(r.stdout).toContain(`  from ${mirror.url}/tiny-random-clip\n`);
    // A data dir with no database yet: nothing to reindex, and none was created to say so.
    expect(r.stdout).toContain("nothing to reindex");
    expect(existsSync(join(data, "vsearch.db"))).toBe(false);
    expect(existsSync(join(data, "models", "registry.json"))).toBe(true);
    const quiet = await cli(
      ["--data-dir", tmp.make(), "--json", "models", "pull", "tiny-random-clip", "--no-load-check"],
      { VSEARCH_MODELS_BASE_URL: mirror.url },
    );
    expect(quiet.stderr).toBe("");
    expect(JSON.parse(quiet.stdout)[0]).toMatchObject({
      source: "mirror",
      from: `${mirror.url}/tiny-random-clip`,
      reindex: { videos: 0, command: "vsearch reindex" },
    });

    const badHub = await cli(["--data-dir", data, "models", "pull"], { HF_ENDPOINT: "not a url" });
    expect(badHub).toMatchObject({ code: 1, stdout: "" });
    expect(badHub.stderr).toMatch(
      /^error: hub endpoint "not a url" \(HF_ENDPOINT\) is not a URL \(INVALID_BASE_URL\)\n$/,
    );
    const badMirror = await cli(["--data-dir", data, "models", "pull", "--base-url", "ftp://mirror"]);
    expect(badMirror.stderr).toContain("(INVALID_BASE_URL)");
    const noRole = await cli(["--data-dir", data, "models", "import", WHISPER_SRC]);
    expect(noRole.stderr).toMatch(/^error: the role is required .*\(INVALID_MODEL\)\n$/);
    expect((await cli(["--data-dir", data, "models", "import", WHISPER_SRC, "--role", "audio"])).stderr).toContain(
      "role must be one of",
    );
  });
});
