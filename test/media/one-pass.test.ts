/**
 * The one-pass full decode (frames.ts `cuts`): on video whose keyframes are far apart, the frame
 * sampler and ffmpeg's scene analysis share one decode (a `split` in one filtergraph), and the cuts
 * are the ones a separate detectShotBoundaries run finds.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleFrames, type SampledFrame } from "../../src/media/frames.ts";
import { readKeyframeTimes } from "../../src/media/select.ts";
import { detectShotBoundaries } from "../../src/media/shots.ts";
import { writeThumbnail } from "../../src/media/thumbnails.ts";
import { ffmpeg, mediaBins } from "../helpers/media.ts";

const bins = mediaBins();
const tmp = mkdtempSync(join(tmpdir(), "vsearch-one-pass-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * 13 s, 25 fps, keyframes 10 s apart (x264 with its B-frames, no keyframe at the cuts: -g 250
 * -sc_threshold 0). Cuts at 3, 6, 9.2 and 9.8: the 0.6 s blue shot lies between two points of a
 * 1 s grid.
 */
const LONG_GOP = { cuts: [3, 6, 9.2, 9.8], durationSecs: 13, shortShot: [9.2, 9.8] } as const;
let file: string;

beforeAll(async () => {
  file = join(tmp, "long-gop.mp4");
  const seg = (src: string, d: number, extra = "") => [
    "-f",
    "lavfi",
    "-i",
    `${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=${d}${extra}`,
  ];
  await ffmpeg([
    ...seg("testsrc2", 3),
    ...seg("color=c=red", 3),
    ...seg("smptebars", 3.2),
    ...seg("color=c=blue", 0.6),
    ...seg("testsrc2", 3.2, ",negate"),
    "-filter_complex",
    "[0:v][1:v][2:v][3:v][4:v]concat=n=5:v=1:a=0,format=yuv420p[v]",
    "-map",
    "[v]",
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-pix_fmt",
    "yuv420p",
    "-g",
    "250",
    "-keyint_min",
    "250",
    "-sc_threshold",
    "0",
    file,
  ]);
}, 60_000);

async function collect(stream: AsyncIterable<SampledFrame>): Promise<SampledFrame[]> {
  const out: SampledFrame[] = [];
  for await (const f of stream) out.push(f);
  return out;
}

