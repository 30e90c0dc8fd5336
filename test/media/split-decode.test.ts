/**
 * A full decode split over time into several ffmpeg processes (media/split-decode.ts) gives the
 * same frames, thumbnails, poster and cuts as one decode — cuts right at a seam included.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sampleFrames, type FrameStats, type SampledFrame } from "../../src/media/frames.ts";
import { decodeSkipArgs, readX264Options, x264ClosedGops, type DecodeSkip } from "../../src/media/decode.ts";
import { keyframesCloseEnough, readKeyframeTimes } from "../../src/media/select.ts";
import { joinFirstFrameKept, planSegments, readKeyframesFromStart } from "../../src/media/split-decode.ts";
import { jpegCodecArgs, thumbnailFilters } from "../../src/media/filters.ts";
import { writeThumbnails } from "../../src/media/thumbnails.ts";
import { ffmpeg, mediaBins } from "../helpers/media.ts";

const bins = mediaBins();
const tmp = mkdtempSync(join(tmpdir(), "vsearch-split-decode-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * 24 s, 25 fps, no keyframe but the forced ones (0, 8.36, 15.72: x264 -sc_threshold 0). Cuts at
 * 4.4, 8.36 (on a keyframe: a seam of a 3-process split), 12 and 14. 14–18 is a strobe (red and
 * blue on alternate pictures) with the other seam's keyframe inside it: every picture differs
 * hugely from the one before, so only the |Δ difference| term of ffmpeg's scene score keeps it
 * from being a cut on every picture — the state a range starting at that seam lacks for its
 * second picture. (The same term hides the cut from the strobe to blue at 18: no decode finds it.)
 */
const CLIP = { durationSecs: 24, keyframes: [0, 8.36, 15.72], cuts: [4.4, 8.36, 12, 14] } as const;
let file: string;

beforeAll(async () => {
  file = join(tmp, "seams.mp4");
  const seg = (src: string, d: number, extra = "") => [
    "-f",
    "lavfi",
    "-i",
    `${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=${d}${extra}`,
  ];
  await ffmpeg([
    ...seg("testsrc2", 4.4),
    ...seg("color=c=red", 3.96),
    ...seg("smptebars", 3.64),
    ...seg("testsrc2", 2, ",negate"),
    ...seg("color=c=black", 4, ",format=rgb24,geq=r='255*mod(N\\,2)':g=0:b='255*(1-mod(N\\,2))'"),
    ...seg("color=c=blue", 6),
    "-filter_complex",
    "[0:v][1:v][2:v][3:v][4:v][5:v]concat=n=6:v=1:a=0,format=yuv420p[v]",
    "-map",
    "[v]",
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-pix_fmt",
    "yuv420p",
    "-g",
    "1000",
    "-sc_threshold",
    "0",
    "-force_key_frames",
    CLIP.keyframes.join(","),
    file,
  ]);
}, 60_000);

async function decode(skipFrames: DecodeSkip, processes: number, extraTimestamps: number[] = []) {
  const dir = join(tmp, `${skipFrames}-${processes}-${extraTimestamps.length}`);
  mkdirSync(dir);
  const stream = sampleFrames(bins, file, {
    size: 32,
    everySecs: 1,
    keyframesOnly: false,
    cuts: {},
    skipFrames,
    durationSecs: CLIP.durationSecs,
    extraTimestamps,
    jpegs: { dir, width: 96 },
    poster: { path: join(dir, "poster.jpg"), atSecs: 2.4, width: 128 },
    split: processes > 1 ? { processes } : undefined,
  });
  const frames: SampledFrame[] = [];
  for await (const f of stream) frames.push(f);
  const jpeg = (f: SampledFrame) => readFileSync(join(dir, `${String(f.index).padStart(8, "0")}.jpg`));
  return { frames, stats: stream.stats as FrameStats, dir, jpeg };
}

