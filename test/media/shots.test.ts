import { describe, expect, it } from "vitest";
import { detectShotBoundaries, filterBoundaries, shotsFromBoundaries } from "../../src/media/shots.ts";
import { COLORS, CUTS, mediaBins, mediaFixture } from "../helpers/media.ts";

const bins = mediaBins();

/** Every expected boundary is matched by exactly one found boundary within `tol`, and nothing else was found. */
function expectBoundaries(found: number[], expected: readonly number[], tol: number) {
  expect(found).toHaveLength(expected.length);
  expected.forEach((t, i) => expect(Math.abs(found[i] - t)).toBeLessThanOrEqual(tol));
}

describe("detectShotBoundaries", () => {
  it("finds the hard cuts of the generated clip within one frame", async () => {
    const found = await detectShotBoundaries(bins, await mediaFixture("cuts"));
    expectBoundaries(found, CUTS.boundaries, 1 / CUTS.fps + 1e-6);
    expect([...found].sort((a, b) => a - b)).toEqual(found);
  });

  it("gives the same times for the same video in MPEG-TS (start offset removed)", async () => {
    const found = await detectShotBoundaries(bins, await mediaFixture("cutsTs"));
    expectBoundaries(found, CUTS.boundaries, 1 / CUTS.fps + 1e-6);
  });

  it("finds every colour change of the 23.976 fps clip at its true frame time", async () => {
    const found = await detectShotBoundaries(bins, await mediaFixture("colors"));
    const expected = Array.from(
      { length: COLORS.palette.length - 1 },
      (_, i) => ((i + 1) * COLORS.framesPerSegment) / COLORS.fps,
    );
    expectBoundaries(found, expected, 1e-3);
  });

  it("in keyframe-only mode sees only cuts that fall on keyframes (the documented trade-off)", async () => {
    // Keyframes every 60 frames (2.5 s) while the colour changes every 24 frames: only changes
    // visible between consecutive keyframes count, and they are stamped with the keyframe's time.
    const found = await detectShotBoundaries(bins, await mediaFixture("colors"), { keyframesOnly: true });
    const keyframeTimes = [1, 2, 3].map((k) => (k * COLORS.gop) / COLORS.fps);
    expect(found.length).toBeGreaterThan(0);
    expect(found.length).toBeLessThan(COLORS.palette.length - 1);
    for (const t of found) expect(keyframeTimes.some((k) => Math.abs(k - t) < 1e-3)).toBe(true);
  });

  it("applies the threshold (a tiny one turns motion into cuts); minShotSecs merges close cuts", async () => {
    const file = await mediaFixture("cuts");
    // Hard cuts score 1.0 (ffmpeg clips the score); the moving testsrc2 frames score ~0.005–0.02.
    const twitchy = await detectShotBoundaries(bins, file, { threshold: 0.003, minShotSecs: 0 });
    expect(twitchy.length).toBeGreaterThan(20);
    for (const t of CUTS.boundaries) expect(twitchy.some((b) => Math.abs(b - t) < 1e-6)).toBe(true);
    // 3.6 → 5.6 → 6.8: with a 1.5 s minimum, 6.8 (1.2 s after 5.6) goes.
    const merged = await detectShotBoundaries(bins, file, { minShotSecs: 1.5 });
    expectBoundaries(merged, [2.0, 3.6, 5.6], 1 / CUTS.fps + 1e-6);
  });

  it("refuses a file without video with NO_VIDEO_STREAM", async () => {
    await expect(detectShotBoundaries(bins, await mediaFixture("audioM4a"))).rejects.toMatchObject({
      code: "NO_VIDEO_STREAM",
    });
  });

  it("reports an unreadable file as DECODE_FAILED", async () => {
    await expect(detectShotBoundaries(bins, await mediaFixture("truncated"))).rejects.toMatchObject({
      code: "DECODE_FAILED",
    });
  });

  it("stops a run that exceeds its time limit with TIMEOUT", async () => {
    // Decoding the 4K clip takes several hundred ms; 50 ms cannot be enough.
    await expect(detectShotBoundaries(bins, await mediaFixture("uhd"), { timeoutMs: 50 })).rejects.toMatchObject({
      code: "TIMEOUT",
    });
  });
});

describe("filterBoundaries", () => {
  it("sorts, drops non-positive times and enforces the minimum shot length from the start", () => {
    expect(filterBoundaries([5, 0, 0.2, 1, 1.3, 3, -1], 0.5)).toEqual([1, 3, 5]);
    expect(filterBoundaries([], 0.5)).toEqual([]);
    expect(filterBoundaries([0.1, 0.2], 0)).toEqual([0.1, 0.2]);
  });
});

describe("shotsFromBoundaries", () => {
  it("covers [0, duration] with contiguous shots", () => {
    expect(shotsFromBoundaries([2, 3.6], 8)).toEqual([
      { index: 0, start: 0, end: 2 },
      { index: 1, start: 2, end: 3.6 },
      { index: 2, start: 3.6, end: 8 },
    ]);
  });

  it("ignores duplicates and boundaries outside the video; no boundary is one shot", () => {
    expect(shotsFromBoundaries([3, 0, 3, 9, -1, 8], 8)).toEqual([
      { index: 0, start: 0, end: 3 },
      { index: 1, start: 3, end: 8 },
    ]);
    expect(shotsFromBoundaries([], 5)).toEqual([{ index: 0, start: 0, end: 5 }]);
    expect(shotsFromBoundaries([1], 0)).toEqual([]);
  });
});
