import { describe, expect, it } from "vitest";
import { dropNearDuplicates, lumaSignature, signatureDistance, type DedupeFrame } from "../../src/media/dedupe.ts";
import { sampleFrames } from "../../src/media/frames.ts";
import { mediaBins, mediaFixture, STATIC } from "../helpers/media.ts";

const SIZE = 32;

function solid(timestamp: number, grey: number, forced = false): DedupeFrame {
  return { timestamp, rgb: new Uint8Array(SIZE * SIZE * 3).fill(grey), forced };
}

async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const i of items) yield i;
}

async function keptTimes(frames: DedupeFrame[], opts = {}): Promise<number[]> {
  const out: number[] = [];
  for await (const f of dropNearDuplicates(from(frames), opts)) out.push(f.timestamp);
  return out;
}

describe("lumaSignature / signatureDistance", () => {
  it("is 0 for identical frames and the grey-level difference for solid frames", () => {
    const a = lumaSignature(solid(0, 100).rgb);
    expect(a.length).toBe(256);
    expect(signatureDistance(a, lumaSignature(solid(0, 100).rgb))).toBe(0);
    expect(signatureDistance(a, lumaSignature(solid(0, 110).rgb))).toBeCloseTo(10, 0);
  });

  it("handles frames that are not square or not a multiple of 16 wide", () => {
    const rgb = new Uint8Array(37 * 23 * 3).fill(50);
    const sig = lumaSignature(rgb, 37);
    expect(Array.from(sig).every((v) => Math.abs(v - 50) < 1)).toBe(true);
    expect(() => lumaSignature(new Uint8Array(10), 3)).toThrow(RangeError);
  });

  it("sees a local change that a global mean would miss", () => {
    const a = solid(0, 128).rgb;
    const b = a.slice();
    // Swap brightness between the left and right halves: same mean, different picture.
    for (let y = 0; y < SIZE; y++)
      for (let x = 0; x < SIZE; x++) for (let c = 0; c < 3; c++) b[(y * SIZE + x) * 3 + c] = x < SIZE / 2 ? 88 : 168;
    expect(signatureDistance(lumaSignature(a), lumaSignature(b))).toBeGreaterThan(30);
  });
});

describe("dropNearDuplicates", () => {
  it("drops frames nearly identical to the last kept one, keeps changes", async () => {
    const frames = [solid(0, 100), solid(1, 101), solid(2, 100), solid(3, 140), solid(3.5, 141), solid(4, 100)];
    expect(await keptTimes(frames, { minDiff: 3, maxGapSecs: 100 })).toEqual([0, 3, 4]);
  });

  it("compares with the last kept frame, so a slow drift is still caught", async () => {
    // +2 per second: each step is under minDiff 3, but the drift from the last kept frame is not.
    const frames = [0, 1, 2, 3, 4].map((t) => solid(t, 100 + 2 * t));
    expect(await keptTimes(frames, { minDiff: 3, maxGapSecs: 100 })).toEqual([0, 2, 4]);
  });

  it("always keeps at least one frame every maxGapSecs", async () => {
    const frames = Array.from({ length: 21 }, (_, t) => solid(t * 0.5, 100)); // 10 s of the same picture
    const kept = await keptTimes(frames, { minDiff: 3, maxGapSecs: 4 });
    expect(kept).toEqual([0, 4, 8]);
    for (let i = 1; i < kept.length; i++) expect(kept[i] - kept[i - 1]).toBeLessThanOrEqual(4);
  });

  it("always keeps shot-boundary (forced) frames and counts what it dropped", async () => {
    const frames = [solid(0, 100), solid(1, 100, true), solid(2, 100), solid(3, 100, true)];
    const stream = dropNearDuplicates(from(frames), { minDiff: 3, maxGapSecs: 100 });
    const kept: number[] = [];
    for await (const f of stream) kept.push(f.timestamp);
    expect(kept).toEqual([0, 1, 3]);
    expect(stream.stats).toEqual({ kept: 3, dropped: 1 });
  });

  it("is a streaming transform: it pulls one frame at a time", async () => {
    let pulled = 0;
    async function* source() {
      for (let t = 0; t < 100; t++) {
        pulled++;
        yield solid(t, t % 2 ? 0 : 255);
      }
    }
    for await (const f of dropNearDuplicates(source())) {
      expect(f.timestamp).toBe(0);
      break;
    }
    expect(pulled).toBe(1);
  });

  it("on real frames: a static shot is thinned to the cadence, the cut frame is kept", async () => {
    const bins = mediaBins();
    const file = await mediaFixture("static");
    const sample = () =>
      sampleFrames(bins, file, { size: 32, keyframesOnly: false, extraTimestamps: [STATIC.cutSecs] });
    // Grey 0–9 s, green 9–12 s, one frame a second: 0..11 with 9 forced.
    const kept: number[] = [];
    for await (const f of dropNearDuplicates(sample(), { maxGapSecs: 4 })) kept.push(f.timestamp);
    expect(kept).toEqual([0, 4, 8, 9]);
    // Without the forced flag only the cadence and the metric decide; the cut is still a big change.
    const unforced = (async function* () {
      for await (const f of sample()) yield { ...f, forced: false };
    })();
    const kept2: number[] = [];
    for await (const f of dropNearDuplicates(unforced, { maxGapSecs: 4, minDiff: Infinity })) kept2.push(f.timestamp);
    expect(kept2).toEqual([0, 4, 8]);
  });
});
