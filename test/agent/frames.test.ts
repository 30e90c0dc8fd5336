import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FrameGrabber, jpegSize } from "../../src/agent/frames.ts";
import { ffmpeg, imageDimensions, isJpeg, mediaBins, mediaFixture, meanRgb, nearestColour } from "../helpers/media.ts";
import { jpegDimensions } from "./setup.ts";
import { tempDir } from "../helpers/temp.ts";

/** get_frame's decoder on generated media: size cap, display geometry, HDR, the last frame. */
const bins = mediaBins();
const grab = new FrameGrabber(bins);
const ACCOUNT = "usr_frames";
const dir = tempDir("vsearch-frames-");

/** Decodes a JPEG to RGB at w×h with ffmpeg. */
async function rgbOf(jpeg: Uint8Array, w: number, h: number): Promise<Uint8Array> {
  const path = join(dir, `f-${Math.random().toString(36).slice(2)}.jpg`);
  writeFileSync(path, jpeg);
  const out = `${path}.rgb`;
  await ffmpeg(["-y", "-i", path, "-vf", `scale=${w}:${h}`, "-f", "rawvideo", "-pix_fmt", "rgb24", out]);
  return new Uint8Array(await Bun.file(out).arrayBuffer());
}

describe("FrameGrabber", () => {
  it("fits a 4K frame in 768 × 768 keeping 16:9; the SOF parser agrees with ffprobe", async () => {
    const jpeg = await grab.frame(ACCOUNT, await mediaFixture("uhd"), 0.5, 768);
    expect(isJpeg(jpeg)).toBe(true);
    expect(jpegSize(jpeg)).toEqual({ width: 768, height: 432 });
    expect(jpegDimensions(jpeg)).toEqual({ width: 768, height: 432 });
    const path = join(dir, "uhd.jpg");
    writeFileSync(path, jpeg);
    expect(await imageDimensions(path)).toEqual([768, 432]);
  });

  it("never enlarges; applies rotation and square pixels like the thumbnails", async () => {
    expect(jpegSize(await grab.frame(ACCOUNT, await mediaFixture("short"), 0.2, 768))).toEqual({
      width: 320,
      height: 240,
    });
    // 160×240 stored with 2:1 pixels is shown 320×240.
    expect(jpegSize(await grab.frame(ACCOUNT, await mediaFixture("anamorphic"), 0.2, 768))).toEqual({
      width: 320,
      height: 240,
    });
    // 320×160 (red over blue) tagged rotate=90 is shown 160×320, red and blue side by side.
    const rotated = await grab.frame(ACCOUNT, await mediaFixture("rotated"), 0.5, 768);
    expect(jpegSize(rotated)).toEqual({ width: 160, height: 320 });
    const rgb = await rgbOf(rotated, 16, 32);
    const at = (x: number, y: number) => [...rgb.subarray((y * 16 + x) * 3, (y * 16 + x) * 3 + 3)];
    const colour = (p: number[]) =>
      nearestColour(p, [
        [255, 0, 0],
        [0, 0, 255],
      ]);
    expect(colour(at(2, 16))).not.toBe(colour(at(13, 16)));
    expect(colour(at(2, 2))).toBe(colour(at(2, 29)));
  });

  it("tone-maps an HDR source (found by probing) to SDR: other pixels, same even size", async () => {
    const hdr = await mediaFixture("hdr");
    const auto = await grab.frame(ACCOUNT, hdr, 0.5, 768);
    const plain = await grab.frame(ACCOUNT, hdr, 0.5, 768, { hdr: false });
    expect(jpegSize(auto)).toEqual({ width: 640, height: 360 });
    expect(jpegSize(plain)).toEqual({ width: 640, height: 360 });
    const [a, p] = [meanRgb(await rgbOf(auto, 32, 18)), meanRgb(await rgbOf(plain, 32, 18))];
    expect(Math.abs(a[0] - p[0]) + Math.abs(a[1] - p[1]) + Math.abs(a[2] - p[2])).toBeGreaterThan(15);
  });

  it("a time in the last frame's span still gives a frame; thumbnails wider than 320 are shrunk, narrower ones kept", async () => {
    const short = await mediaFixture("short"); // 0.5 s
    expect(isJpeg(await grab.frame(ACCOUNT, short, 0.5, 768))).toBe(true);
    const wide = await grab.frame(ACCOUNT, await mediaFixture("uhd"), 0.5, 768);
    const path = join(dir, "wide.jpg");
    writeFileSync(path, wide);
    const fitted = await grab.fitWidth(ACCOUNT, wide, path, 320);
    expect(jpegSize(fitted!)).toEqual({ width: 320, height: 180 });
    const small = await grab.frame(ACCOUNT, short, 0.1, 200);
    expect(await grab.fitWidth(ACCOUNT, small, path, 320)).toBe(small);
    expect(await grab.fitWidth(ACCOUNT, new Uint8Array([1, 2, 3]), path, 320)).toBeNull();
  });
});
