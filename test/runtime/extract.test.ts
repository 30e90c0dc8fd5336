import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { extractAll, extractFile, fingerprint } from "../../src/runtime/extract.ts";
import { tempDirs } from "../helpers/temp.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const EXTRACT_TS = join(ROOT, "src", "runtime", "extract.ts");

const tempDir = tempDirs("vsearch-extract-").make;

const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");
const leftovers = (dir: string) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.includes(".tmp-"));

function source(dir: string, bytes: number, name = "tool"): string {
  const p = join(dir, name);
  writeFileSync(p, randomBytes(bytes));
  return p;
}

/**
 * Extracts a fresh `bytes`-byte source, lets `damage` change the extracted copy, and extracts
 * again: what the second extraction did, for the tests of what a check must catch.
 */
async function reextractAfter(
  bytes: number,
  file: { target: string; executable: boolean },
  damage: (path: string, src: string) => void | Promise<void>,
) {
  const d = tempDir();
  const src = source(d, bytes);
  const out = join(d, "rt");
  const { path } = await extractFile({ source: src, ...file }, out);
  await damage(path, src);
  const again = await extractFile({ source: src, ...file }, out);
  return { src, path, again };
}

describe("extractFile", () => {
  test("first call writes the file with its mode; a second call only checks it", async () => {
    const d = tempDir();
    const src = source(d, 300_000);
    const out = join(d, "rt");
    const first = await extractFile({ source: src, target: "bin/tool", executable: true }, out);
    expect(first).toEqual({ path: join(out, "bin/tool"), written: true });
    expect(sha(first.path)).toBe(sha(src));
    expect(statSync(first.path).mode & 0o777).toBe(0o755);
    const lib = await extractFile({ source: src, target: "lib.so", executable: false }, out);
    expect(statSync(lib.path).mode & 0o777).toBe(0o644);

    const before = statSync(first.path);
    const second = await extractFile({ source: src, target: "bin/tool", executable: true }, out);
    expect(second.written).toBe(false);
    const after = statSync(first.path);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    expect(leftovers(out)).toEqual([]);
  });

  test("a truncated copy (size mismatch) is replaced", async () => {
    const { src, path, again } = await reextractAfter(200_000, { target: "tool", executable: true }, (path) =>
      truncateSync(path, 1000),
    );
    expect(again.written).toBe(true);
    expect(sha(path)).toBe(sha(src));
  });

  test("a same-size copy of different bytes (another build) is replaced; the fingerprint sees its tail", async () => {
    const { src, path, again } = await reextractAfter(
      500_000,
      { target: "tool", executable: false },
      async (path, src) => {
        const other = readFileSync(src);
        other[other.length - 10] ^= 0xff;
        writeFileSync(path, other);
        expect(statSync(path).size).toBe(statSync(src).size);
        expect(await fingerprint(path)).not.toBe(await fingerprint(src));
      },
    );
    expect(again.written).toBe(true);
    expect(sha(path)).toBe(sha(src));
  });

  test("an executable that lost its x bit is rewritten", async () => {
    const { path, again } = await reextractAfter(10_000, { target: "ffmpeg", executable: true }, (path) =>
      chmodSync(path, 0o644),
    );
    expect(again.written).toBe(true);
    expect(statSync(path).mode & 0o111).toBe(0o111);
  });

  test("temp files of a crashed writer are removed once stale; a live writer's are left alone", async () => {
    const d = tempDir();
    const src = source(d, 10_000);
    const out = join(d, "rt");
    mkdirSync(out);
    const stale = join(out, ".tool.tmp-1-0-dead");
    const fresh = join(out, ".tool.tmp-2-0-live");
    writeFileSync(stale, "partial");
    writeFileSync(fresh, "partial");
    const old = (Date.now() - 3600_000) / 1000;
    utimesSync(stale, old, old);
    await extractFile({ source: src, target: "tool", executable: true }, out);
    expect(readdirSync(out).sort()).toEqual([".tool.tmp-2-0-live", "tool"]);
  });

  test("a failed write leaves no temp file and names the target", async () => {
    const d = tempDir();
    const src = source(d, 10_000);
    const out = join(d, "rt");
    mkdirSync(join(out, "tool"), { recursive: true }); // a directory where the file should go: rename fails
    writeFileSync(join(out, "tool", "x"), "");
    await expect(extractFile({ source: src, target: "tool", executable: true }, out)).rejects.toThrow(
      /cannot extract tool to/,
    );
    expect(leftovers(out)).toEqual([]);
  });

  test("extractAll returns results in job order", async () => {
    const d = tempDir();
    const a = source(d, 1000, "a");
    const b = source(d, 2000, "b");
    const out = join(d, "rt");
    const r = await extractAll(
      [
        { source: a, target: "x/a", executable: false },
        { source: b, target: "b", executable: true },
      ],
      out,
    );
    expect(r.map((x) => x.path)).toEqual([join(out, "x/a"), join(out, "b")]);
    expect(sha(r[1].path)).toBe(sha(b));
  });
});

