/** The built-in tar reader/writer against GNU tar, and its refusals. */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, test } from "vitest";
import { listFiles } from "../../src/models/fsutil.ts";
import { extractTar, writeTar } from "../../src/models/tar.ts";
import { appError, CLIP_SRC, rawTar, sha256, sysTar, tempDirs } from "./helpers.ts";

const tmp = tempDirs();
afterEach(() => tmp.cleanup());

describe("extractTar", () => {
  test("reads a GNU tar of a model folder, hashing every file as written", async () => {
    const d = tmp.make();
    const tar = join(d, "clip.tar");
    sysTar(["-C", join(CLIP_SRC, ".."), "-cf", tar, "tiny-random-clip"]);
    const dest = join(d, "out");
    mkdirSync(dest);
    const files = await extractTar(tar, dest);
    const want = await listFiles(CLIP_SRC);
    expect(files.map((f) => f.path)).toEqual(want.map((p) => `tiny-random-clip/${p}`));
    for (const f of files) {
      const src = join(CLIP_SRC, f.path.slice("tiny-random-clip/".length));
      expect(f.sha256).toBe(sha256(src));
      expect(readFileSync(join(dest, f.path)).equals(readFileSync(src))).toBe(true);
    }
  });

  test("detects gzip from the bytes, whatever the file is called", async () => {
    const d = tmp.make();
    const plain = rawTar([{ name: "a/b.txt", data: "hello" }]);
    const misnamed = join(d, "model.tar");
    writeFileSync(misnamed, gzipSync(plain));
    mkdirSync(join(d, "out"));
    const files = await extractTar(misnamed, join(d, "out"));
    expect(files).toEqual([{ path: "a/b.txt", size: 5, sha256: sha256(join(d, "out", "a", "b.txt")) }]);
  });

  test("reads GNU long names and writes pax long names that GNU tar understands", async () => {
    const d = tmp.make();
    const long = `${"d".repeat(120)}/${"f".repeat(120)}.json`;
    mkdirSync(join(d, "src", "d".repeat(120)), { recursive: true });
    writeFileSync(join(d, "src", long), "{}");
    const gnu = join(d, "gnu.tar");
    sysTar(["--format=gnu", "-C", join(d, "src"), "-cf", gnu, "."]);
    mkdirSync(join(d, "a"));
    expect((await extractTar(gnu, join(d, "a"))).map((f) => f.path)).toEqual([long]);

    const ours = join(d, "ours.tar.gz");
    await writeTar(
      ours,
      [
        { path: long, data: Buffer.from("{}") },
        { path: `${"p".repeat(90)}/${"q".repeat(90)}.onnx`, data: Buffer.alloc(700, 1) },
      ],
      { gzip: true },
    );
    mkdirSync(join(d, "b"));
    sysTar(["-xzf", ours, "-C", join(d, "b")]);
    expect(readFileSync(join(d, "b", long), "utf8")).toBe("{}");
    expect(readFileSync(join(d, "b", "p".repeat(90), `${"q".repeat(90)}.onnx`)).length).toBe(700);
    mkdirSync(join(d, "c"));
    expect((await extractTar(ours, join(d, "c"))).map((f) => f.path).sort()).toEqual(
      [long, `${"p".repeat(90)}/${"q".repeat(90)}.onnx`].sort(),
    );
  });

  test.each([
    ["a parent-directory path", [{ name: "../escape.txt", data: "x" }], "'..' in path"],
    ["a nested parent-directory path", [{ name: "m/../../escape.txt", data: "x" }], "'..' in path"],
    ["an absolute path", [{ name: "/tmp/escape.txt", data: "x" }], "absolute path"],
    ["a symlink", [{ name: "m/config.json", type: "2", linkname: "/etc/passwd" }], "links are not allowed"],
    ["a hard link", [{ name: "m/config.json", type: "1", linkname: "../../x" }], "links are not allowed"],
    ["a device", [{ name: "m/dev", type: "3" }], "unsupported type"],
  ])("refuses %s", async (_what, entries, reason) => {
    const d = tmp.make();
    const tar = join(d, "evil.tar");
    writeFileSync(tar, rawTar([{ name: "m/ok.txt", data: "fine" }, ...entries]));
    mkdirSync(join(d, "out", "deep"), { recursive: true });
    const err = await appError(extractTar(tar, join(d, "out", "deep")));
    expect(err.code).toBe("INVALID_MODEL");
    expect(err.message).toContain(reason);
    expect(existsSync(join(d, "out", "escape.txt"))).toBe(false);
    expect(existsSync(join(d, "escape.txt"))).toBe(false);
  });

  // Issue 21: a bomb stopped while it streams, not after the disk is full.
  test("stops a gzip that expands past the ratio, having written little of it", async () => {
    const d = tmp.make();
    // 16 MiB of zeros in one entry: ~16 kB gzipped, ~1000×.
    writeFileSync(join(d, "bomb.tar.gz"), gzipSync(rawTar([{ name: "m/model.onnx", data: "\0".repeat(16 << 20) }])));
    mkdirSync(join(d, "out"));
    const limits = { maxBytes: 1 << 30, maxRatio: 50, ratioAfterBytes: 1 << 20 };
    const err = await appError(extractTar(join(d, "bomb.tar.gz"), join(d, "out"), limits));
    expect(err.code).toBe("INVALID_MODEL");
    expect(err.message).toContain("decompression bomb");
    // Stopped within a few chunks past the 1 MiB where the ratio starts to count.
    expect(statSync(join(d, "out", "m", "model.onnx")).size).toBeLessThan(4 << 20);
  });

  test("refuses an entry over what is left of the budget before writing a byte of it", async () => {
    const d = tmp.make();
    writeFileSync(
      join(d, "big.tar"),
      rawTar([
        { name: "m/config.json", data: "{}" },
        { name: "m/model.onnx", data: "x".repeat(3 << 20) },
      ]),
    );
    mkdirSync(join(d, "out"));
    const err = await appError(
      extractTar(join(d, "big.tar"), join(d, "out"), { maxBytes: 2 << 20, maxRatio: 50, ratioAfterBytes: 1 << 20 }),
    );
    expect(err.code).toBe("INVALID_MODEL");
    expect(err.message).toContain("refused before writing it");
    expect(existsSync(join(d, "out", "m", "config.json"))).toBe(true);
    expect(existsSync(join(d, "out", "m", "model.onnx"))).toBe(false);
  });

  test("refuses truncated and non-tar input", async () => {
    const d = tmp.make();
    const whole = rawTar([{ name: "m/config.json", data: "x".repeat(2000) }]);
    writeFileSync(join(d, "cut.tar"), whole.subarray(0, 1200));
    writeFileSync(join(d, "cut.tar.gz"), gzipSync(whole).subarray(0, 40));
    writeFileSync(join(d, "text.tar"), "this is not a tar archive".repeat(40));
    for (const [f, msg] of [
      ["cut.tar", "truncated"],
      ["cut.tar.gz", "gzip"],
      ["text.tar", "not a tar archive"],
    ]) {
      mkdirSync(join(d, `out-${f}`));
      const err = await appError(extractTar(join(d, f), join(d, `out-${f}`)));
      expect(err.code, f).toBe("INVALID_MODEL");
      expect(err.message, f).toContain(msg);
    }
  });
});