describe("one decode for frames and cuts (full decode)", () => {
  it("the clip really has keyframes 250 frames apart, none at the cuts", async () => {
    expect(await readKeyframeTimes(bins, file, { method: "packets" })).toEqual([0, 10]);
  });

  it("finds the cuts detectShotBoundaries finds, while sampling the 1 s grid once", async () => {
    const separate = await detectShotBoundaries(bins, file, { skipFrames: "noref" });
    const plain = await detectShotBoundaries(bins, file);
    const stream = sampleFrames(bins, file, {
      size: 32,
      everySecs: 1,
      keyframesOnly: false,
      cuts: {},
      skipFrames: "noref",
    });
    expect(stream.stats.cuts).toBeNull(); // final only once the stream has ended
    const frames = await collect(stream);
    expect(stream.stats.mode).toBe("all");
    expect(stream.stats.cuts).toEqual(separate);
    // Skipping non-reference pictures moves a cut by at most the pictures skipped (here none).
    expect(separate.length).toBe(plain.length);
    separate.forEach((c, i) => expect(Math.abs(c - plain[i])).toBeLessThanOrEqual(0.08 + 1e-6));
    LONG_GOP.cuts.forEach((c, i) => expect(Math.abs(separate[i] - c)).toBeLessThanOrEqual(0.08 + 1e-6));
    // One frame per 1 s bucket, in order: the grid is sampled once.
    expect(frames.map((f) => Math.floor(f.timestamp))).toEqual(
      Array.from({ length: LONG_GOP.durationSecs }, (_, i) => i),
    );
    expect(frames.every((f, i) => f.index === i)).toBe(true);
  }, 60_000);

  it("a shot shorter than the grid gets no frame of its own at 1 s; a 0.5 s grid gives it one", async () => {
    const [a, b] = LONG_GOP.shortShot;
    const inShort = (fs: SampledFrame[]) => fs.filter((f) => f.timestamp >= a && f.timestamp < b);
    const coarse = sampleFrames(bins, file, {
      size: 32,
      everySecs: 1,
      keyframesOnly: false,
      cuts: {},
      skipFrames: "noref",
    });
    expect(inShort(await collect(coarse))).toHaveLength(0);
    expect(coarse.stats.cuts).toHaveLength(4); // the shot itself is still found
    const fine = sampleFrames(bins, file, {
      size: 32,
      everySecs: 0.5,
      keyframesOnly: false,
      cuts: {},
      skipFrames: "noref",
    });
    const own = inShort(await collect(fine));
    expect(own.length).toBeGreaterThanOrEqual(1);
    // ...and it shows the blue shot.
    const [r, g, bl] = [0, 1, 2].map(
      (c) => own[0].rgb.filter((_, i) => i % 3 === c).reduce((s, v) => s + v, 0) / (32 * 32),
    );
    expect(bl).toBeGreaterThan(150);
    expect(r + g).toBeLessThan(60);
  }, 60_000);

  it("with thumbnails and a poster (the pipeline's graph): same cuts, a JPEG per frame", async () => {
    const dir = join(tmp, "jpegs");
    mkdirSync(dir);
    const stream = sampleFrames(bins, file, {
      size: 32,
      keyframesOnly: false,
      cuts: {},
      skipFrames: "noref",
      jpegs: { dir, width: 160 },
      poster: { path: join(dir, "poster.jpg"), atSecs: 1.3, width: 200 },
    });
    const frames = await collect(stream);
    expect(stream.stats.cuts).toEqual(await detectShotBoundaries(bins, file, { skipFrames: "noref" }));
    expect(readdirSync(dir).sort()).toEqual(
      [...frames.map((f) => `${String(f.index).padStart(8, "0")}.jpg`), "poster.jpg"].sort(),
    );
  }, 60_000);

  it("keyframe mode leaves the cuts to the caller (scored in JS), and a bad threshold is refused", async () => {
    const stream = sampleFrames(bins, file, { size: 32, keyframesOnly: true, cuts: {} });
    await collect(stream);
    expect(stream.stats.cuts).toBeNull();
    await expect(collect(sampleFrames(bins, file, { keyframesOnly: false, cuts: { threshold: 1.5 } }))).rejects.toThrow(
      /threshold/,
    );
  }, 60_000);

  it("a noref seek gives the thumbnail of a shot the grid missed, and the same picture as a plain seek", async () => {
    const avg = async (jpeg: string) => {
      const p = Bun.spawn(
        [
          bins.ffmpeg,
          "-v",
          "error",
          "-i",
          jpeg,
          "-vf",
          "scale=1:1:flags=area",
          "-f",
          "rawvideo",
          "-pix_fmt",
          "rgb24",
          "pipe:1",
        ],
        { stdout: "pipe" },
      );
      return [...new Uint8Array(await new Response(p.stdout).arrayBuffer())];
    };
    const cut = (await detectShotBoundaries(bins, file, { skipFrames: "noref" }))[2]; // the blue shot's start
    expect(cut).toBeCloseTo(LONG_GOP.shortShot[0], 1);
    const [a, b] = [join(tmp, "noref.jpg"), join(tmp, "plain.jpg")];
    await writeThumbnail(bins, file, cut, a, { skipFrames: "noref" });
    await writeThumbnail(bins, file, cut, b);
    const [ca, cb] = [await avg(a), await avg(b)];
    expect(ca[2]).toBeGreaterThan(150); // blue
    expect(ca[0] + ca[1]).toBeLessThan(80);
    ca.forEach((v, i) => expect(Math.abs(v - cb[i])).toBeLessThanOrEqual(2));
  }, 60_000);
});
