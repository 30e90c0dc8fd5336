/**
 * The OCR stage's decode (src/media/text-frames.ts) with the frame decode's shortcuts: the same
 * skip decision (decode.ts fullDecodeSkip) and decoder arguments. What OCR reads must not change:
 * every gray picture the skip decode still gives is bit-identical to a plain decode's at the same
 * timestamp; the 1 s grid loses no sample (each is at most a few pictures later); and each shot
 * start the frame decode found with the same skip (the OCR stage's extra timestamps) is a picture
 * the skip decode gives, so no shot's first frame is lost.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fullDecodeSkip, type DecodeSkip } from "../../src/media/decode.ts";
import { sampleFrames } from "../../src/media/frames.ts";
import { sampleTextFrames, type TextFrame } from "../../src/media/text-frames.ts";
import { ffmpeg, mediaBins } from "../helpers/media.ts";

const bins = mediaBins();
const tmp = mkdtempSync(join(tmpdir(), "vsearch-text-skip-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// 9 s, 25 fps, one keyframe (long GOP), hard cuts at 3 and 6 s; drawn text-like detail (testsrc2
// has digits) moving. veryfast writes ref=1 (bidir is exact), the default preset ref=3 (noref).
const files = { ref1: join(tmp, "ref1.mp4"), ref3: join(tmp, "ref3.mp4") };
beforeAll(async () => {
  const seg = (src: string, extra = "") => ["-f", "lavfi", "-i", `${src}=s=320x240:r=25:d=3${extra}`];
  const common = [
    ...seg("testsrc2"),
    ...seg("smptebars"),
    ...seg("testsrc2", ",negate"),
    "-filter_complex",
    "[0:v][1:v][2:v]concat=n=3:v=1:a=0,format=yuv420p[v]",
    "-map",
    "[v]",
    "-g",
    "250",
    "-keyint_min",
    "250",
    "-sc_threshold",
    "0",
  ];
  await ffmpeg([...common, "-c:v", "libx264", "-preset", "veryfast", files.ref1]);
  await ffmpeg([...common, "-c:v", "libx264", files.ref3]);
}, 120_000);

const text = (file: string, skipFrames: DecodeSkip, everySecs: number, extraTimestamps: number[] = []) =>
  sampleTextFrames(bins, file, {
    displayWidth: 320,
    displayHeight: 240,
    everySecs,
    extraTimestamps,
    keyframesOnly: false,
    skipFrames,
  });
async function all(it: AsyncIterable<TextFrame>): Promise<TextFrame[]> {
  const out: TextFrame[] = [];
  for await (const f of it) out.push(f);
  return out;
}
const ms = (t: number) => Math.round(t * 1000);

describe("OCR frames decoded with the frame decode's skip", () => {
  for (const [name, expected] of [
    ["ref1", "bidir"],
    ["ref3", "noref"],
  ] as const) {
    it(`${name}: fullDecodeSkip says ${expected}; every picture it decodes is bit-exact, the grid and the shot starts are all there`, async () => {
      const file = files[name];
      const skip = await fullDecodeSkip(bins, file, "h264");
      expect(skip).toBe(expected);

      // Every decoded picture (a grid finer than the frame rate), plain and with the skip.
      const plain = new Map((await all(text(file, "none", 0.001))).map((f) => [ms(f.timestamp), f.pixels]));
      const skipped = await all(text(file, skip, 0.001));
      expect(plain.size).toBe(225);
      expect(skipped.length).toBeLessThan(plain.size);
      for (const f of skipped) {
        const ref = plain.get(ms(f.timestamp));
        expect(ref, `${name} t=${f.timestamp}`).toBeDefined();
        expect(Buffer.from(f.pixels).equals(Buffer.from(ref!)), `${name} t=${f.timestamp}`).toBe(true);
      }

      // The cuts as the pipeline gets them: from the frame decode with the same skip.
      const frames = sampleFrames(bins, file, { size: 32, keyframesOnly: false, skipFrames: skip, cuts: {} });
      for await (const _ of frames);
      const cuts = frames.stats.cuts!;
      expect(cuts.map((c) => Math.round(c))).toEqual([3, 6]);

      // The OCR sampling: 1 s grid plus the shot starts, plain and with the skip.
      const gridPlain = await all(text(file, "none", 1, cuts));
      const gridSkip = await all(text(file, skip, 1, cuts));
      // Each sample of the plain decode has its counterpart at most 3 pictures later (x264's 3
      // B-frames: 0.12 s at 25 fps); a grid point and a shot start may then share a picture (the
      // skip decode finds the cut at 6 s on the first picture it decodes after it, 6.04 s).
      for (const p of gridPlain) {
        expect(
          gridSkip.some((f) => f.timestamp >= p.timestamp - 1e-6 && f.timestamp - p.timestamp <= 3 / 25 + 1e-6),
          `${name} sample at ${p.timestamp}`,
        ).toBe(true);
      }
      expect(gridSkip.length).toBeGreaterThanOrEqual(gridPlain.length - cuts.length);
      for (const f of gridSkip)
        expect(Buffer.from(f.pixels).equals(Buffer.from(plain.get(ms(f.timestamp))!))).toBe(true);
      // Each shot start is sampled at exactly its own time, and marked as one.
      for (const c of cuts)
        expect(
          gridSkip.some((f) => f.forced && Math.abs(f.timestamp - c) < 1e-3),
          `cut ${c}`,
        ).toBe(true);
    }, 90_000);
  }
});
