import { describe, expect, it } from "vitest";
import { failureFromExit, ToolProcess } from "../../src/media/process.ts";
import { mediaBins } from "../helpers/media.ts";

const { ffmpeg } = mediaBins();
const FRAME = 640 * 480 * 3;

/** ffmpeg writing raw 640×480 frames to stdout as fast as it can (pipe fills in well under a frame). */
const rawFrames = (extra: string[] = []) => [
  "-hide_banner",
  "-nostdin",
  "-v",
  "error",
  ...extra,
  "-f",
  "lavfi",
  "-i",
  "testsrc2=s=640x480:r=25:d=4",
  "-f",
  "rawvideo",
  "-pix_fmt",
  "rgb24",
  "pipe:1",
];

describe("ToolProcess", () => {
  it("reads exact chunks and reports the exit", async () => {
    const p = new ToolProcess(ffmpeg, rawFrames(), { timeoutMs: 30_000 });
    const buf = new Uint8Array(FRAME);
    let frames = 0;
    while ((await p.readFull(buf)) === FRAME) frames++;
    expect(frames).toBe(100);
    expect(await p.exited()).toMatchObject({ code: 0, signal: null });
  });

  it("does not count time the consumer spends between reads as a stall", async () => {
    const p = new ToolProcess(ffmpeg, rawFrames(), { stallTimeoutMs: 300 });
    try {
      const buf = new Uint8Array(FRAME);
      expect(await p.readFull(buf)).toBe(FRAME);
      await Bun.sleep(800); // ffmpeg is blocked on the full pipe, silent, for longer than the stall limit
      expect(await p.readFull(buf)).toBe(FRAME);
    } finally {
      p.dispose();
    }
  });

  it("kills a tool that stays silent while we wait for it (stall)", async () => {
    // -re paces input to real time; one 25 fps frame is 40 ms, but -ss 5 in realtime means
    // ffmpeg reads silently for seconds before writing anything.
    const p = new ToolProcess(
      ffmpeg,
      [
        "-hide_banner",
        "-nostdin",
        "-v",
        "error",
        "-re",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=s=64x64:r=25:d=30",
        "-ss",
        "5",
        "-f",
        "rawvideo",
        "pipe:1",
      ],
      { stallTimeoutMs: 300 },
    );
    const started = Date.now();
    await expect(p.readFull(new Uint8Array(64 * 64 * 3))).rejects.toMatchObject({ code: "TIMEOUT" });
    expect(Date.now() - started).toBeLessThan(3_000);
    p.dispose();
  });

  it("enforces the wall-clock limit", async () => {
    const p = new ToolProcess(
      ffmpeg,
      ["-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "sine=d=30", "-f", "null", "-"],
      { timeoutMs: 200 },
    );
    await expect(p.exited()).rejects.toMatchObject({ code: "TIMEOUT" });
  });

  it("refuses a run without any time limit, and a binary that does not exist", () => {
    expect(() => new ToolProcess(ffmpeg, ["-version"], {})).toThrow(/time limit|timeoutMs/);
    expect(() => new ToolProcess("/nonexistent/ffmpeg", ["-version"], { timeoutMs: 1000 })).toThrow(
      expect.objectContaining({ code: "TOOL_FAILED" }),
    );
  });

  it("splits stderr into lines as they arrive and keeps a short tail", async () => {
    const lines: string[] = [];
    const p = new ToolProcess(ffmpeg, ["-hide_banner", "-nostdin", "-i", "/nonexistent/in.mp4"], {
      timeoutMs: 10_000,
      onStderrLine: (l) => lines.push(l),
    });
    const exit = await p.exited();
    expect(exit.code).not.toBe(0);
    expect(lines.some((l) => l.includes("No such file or directory"))).toBe(true);
    expect(failureFromExit("x", exit).code).toBe("FILE_NOT_FOUND");
  });
});