describe("split decode", () => {
  it("the clip has its keyframes where the seams should go", async () => {
    expect(await readKeyframeTimes(bins, file, { method: "packets" })).toEqual([...CLIP.keyframes]);
  });

  for (const skip of ["none", "noref"] as const) {
    it(`three processes give what one gives (skip ${skip}): frames, thumbnails, poster, cuts`, async () => {
      const extras = [8.38, 15.74, 20.5];
      const one = await decode(skip, 1, extras);
      const split = await decode(skip, 3, extras);
      expect(one.stats.seams).toBeUndefined();
      expect(split.stats.seams).toEqual([8.36, 15.72]);
      expect(split.frames.map((f) => [f.timestamp, f.keyframe, f.forced])).toEqual(
        one.frames.map((f) => [f.timestamp, f.keyframe, f.forced]),
      );
      split.frames.forEach((f, i) => {
        expect(Buffer.from(f.rgb).equals(Buffer.from(one.frames[i].rgb))).toBe(true);
        expect(split.jpeg(f).equals(one.jpeg(one.frames[i]))).toBe(true);
      });
      // Indices stay unique and increasing (a range numbers from its own base), each with its JPEG,
      // and nothing else is left in the folder.
      expect(split.frames.every((f, i) => i === 0 || f.index > split.frames[i - 1].index)).toBe(true);
      expect(readdirSync(split.dir).sort()).toEqual(
        [...split.frames.map((f) => `${String(f.index).padStart(8, "0")}.jpg`), "poster.jpg"].sort(),
      );
      expect(readFileSync(join(split.dir, "poster.jpg")).equals(readFileSync(join(one.dir, "poster.jpg")))).toBe(true);
      // The cuts: the same list, the one on a seam and the one just after the other seam found
      // once, and no cut invented in the strobe.
      expect(split.stats.cuts).toEqual(one.stats.cuts);
      // (With noref the strobe's decoded pictures lose their rhythm at the IDR, 15.72, which one
      // decode scores as a cut too.)
      const expected = skip === "none" ? CLIP.cuts : [...CLIP.cuts, 15.72];
      expect(one.stats.cuts).toHaveLength(expected.length);
      expected.forEach((c, i) => expect(Math.abs(one.stats.cuts![i] - c)).toBeLessThanOrEqual(0.08 + 1e-6));
      expect(split.stats.framesEmitted).toBe(one.stats.framesEmitted);
      expect(split.stats.decodeErrors).toBe(0);
    }, 60_000);
  }

  it("x264's closed GOPs let the packet flags decide a long GOP without the decode-based scan", async () => {
    expect(x264ClosedGops(await readX264Options(bins, file))).toBe(true);
    expect(x264ClosedGops({ open_gop: "1" })).toBe(false);
    expect(x264ClosedGops(null)).toBe(false);
    const trusted = await keyframesCloseEnough(bins, file, {
      durationSecs: CLIP.durationSecs,
      maxGapSecs: 2.5,
      packetsFlagEveryKeyframe: async () => true,
    });
    const checked = await keyframesCloseEnough(bins, file, { durationSecs: CLIP.durationSecs, maxGapSecs: 2.5 });
    expect([trusted.ok, trusted.method]).toEqual([false, "packets"]);
    expect([checked.ok, checked.method]).toEqual([false, "decode"]);
    expect(trusted.spacing.keyframeTimes).toEqual(checked.spacing.keyframeTimes);
  }, 60_000);

  it("thumbnails seek from the keyframe at or before their time and show the picture an accurate seek with the same skips shows", async () => {
    // (A window reads from the keyframe its start seeks to: 7 s lands on 0.)
    expect(await readKeyframesFromStart(bins, file, "7%9,14%16")).toEqual([0, 8.36, 15.72]);
    const times = [8.36, 12.5, 15.68, 15.72, 20.04];
    const out = times.map((t) => join(tmp, `thumb-${t}.jpg`));
    await writeThumbnails(
      bins,
      file,
      times.map((t, i) => ({ timestampSecs: t, outPath: out[i] })),
      { width: 96, skipFrames: "noref", seeksExactly: true },
    );
    for (const [i, t] of times.entries()) {
      const plain = join(tmp, `plain-${t}.jpg`);
      await ffmpeg([
        ...decodeSkipArgs("noref"),
        "-ss",
        t.toFixed(6),
        "-i",
        file,
        "-map",
        "0:v:0",
        "-vf",
        thumbnailFilters(96, false).join(","),
        "-frames:v",
        "1",
        ...jpegCodecArgs(),
        "-f",
        "image2",
        plain,
      ]);
      expect(readFileSync(out[i]).equals(readFileSync(plain)), String(t)).toBe(true);
    }
  }, 60_000);

  it("a short file, or one process, is decoded in one", async () => {
    const short = sampleFrames(bins, file, {
      size: 32,
      keyframesOnly: false,
      durationSecs: 15,
      split: { processes: 2 },
    });
    for await (const _ of short);
    expect(short.stats.seams).toBeUndefined();
  }, 60_000);
});

