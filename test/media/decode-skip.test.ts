/**
 * Decoder shortcuts per codec (src/media/decode.ts): which codecs honour `-skip_frame noref`, that
 * every picture it still decodes is bit-identical to a plain decode with the same timestamp (no
 * drift, no re-timing), that "bidir" — faster — is exact only where x264 says ref=1 (where the
 * pipeline uses it), and that skipping the loop filter keeps the pictures and their timestamps but
 * not their pixels (the pipeline does that only as config frame_loop_filter allows, never for OCR).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodeSkipArgs,
  fullDecodeSkip,
  loopFilterFor,
  parseX264Options,
  readX264Options,
  type DecodeSkip,
  type LoopFilter,
} from "../../src/media/decode.ts";
import { sampleFrames } from "../../src/media/frames.ts";
import { ffmpeg, mediaBins } from "../helpers/media.ts";

const bins = mediaBins();
const tmp = mkdtempSync(join(tmpdir(), "vsearch-decode-skip-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** 2 s of moving test pattern at 25 fps (50 pictures), each codec with its B-frames on. */
const CODECS = {
  h264: ["h264.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p"]], // x264 defaults: 3 B-frames, b-pyramid
  h264Ref1: ["h264-ref1.mp4", ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]], // ref=1, still 3 B-frames
  hevc: [
    "hevc.mp4",
    ["-c:v", "libx265", "-preset", "veryfast", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"],
  ],
  mpeg4: ["mpeg4.avi", ["-c:v", "mpeg4", "-bf", "2"]],
  mpeg2: ["mpeg2.mpg", ["-c:v", "mpeg2video", "-bf", "2"]],
  vp9: ["vp9.webm", ["-c:v", "libvpx-vp9", "-deadline", "good", "-cpu-used", "8", "-b:v", "200k"]],
} as const;
type Codec = keyof typeof CODECS;
const files = {} as Record<Codec, string>;

beforeAll(async () => {
  for (const [name, [file, args]] of Object.entries(CODECS) as [Codec, (typeof CODECS)[Codec]][]) {
    files[name] = join(tmp, file);
    await ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2", ...args, files[name]]);
  }
}, 120_000);

/** Every decoded picture (a select grid finer than the frame rate), 32×32 RGB, by timestamp. */
async function decodeAll(
  file: string,
  skipFrames: DecodeSkip,
  loopFilter: LoopFilter = "exact",
): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  for await (const f of sampleFrames(bins, file, {
    size: 32,
    everySecs: 0.001,
    keyframesOnly: false,
    skipFrames,
    loopFilter,
  })) {
    out.set(Math.round(f.timestamp * 1000), f.rgb);
  }
  return out;
}

function differing(full: Map<number, Uint8Array>, part: Map<number, Uint8Array>): number {
  let n = 0;
  for (const [t, rgb] of part) if (!Buffer.from(rgb).equals(Buffer.from(full.get(t)!))) n++;
  return n;
}

