/**
 * Issue 21: ffmpeg children die with the process that started them. A kill -9 of a real `serve`
 * in the middle of a web rendition leaves no ffmpeg or ffprobe of its data dir running (they are
 * started through a PR_SET_PDEATHSIG guard, src/media/child-guard.ts); an ffmpeg a crash did leave
 * behind (started some other way) is killed by the next start's sweep. Both guards — util-linux
 * `setpriv` and the bun:ffi fallback — are proven the same way on a process of their own.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { pickGuard } from "../../src/media/child-guard.ts";
import { BUN, postCollection, postUpload, runCliJson, startServer } from "../helpers/cli.ts";
import { FFMPEG, ffmpeg, scratchDir, toolProcesses } from "../helpers/ffmpeg.ts";
import { until } from "../helpers/wait.ts";

const root = mkdtempSync(join(tmpdir(), "vsearch-kill9-ffmpeg-"));
const media = scratchDir("kill9-ffmpeg");
/** Servers and stand-ins this file started: killed in afterAll too, should a test time out first. */
const started: { kill(signal?: number | NodeJS.Signals): void }[] = [];
afterAll(() => {
  // Nothing of ours may outlive the file, whatever failed above.
  for (const p of started) p.kill("SIGKILL");
  for (const p of toolProcesses(root)) process.kill(p.pid, "SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

/** An ffmpeg that runs until killed at almost no CPU (`-re` on a 1 fps source), naming `marker` in its command line. */
const idleFfmpeg = (marker: string) => [
  FFMPEG,
  "-nostdin",
  "-v",
  "error",
  "-re",
  "-f",
  "lavfi",
  "-i",
  "nullsrc=s=16x16:r=1",
  "-progress",
  marker,
  "-f",
  "null",
  "-",
];

test("kill -9 of serve while it encodes a rendition: no ffmpeg of its data dir survives", async () => {
  const dir = join(root, "served");
  const account = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "A"]);
  const { key } = await runCliJson([
    "--data-dir",
    dir,
    "keys",
    "create",
    "--account",
    account.id,
    "--name",
    "k",
    "--permissions",
    "all",
  ]);
  // MPEG-4 Part 2 in AVI needs a web rendition (SPEC §11); 30 s of it keeps the encoder busy a while.
  const avi = await ffmpeg(
    ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=30", "-c:v", "mpeg4", "-q:v", "5"],
    join(media, "long.avi"),
  );
  const server = await startServer(dir);
  started.push(server.proc);
  try {
    await postUpload(server.url, key, await postCollection(server.url, key), avi, "long.avi");
    // No model is installed: ingest skips the model stages, the video is ready, the rendition starts.
    const encoding = await until(
      async () => toolProcesses(dir).some((p) => p.name === "ffmpeg" && p.cmd.includes("web.mp4.tmp")),
      120_000,
    );
    expect(encoding, "the rendition's ffmpeg started").toBe(true);
    const children = toolProcesses(dir);
    expect(children.every((p) => p.ppid === server.proc.pid)).toBe(true);
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    expect(await until(async () => toolProcesses(dir).length === 0, 5000), JSON.stringify(toolProcesses(dir))).toBe(
      true,
    );
  } finally {
    server.proc.kill("SIGKILL");
  }
}, 300_000);

test("the next start kills an ffmpeg a crash left on the data dir (its parent is gone)", async () => {
  const dir = join(root, "swept");
  await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "A"]);
  // Orphaned the way a crash orphans: its parent (a shell) exits at once, init adopts it.
  const marker = join(dir, "uploads", "tmp", "orphan.progress");
  const sh = Bun.spawn([
    "sh",
    "-c",
    `mkdir -p '${join(dir, "uploads", "tmp")}'; '${idleFfmpeg(marker).join("' '")}' >/dev/null 2>&1 &`,
  ]);
  await sh.exited;
  expect(await until(async () => toolProcesses(marker).length === 1, 10_000)).toBe(true);
  expect(toolProcesses(marker)[0].ppid).not.toBe(process.pid);
  const server = await startServer(dir);
  started.push(server.proc);
  try {
    expect(await until(async () => toolProcesses(marker).length === 0, 10_000)).toBe(true);
  } finally {
    await server.stop("SIGKILL");
  }
}, 120_000);

test.each(["setpriv", "bun"] as const)(
  "the %s guard: a tool started through it dies when its parent is killed with -9",
  async (kind) => {
    const guard = pickGuard(kind);
    expect(guard.kind).toBe(kind); // this host has util-linux's setpriv; the fallback is always there
    const marker = join(root, `guard-${kind}.progress`);
    // A stand-in for the server: a process of its own that starts the tool through the guard, then idles.
    const parent = Bun.spawn(
      [
        BUN,
        "-e",
        `const [g, cmd] = JSON.parse(process.argv[1]);
         const p = Bun.spawn([...g.prefix.map((a) => (a === "PARENT" ? String(process.pid) : a)), ...cmd],
           { env: { ...g.env }, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
         console.log(p.pid);
         setInterval(() => {}, 1000);`,
        JSON.stringify([
          // The guard names its parent's pid: here the stand-in's, not this test process's.
          { ...guard, prefix: guard.prefix.map((a) => (a === String(process.pid) ? "PARENT" : a)) },
          idleFfmpeg(marker),
        ]),
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    started.push(parent);
    try {
      expect(await until(async () => toolProcesses(marker).length === 1, 15_000)).toBe(true);
      expect(toolProcesses(marker)[0].ppid).toBe(parent.pid);
      parent.kill("SIGKILL");
      await parent.exited;
      expect(await until(async () => toolProcesses(marker).length === 0, 5000)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  },
  30_000,
);