describe("planSegments", () => {
  const base = { durationSecs: 60, everySecs: 1, posterSecs: 6, extraCount: 0, split: { processes: 2 } };

  it("splits at the usable keyframe nearest each seam, numbering each range past the one before", () => {
    const ks = [0, 5, 8.266667, 10.1, 13.966667, 18.266667, 26.6, 27.466667, 35.333333, 45.066667, 57.233333];
    const segs = planSegments(ks, base)!;
    expect(segs.map((s) => [s.start, s.end])).toEqual([
      [null, 27.466667],
      [27.466667, null],
    ]);
    expect(segs[1].seekSecs).toBeCloseTo(27.866667, 5); // past the keyframe: the seek lands on it
    expect(segs[0].readSecs).toBeCloseTo(28.466667, 5); // and the range before reads past it
    expect(segs[1].indexBase).toBeGreaterThanOrEqual(29); // ≥ the frames [0, 27.47) can emit
    expect(planSegments(ks, { ...base, split: { processes: 3 } })!.map((s) => s.start)).toEqual([
      null,
      18.266667,
      35.333333,
    ]);
  });

  it("refuses keyframes on a grid line, near the poster, too close to the next keyframe or an end", () => {
    const only = (k: number, extra: Partial<typeof base> = {}, next = 56) =>
      planSegments([0, k, next], { ...base, ...extra });
    expect(only(30)).toBeNull(); // on a 1 s grid line
    expect(only(30.5)).not.toBeNull();
    expect(only(30.5, { posterSecs: 29 })).toBeNull();
    expect(planSegments([0, 30.5, 30.7], { ...base, durationSecs: 35 })).toBeNull(); // the seek could land on 30.7 (itself 4.3 s from the end)
    expect(only(57.5, {}, 59)).toBeNull(); // a 2.5 s range
    expect(planSegments([0, 30.5], { ...base, split: { processes: 1 } })).toBeNull();
    expect(planSegments([0, 9.5], { ...base, durationSecs: 19 })).toBeNull();
  });

  it("a long file gets ranges of at most ~2 minutes", () => {
    const ks = Array.from({ length: 700 }, (_, i) => i * 10.3 + 0.25);
    const segs = planSegments(ks, { ...base, durationSecs: 7200 })!;
    expect(segs.length).toBe(60);
    expect(Math.max(...segs.map((s) => (s.end ?? 7200) - (s.start ?? 0)))).toBeLessThan(130);
  });
});

describe("joinFirstFrameKept", () => {
  it("keeps a range's first frame exactly where one decode's select would have picked it", () => {
    expect(joinFirstFrameKept(27.47, null, 1, [])).toBe(true);
    expect(joinFirstFrameKept(27.47, 27.0, 1, [])).toBe(false); // same 1 s bucket as the last pick
    expect(joinFirstFrameKept(27.47, 26.93, 1, [])).toBe(true);
    expect(joinFirstFrameKept(27.47, 27.0, 1, [27.2])).toBe(true); // an extra time in between
    expect(joinFirstFrameKept(27.47, 27.0, 1, [26.9, 27.6])).toBe(false);
  });
});