describe("-skip_frame noref per codec", () => {
  // Pictures decoded with noref (of 50): fewer where the codec marks non-reference pictures.
  const expected: Record<Codec, "fewer" | "all"> = {
    h264: "fewer",
    h264Ref1: "fewer",
    hevc: "fewer",
    mpeg4: "fewer",
    mpeg2: "fewer",
    vp9: "all",
  };
  for (const codec of Object.keys(CODECS) as Codec[]) {
    it(`${codec}: ${expected[codec] === "fewer" ? "skips non-reference pictures" : "skips nothing"}; the rest are bit-exact at their own timestamps`, async () => {
      const full = await decodeAll(files[codec], "none");
      const noref = await decodeAll(files[codec], "noref");
      expect(full.size).toBe(50);
      if (expected[codec] === "fewer") {
        expect(noref.size).toBeLessThan(full.size);
        // Still dense enough for a 1 s grid and a neighbour-to-neighbour scene score.
        expect(noref.size).toBeGreaterThanOrEqual(15);
      } else expect(noref.size).toBe(full.size);
      // Every timestamp is one a plain decode also shows (nothing re-timed), and the pixels match.
      for (const t of noref.keys()) expect(full.has(t), `${codec} t=${t}ms`).toBe(true);
      expect(differing(full, noref)).toBe(0);
    }, 60_000);
  }

  it("bidir drops reference B-pictures too, so on x264's defaults the pictures it keeps drift", async () => {
    const full = await decodeAll(files.h264, "none");
    const noref = await decodeAll(files.h264, "noref");
    const bidir = await decodeAll(files.h264, "bidir");
    expect(bidir.size).toBeLessThan(noref.size);
    expect(differing(full, bidir)).toBeGreaterThan(0);
  }, 60_000);

  it("bidir is exact where x264 says ref=1 (veryfast), and fullDecodeSkip picks it only there", async () => {
    const full = await decodeAll(files.h264Ref1, "none");
    const bidir = await decodeAll(files.h264Ref1, "bidir");
    expect(bidir.size).toBeLessThan((await decodeAll(files.h264Ref1, "noref")).size);
    expect(differing(full, bidir)).toBe(0);
    expect((await readX264Options(bins, files.h264Ref1))?.ref).toBe("1");
    expect((await readX264Options(bins, files.h264))?.ref).toBe("3");
    expect(await readX264Options(bins, files.hevc)).toBeNull();
    expect(await fullDecodeSkip(bins, files.h264Ref1, "h264")).toBe("bidir");
    expect(await fullDecodeSkip(bins, files.h264, "h264")).toBe("noref");
    expect(await fullDecodeSkip(bins, files.hevc, "hevc")).toBe("noref");
    expect(await fullDecodeSkip(bins, files.mpeg4, "mpeg4")).toBe("noref");
    expect(await fullDecodeSkip(bins, join(tmp, "missing.mp4"), "h264")).toBe("noref");
  }, 60_000);

  it("without the loop filter the same pictures are decoded at the same timestamps, but they are not exact", async () => {
    // Not bit-exact (P pictures are predicted from unfiltered references); how far they drift
    // where it matters is measured by bench/loopfilter-drift.ts, not asserted here.
    for (const codec of ["h264", "h264Ref1", "hevc"] as const) {
      const skip = codec === "h264Ref1" ? "bidir" : "noref";
      const exact = await decodeAll(files[codec], skip);
      const unfiltered = await decodeAll(files[codec], skip, "skip");
      expect([...unfiltered.keys()], codec).toEqual([...exact.keys()]);
      expect(differing(exact, unfiltered), codec).toBeGreaterThan(0);
    }
  }, 60_000);

  it("the loop filter is skipped only when asked, and 'auto' asks from 720p up", () => {
    expect(decodeSkipArgs("bidir")).toEqual(["-skip_frame", "bidir", "-skip_loop_filter", "bidir"]);
    expect(decodeSkipArgs("noref", "skip")).toEqual(["-skip_frame", "noref", "-skip_loop_filter", "all"]);
    expect(decodeSkipArgs("none", "skip")).toEqual(["-skip_loop_filter", "all"]);
    expect(decodeSkipArgs("none")).toEqual([]);
    expect(loopFilterFor("auto", 1920, 1080)).toBe("skip");
    expect(loopFilterFor("auto", 720, 1280)).toBe("skip"); // portrait 720p
    expect(loopFilterFor("auto", 640, 360)).toBe("exact");
    expect(loopFilterFor("auto", null, null)).toBe("exact");
    expect(loopFilterFor("exact", 3840, 2160)).toBe("exact");
    expect(loopFilterFor("skip", 320, 240)).toBe("skip");
  });

  it("parses x264's SEI options and ignores anything else", () => {
    const sei = new TextEncoder().encode(
      "\x00\x00\x01\x06\x05x264 - core 157 - H.264/MPEG-4 AVC codec - options: cabac=1 ref=1 deblock=1:0:0 bframes=3\x00\x80",
    );
    expect(parseX264Options(sei)).toMatchObject({ cabac: "1", ref: "1", deblock: "1:0:0", bframes: "3" });
    expect(parseX264Options(new TextEncoder().encode("no encoder string here"))).toBeNull();
  });

  it("bidir's complaint about dropping a B-ref it never decoded is not counted as a corrupt frame", async () => {
    const clip = join(tmp, "vf12.mp4"); // 12 s: long enough for x264 to emit the MMCO that trips it
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "testsrc2=s=320x240:r=25:d=12",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-pix_fmt",
      "yuv420p",
      clip,
    ]);
    const p = Bun.spawn(
      [
        bins.ffmpeg,
        "-hide_banner",
        "-loglevel",
        "repeat+level+error",
        "-skip_frame",
        "bidir",
        "-i",
        clip,
        "-f",
        "null",
        "-",
      ],
      { stderr: "pipe" },
    );
    expect(await new Response(p.stderr).text()).toContain("mmco: unref short failure"); // ffmpeg does complain
    const stream = sampleFrames(bins, clip, { size: 32, keyframesOnly: false, skipFrames: "bidir" });
    for await (const _ of stream);
    expect(stream.stats.framesEmitted).toBe(12);
    expect(stream.stats.decodeErrors).toBe(0);
  }, 60_000);
});