describe("concurrent extraction into one folder", () => {
  // Big enough that the writes overlap in time.
  const SIZE = 48 * 1024 * 1024;

  test("two processes started together both succeed and leave one complete file", async () => {
    const d = tempDir();
    const src = source(d, SIZE);
    const out = join(d, "rt");
    const go = join(d, "go");
    const script = `
      import { existsSync } from "node:fs";
      import { extractFile } from ${JSON.stringify(EXTRACT_TS)};
      for (let i = 0; i < 500 && !existsSync(${JSON.stringify(go)}); i++) await Bun.sleep(10);
      const r = await extractFile({ source: ${JSON.stringify(src)}, target: "bin/tool", executable: true }, ${JSON.stringify(out)});
      console.log(JSON.stringify(r));
    `;
    const procs = [0, 1].map(() => Bun.spawn([BUN, "-e", script], { stdout: "pipe", stderr: "pipe" }));
    await Bun.sleep(300);
    writeFileSync(go, "");
    const results = await Promise.all(
      procs.map(async (p) => ({
        code: await p.exited,
        out: await new Response(p.stdout).text(),
        err: await new Response(p.stderr).text(),
      })),
    );
    for (const r of results) {
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out).path).toBe(join(out, "bin/tool"));
    }
    expect(sha(join(out, "bin/tool"))).toBe(sha(src));
    expect(leftovers(out)).toEqual([]);
  });

  test("two worker threads of one process (same pid) both succeed", async () => {
    const d = tempDir();
    const src = source(d, SIZE);
    const out = join(d, "rt");
    const workerFile = join(d, "extract-worker.ts");
    writeFileSync(
      workerFile,
      `import { parentPort, workerData, threadId } from "node:worker_threads";
       import { extractFile } from ${JSON.stringify(EXTRACT_TS)};
       const shared = new Int32Array(workerData.barrier);
       Atomics.add(shared, 0, 1);
       while (Atomics.load(shared, 0) < 2) Atomics.wait(shared, 0, Atomics.load(shared, 0), 10);
       extractFile(workerData.job, workerData.out).then(
         (r) => parentPort.postMessage({ ok: true, threadId, ...r }),
         (e) => parentPort.postMessage({ ok: false, error: String(e) }),
       );`,
    );
    const barrier = new SharedArrayBuffer(4);
    const job = { source: src, target: "lib/libx.so.1", executable: false };
    const run = () =>
      new Promise<any>((ok, fail) => {
        const w = new Worker(workerFile, { workerData: { barrier, job, out } });
        w.once("message", (m) => {
          ok(m);
          void w.terminate();
        });
        w.once("error", fail);
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect(a.ok && b.ok).toBe(true);
    expect(a.threadId).not.toBe(b.threadId);
    expect(sha(join(out, "lib/libx.so.1"))).toBe(sha(src));
    expect(leftovers(out)).toEqual([]);
  });
});
