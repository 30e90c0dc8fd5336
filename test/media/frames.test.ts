import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { sampleFrames, type SampledFrame, type SampleFramesOptions } from "../../src/media/frames.ts";
import { createShowinfoParser } from "../../src/media/showinfo.ts";
import {
  COLORS,
  CUTS,
  mediaBins,
  mediaFixture,
  meanRgb,
  nearestColour,
  pixel,
  type FixtureName,
} from "../helpers/media.ts";

const bins = mediaBins();

async function collect(name: FixtureName, opts: SampleFramesOptions = {}) {
  const stream = sampleFrames(bins, await mediaFixture(name), opts);
  const frames: SampledFrame[] = [];
  for await (const f of stream) frames.push(f);
  return { frames, stats: stream.stats };
}

/** Live (non-zombie) processes whose command line contains `needle` (Linux /proc). */
function ffmpegsRunning(needle: string): number {
  let n = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const state = /^State:\s+(\w)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      if (cmd.includes(needle) && cmd.includes("ffmpeg") && state !== "Z") n++;
    } catch {
      // exited while we looked
    }
  }
  return n;
}

const isFrameTime = (t: number, fps: number) => Math.abs(t * fps - Math.round(t * fps)) < 1e-6;

/** The same job done with `fps=1` (what this module deliberately does not use), for comparison. */
async function fpsFilterFrames(file: string, keyframesOnly: boolean): Promise<{ time: number; rgb: number[] }[]> {
  const proc = Bun.spawn(
    [
      bins.ffmpeg,
      "-hide_banner",
      "-nostdin",
      "-loglevel",
      "repeat+level+info",
      ...(keyframesOnly ? ["-skip_frame", "nokey"] : []),
      "-i",
      file,
      "-vf",
      "fps=1,scale=8:8,showinfo",
      "-vsync",
      "passthrough",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "pipe:1",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([
    new Response(proc.stdout).arrayBuffer(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const parse = createShowinfoParser();
  const times = err
    .split("\n")
    .map(parse)
    .filter((f) => f !== null)
    .map((f) => f.time);
  const bytes = new Uint8Array(out);
  return times.map((time, i) => ({ time, rgb: [...meanRgb(bytes.subarray(i * 192, (i + 1) * 192))] }));
}

describe("sampleFrames", () => {
  it("emits one size×size RGB frame per second plus the boundary frames, at true times", async () => {
    const { frames, stats } = await collect("cuts", {
      keyframesOnly: false,
      extraTimestamps: [...CUTS.boundaries, 3.3],
    });
    const times = frames.map((f) => f.timestamp);
    // Grid 0..7 s, the cuts 3.6/5.6/6.8 (2.0 is on the grid), and 3.3 → the frame at 3.32.
    expect(times.map((t) => +t.toFixed(2))).toEqual([0, 1, 2, 3, 3.32, 3.6, 4, 5, 5.6, 6, 6.8, 7]);
    expect(frames.map((f) => f.forced)).toEqual([
      false,
      false,
      true,
      false,
      true,
      true,
      false,
      false,
      true,
      false,
      true,
      false,
    ]);
    expect(frames.map((f) => f.index)).toEqual(times.map((_, i) => i));
    for (const f of frames) expect(f.rgb.length).toBe(224 * 224 * 3);
    expect(stats).toMatchObject({ mode: "all", framesEmitted: frames.length, decodeErrors: 0 });
    // Pixels match the segment the timestamp says: red 2.0–3.6, blue 5.6–6.8.
    const red = frames.find((f) => f.timestamp === 3)!;
    expect(meanRgb(red.rgb)[0]).toBeGreaterThan(200);
    expect(meanRgb(red.rgb)[2]).toBeLessThan(40);
    const blue = frames.find((f) => Math.abs(f.timestamp - 5.6) < 1e-6)!;
    expect(meanRgb(blue.rgb)[2]).toBeGreaterThan(200);
  });

  it("uses real presentation times where fps=1 would stamp slot times (23.976 fps)", async () => {
    const { frames } = await collect("colors", { keyframesOnly: false });
    // 192 frames, the last at 7.966 s: buckets 0..7.
    expect(frames.length).toBe(8);
    for (const f of frames) {
      expect(isFrameTime(f.timestamp, COLORS.fps)).toBe(true);
      expect(nearestColour(meanRgb(f.rgb), COLORS.rgb)).toBe(COLORS.segmentAt(f.timestamp));
    }
    // Bucket 1 s starts with frame 24 at 1.001 s: that is what we report; fps=1 says 1.000.
    expect(frames[1].timestamp).toBeCloseTo(1.001, 9);
    const viaFps = await fpsFilterFrames(await mediaFixture("colors"), false);
    expect(viaFps[1].time).toBe(1);
    expect(isFrameTime(viaFps[1].time, COLORS.fps)).toBe(false);
  });

  it("keyframe-only decode returns keyframes with their own times; fps=1 there invents frames", async () => {
    const { frames, stats } = await collect("colors", { keyframesOnly: true });
    expect(stats.mode).toBe("keyframes");
    const expected = [0, 1, 2, 3].map((k) => (k * COLORS.gop) / COLORS.fps);
    expect(frames).toHaveLength(expected.length);
    frames.forEach((f, i) => expect(f.timestamp).toBeCloseTo(expected[i], 9));
    for (const f of frames) {
      expect(f.keyframe).toBe(true);
      expect(nearestColour(meanRgb(f.rgb), COLORS.rgb)).toBe(COLORS.segmentAt(f.timestamp));
    }
    // fps=1 fills its 1 s slots by repeating keyframes: stamped 1.0 s, showing the picture of 0 s.
    const viaFps = await fpsFilterFrames(await mediaFixture("colors"), true);
    const wrong = viaFps.filter((f) => nearestColour(f.rgb, COLORS.rgb) !== COLORS.segmentAt(f.time));
    expect(wrong.length).toBeGreaterThan(0);
  });

  it('"auto" measures keyframe spacing: 2 s GOPs → keyframes, 2.5 s GOPs → full decode', async () => {
    const cuts = await collect("cuts", { keyframesOnly: "auto" });
    expect(cuts.stats.mode).toBe("keyframes");
    expect(cuts.stats.keyframeSpacing!.maxGapSecs).toBeLessThanOrEqual(2 + 1e-6);
    const colors = await collect("colors", { keyframesOnly: "auto" });
    expect(colors.stats.mode).toBe("all");
    expect(colors.stats.keyframeSpacing!.maxGapSecs).toBeCloseTo(COLORS.gop / COLORS.fps, 3);
    // A known short duration skips the measurement and decodes everything.
    const short = await collect("cuts", { keyframesOnly: "auto", durationSecs: CUTS.durationSecs });
    expect(short.stats).toMatchObject({ mode: "all", keyframeSpacing: null });
  });

  it("handles odd sizes, 4K, a 0.5 s clip and a custom size", async () => {
    for (const name of ["odd", "uhd", "short"] as const) {
      const { frames } = await collect(name, { keyframesOnly: false, size: 64 });
      expect(frames.length).toBe(1);
      expect(frames[0].rgb.length).toBe(64 * 64 * 3);
      expect(frames[0].timestamp).toBe(0);
    }
  });

  it("applies rotation metadata (red/blue split turns from top/bottom to left/right)", async () => {
    const { frames } = await collect("rotated", { size: 32 });
    const [left, right] = [pixel(frames[0].rgb, 32, 2, 16), pixel(frames[0].rgb, 32, 29, 16)];
    const [top, bottom] = [pixel(frames[0].rgb, 32, 16, 2), pixel(frames[0].rgb, 32, 16, 29)];
    const colour = (p: number[]) =>
      nearestColour(p, [
        [255, 0, 0],
        [0, 0, 255],
      ]);
    expect(colour(left)).not.toBe(colour(right));
    expect(colour(top)).toBe(colour(bottom));
  });

  it("tone-maps HDR when asked (different pixels, same geometry)", async () => {
    const plain = await collect("hdr", { size: 32 });
    const mapped = await collect("hdr", { size: 32, hdr: true });
    expect(mapped.frames.length).toBe(plain.frames.length);
    expect(mapped.frames[0].rgb.length).toBe(32 * 32 * 3);
    let diff = 0;
    for (let i = 0; i < plain.frames[0].rgb.length; i++)
      diff += Math.abs(plain.frames[0].rgb[i] - mapped.frames[0].rgb[i]);
    expect(diff / plain.frames[0].rgb.length).toBeGreaterThan(5);
  });

  it("keeps going past corrupt data and counts the errors", async () => {
    const { frames, stats } = await collect("corruptTs", { keyframesOnly: false, size: 32 });
    expect(stats.decodeErrors).toBeGreaterThan(0);
    expect(stats.errorSamples.length).toBeGreaterThan(0);
    expect(frames.at(-1)!.timestamp).toBeGreaterThanOrEqual(6); // frames after the damaged 40–50 %
    expect(frames.length).toBeLessThan(8); // and some inside it were lost
  });

  it("ends early, without throwing, on a file cut short", async () => {
    const { frames, stats } = await collect("truncatedFaststart", { keyframesOnly: false, size: 32 });
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.at(-1)!.timestamp).toBeLessThan(CUTS.durationSecs - 1);
    expect(stats.decodeErrors).toBeGreaterThan(0);
  });

  it("passes thousands of extra timestamps through a filter script", async () => {
    // 3000 times, denser than the frames: every one of the 200 frames is selected.
    const extra = Array.from({ length: 3000 }, (_, i) => (i * CUTS.durationSecs) / 3000);
    const { frames } = await collect("cuts", { keyframesOnly: false, size: 8, extraTimestamps: extra });
    expect(frames.length).toBe(CUTS.durationSecs * CUTS.fps);
    expect(frames.every((f) => f.forced)).toBe(true);
  });

  it("stops ffmpeg when the consumer leaves early, and can iterate again", async () => {
    // 0.777777 makes this run's command line unique ("0.777677" in the graph) so we can find it.
    const stream = sampleFrames(bins, await mediaFixture("uhd"), {
      keyframesOnly: false,
      extraTimestamps: [0.2, 0.4, 0.6, 0.777777],
    });
    for await (const f of stream) {
      expect(f.index).toBe(0);
      expect(ffmpegsRunning("0.777677")).toBe(1); // still running: 4 frames to go
      break;
    }
    const deadline = Date.now() + 5_000;
    while (ffmpegsRunning("0.777677") > 0 && Date.now() < deadline) await Bun.sleep(20);
    expect(ffmpegsRunning("0.777677")).toBe(0);
    let n = 0;
    for await (const _ of stream) n++;
    expect(n).toBe(5);
  });

  it("fails with typed errors", async () => {
    const drain = async (name: FixtureName) => {
      for await (const _ of sampleFrames(bins, await mediaFixture(name), { keyframesOnly: false })) void _;
    };
    await expect(drain("audioM4a")).rejects.toMatchObject({ code: "NO_VIDEO_STREAM" });
    await expect(drain("truncated")).rejects.toMatchObject({ code: "DECODE_FAILED" });
    await expect(drain("textAsMp4")).rejects.toMatchObject({ code: "DECODE_FAILED" });
  });
});
