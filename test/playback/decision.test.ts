import { describe, expect, test } from "vitest";
import { decideRendition, type PlaybackSource } from "../../src/playback/decision.ts";

const src = (
  container: PlaybackSource["container"],
  videoCodec: string,
  pixFmt: string,
  audioCodec: string | null,
): PlaybackSource => ({ container, videoCodec, pixFmt, audioCodec });

describe("which sources get a web rendition (SPEC §11; Chromium 156 as tried in stack-findings)", () => {
  test.each([
    // What Chromium plays as it is.
    [src("mp4", "h264", "yuv420p", "aac"), false],
    [src("mp4", "h264", "yuvj420p", null), false],
    [src("mp4", "h264", "yuv420p", "mp3"), false],
    [src("mp4", "av1", "yuv420p", "opus"), false],
    [src("mp4", "vp9", "yuv420p10le", "aac"), false],
    [src("webm", "vp8", "yuv420p", "vorbis"), false],
    [src("webm", "vp9", "yuv420p10le", "opus"), false],
    [src("webm", "av1", "yuv420p", null), false],
    // Failing with MediaError 4 in Chromium: containers it cannot demux.
    [src("avi", "mpeg4", "yuv420p", "mp3"), true],
    [src("mpeg", "mpeg2video", "yuv420p", "mp2"), true],
    [src("mpeg", "mpeg1video", "yuv420p", "mp2"), true],
    [src("mkv", "h264", "yuv420p", "aac"), true],
    [src("mkv", "h264", "yuv420p", "ac3"), true],
    [src("mkv", "vp9", "yuv420p10le", "opus"), false], // a .webm whose DocType says "matroska": Chromium plays it
    [src("mkv", "vp8", "yuv420p", "vorbis"), false],
    [src("mkv", "vp9", "yuv420p", "aac"), true],
    [src("mov", "h264", "yuv420p", "aac"), true],
    [src(null, "h264", "yuv420p", "aac"), true],
    // Audio without picture in Chromium: codecs it cannot decode inside a playable container.
    [src("mp4", "h263", "yuv420p", "aac"), true],
    [src("mp4", "hevc", "yuv420p10le", "aac"), true],
    [src("mp4", "hevc", "yuv420p", "aac"), true],
    [src("mp4", "mpeg4", "yuv420p", "aac"), true],
    // H.264 beyond 8-bit 4:2:0 (High 10 / 4:2:2 / 4:4:4) and 4:4:4 VP9.
    [src("mp4", "h264", "yuv420p10le", "aac"), true],
    [src("mp4", "h264", "yuv444p", "aac"), true],
    [src("webm", "vp9", "yuv444p", "opus"), true],
    // Playable picture, unplayable sound (AC-3, MP2, PCM, AMR).
    [src("mp4", "h264", "yuv420p", "ac3"), true],
    [src("mp4", "h264", "yuv420p", "mp2"), true],
    [src("mp4", "h264", "yuv420p", "pcm_s16le"), true],
    [src("mp4", "h264", "yuv420p", "amr_nb"), true],
    [src("webm", "vp9", "yuv420p", "aac"), true],
  ])("%o → rendition %s", (s, needed) => {
    const d = decideRendition(s);
    expect(d.needed).toBe(needed);
    expect(d.reason.length).toBeGreaterThan(10);
  });

  test("the reason names what a browser cannot do", () => {
    expect(decideRendition(src("avi", "mpeg4", "yuv420p", "mp3")).reason).toContain("avi container");
    expect(decideRendition(src("mkv", "h264", "yuv420p", "aac")).reason).toContain("only with WebM's codecs");
    expect(decideRendition(src("mp4", "hevc", "yuv420p10le", "aac")).reason).toContain("hevc video in mp4");
    expect(decideRendition(src("mp4", "h264", "yuv420p", "ac3")).reason).toContain("ac3 audio");
    expect(decideRendition(src("mp4", "h264", "yuv420p10le", "aac")).reason).toContain("8-bit 4:2:0");
  });
});
