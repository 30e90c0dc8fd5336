/**
 * One keyframe decode for everything the visual stages need: model frames, shot changes scored
 * on those frames (scene-score.ts), a thumbnail of each frame (frames.ts `jpegs`), and the cheap
 * packet-flag check that decides keyframe mode (select.ts).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sampleFrames, type SampledFrame } from "../../src/media/frames.ts";
import { ShotTracker, sceneScore } from "../../src/media/scene-score.ts";
import { keyframesCloseEnough, readKeyframeTimes } from "../../src/media/select.ts";
import { detectShotBoundaries } from "../../src/media/shots.ts";
import { COLORS, LONG_CUTS, imageDimensions, isJpeg, mediaBins, mediaFixture, meanRgb } from "../helpers/media.ts";
import { tempDir } from "../helpers/temp.ts";

const bins = mediaBins();
const tmp = tempDir("vsearch-single-pass-");

describe("sceneScore", () => {
  it("is ffmpeg's: min(mafd, |Δmafd|) / 100 over the RGB bytes", () => {
    const black = new Uint8Array(12);
    const white = new Uint8Array(12).fill(255);
    const grey = new Uint8Array(12).fill(100);
    expect(sceneScore(black, white, 0)).toEqual({ score: 1, mafd: 255 });
    expect(sceneScore(black, grey, 0)).toEqual({ score: 1, mafd: 100 });
    // Steady large differences (motion) score low: the second one is no jump.
    expect(sceneScore(black, grey, 100).score).toBe(0);
    expect(sceneScore(black, black, 0)).toEqual({ score: 0, mafd: 0 });
    expect(sceneScore(black, new Uint8Array(3), 0).score).toBe(0); // size change: no score
  });

  it("ShotTracker applies the threshold and the minimum shot length, and copes with detached buffers", () => {
    const t = new ShotTracker({ threshold: 0.3, minShotSecs: 0.5 });
    const frame = (v: number) => new Uint8Array(30).fill(v);
    const feed = [
      [0, 0],
      [1, 0],
      [2, 200],
      [2.2, 0],
      [3, 0],
      [4, 255],
    ] as const;
    for (const [time, v] of feed) {
      const rgb = frame(v);
      t.push(time, rgb);
      structuredClone(rgb.buffer, { transfer: [rgb.buffer] }); // the pipeline hands the buffer to a worker
    }
    // 2 → cut; 2.2 is a cut back but only 0.2 s later (merged); 4 → cut.
    expect(t.boundaries()).toEqual([2, 4]);
  });
});

describe("one keyframe decode: frames, shots and thumbnails", () => {
  it("scores the same cuts as ffmpeg's own scene detection, and writes a JPEG per frame", async () => {
    const file = await mediaFixture("longCuts");
    const dir = join(tmp, "jpegs");
    mkdirSync(dir);
    const stream = sampleFrames(bins, file, { keyframesOnly: true, jpegs: { dir, width: 160 } });
    const tracker = new ShotTracker();
    const frames: SampledFrame[] = [];
    for await (const f of stream) {
      tracker.push(f.timestamp, f.rgb);
      frames.push(f);
    }
    expect(frames.map((f) => f.timestamp)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
    expect(tracker.boundaries()).toEqual([...LONG_CUTS.boundaries]);
    expect(await detectShotBoundaries(bins, file, { keyframesOnly: true })).toEqual([...LONG_CUTS.boundaries]);

    const jpegs = readdirSync(dir).sort();
    expect(jpegs).toEqual(frames.map((f) => `${String(f.index).padStart(8, "0")}.jpg`));
    expect(isJpeg(readFileSync(join(dir, jpegs[4])))).toBe(true);
    expect(await imageDimensions(join(dir, jpegs[4]))).toEqual([160, 120]); // display aspect kept
  });

  it("keeps frames and JPEGs in step when the graph goes through a filter script (many boundaries)", async () => {
    const file = await mediaFixture("longCuts");
    const dir = join(tmp, "jpegs-script");
    mkdirSync(dir);
    // Thousands of extra timestamps make the select expression longer than an argv string may be.
    const extra = Array.from({ length: 3000 }, (_, i) => 20 + i * 0.001);
    const stream = sampleFrames(bins, file, {
      keyframesOnly: false,
      extraTimestamps: [...extra, 5.02],
      jpegs: { dir, width: 64 },
    });
    const frames: SampledFrame[] = [];
    for await (const f of stream) frames.push(f);
    expect(frames.some((f) => f.forced && Math.abs(f.timestamp - 5.04) < 0.05)).toBe(true);
    expect(readdirSync(dir).length).toBe(frames.length);
  });
});

describe("the poster branch", () => {
  async function run(atSecs: number, name: string) {
    const dir = join(tmp, name);
    mkdirSync(dir);
    const path = join(dir, "poster.jpg");
    const stream = sampleFrames(bins, await mediaFixture("longCuts"), {
      keyframesOnly: true,
      jpegs: { dir, width: 64 },
      poster: { path, atSecs, width: 200 },
    });
    let n = 0;
    for await (const _ of stream) n++;
    return { path, n, jpegs: readdirSync(dir).filter((f) => f !== "poster.jpg").length };
  }

  it("writes the first sampled frame at or after the time, at its own width, beside the rest", async () => {
    const { path, n, jpegs } = await run(4.5, "poster-red");
    expect(jpegs).toBe(n);
    expect(isJpeg(readFileSync(path))).toBe(true);
    expect(await imageDimensions(path)).toEqual([200, 150]);
    // 4.5 s → the keyframe at 6 s, inside the red shot (4–8 s).
    const p = Bun.spawn(
      [bins.ffmpeg, "-v", "error", "-i", path, "-vf", "scale=8:8", "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"],
      { stdout: "pipe" },
    );
    const [r, g, b] = meanRgb(new Uint8Array(await new Response(p.stdout).arrayBuffer()));
    expect(r).toBeGreaterThan(200);
    expect(g + b).toBeLessThan(80);
  });

  it("HDR, rotated and anamorphic video: thumbnails and poster keep the display shape (HDR tone-mapped)", async () => {
    for (const [name, hdr, thumb, poster] of [
      ["hdr", true, [320, 180], [640, 360]],
      ["rotated", false, [320, 640], [640, 1280]],
      ["anamorphic", false, [320, 240], [640, 480]],
    ] as const) {
      const dir = join(tmp, `shape-${name}`);
      mkdirSync(dir);
      const stream = sampleFrames(bins, await mediaFixture(name), {
        keyframesOnly: false,
        hdr,
        jpegs: { dir, width: 320 },
        poster: { path: join(dir, "poster.jpg"), atSecs: 0, width: 640 },
      });
      for await (const _ of stream);
      expect(await imageDimensions(join(dir, "00000000.jpg")), name).toEqual([...thumb]);
      expect(await imageDimensions(join(dir, "poster.jpg")), name).toEqual([...poster]);
    }
  });

  it("writes nothing when no frame comes at or after the time (the caller falls back to a seek)", async () => {
    const { path, n } = await run(99, "poster-none");
    expect(n).toBe(10);
    expect(existsSync(path)).toBe(false);
  });
});

describe("keyframe mode decision", () => {
  it("packet flags give the keyframe times a keyframe decode gives, at a fraction of the cost", async () => {
    const file = await mediaFixture("longCuts");
    const [packets, decoded] = await Promise.all([
      readKeyframeTimes(bins, file, { method: "packets" }),
      readKeyframeTimes(bins, file),
    ]);
    expect(packets).toEqual(decoded);
    expect(packets.length).toBe(10);
    const r = await keyframesCloseEnough(bins, file, { durationSecs: LONG_CUTS.durationSecs, maxGapSecs: 2.5 });
    expect(r).toMatchObject({ ok: true, method: "packets" });
    expect(r.spacing.maxGapSecs).toBeCloseTo(2, 6);
  });

  it("asks the decoder when packets show a long gap (and the answer stands)", async () => {
    const file = await mediaFixture("colors");
    const r = await keyframesCloseEnough(bins, file, { durationSecs: COLORS.durationSecs, maxGapSecs: 2 });
    expect(r).toMatchObject({ ok: false, method: "decode" });
    // Times already read beside the probe are used instead of a second packet scan.
    const again = await keyframesCloseEnough(bins, file, {
      durationSecs: COLORS.durationSecs,
      maxGapSecs: 3,
      packetTimes: r.spacing.keyframeTimes,
    });
    expect(again).toMatchObject({ ok: true, method: "packets" });
  });
});
