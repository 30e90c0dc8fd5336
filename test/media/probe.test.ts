import { describe, expect, it } from "vitest";
import { MediaError, type MediaErrorCode } from "../../src/media/errors.ts";
import { probeMedia } from "../../src/media/probe.ts";
import { CUTS, mediaBins, mediaFixture, type FixtureName } from "../helpers/media.ts";

const bins = mediaBins();

async function probeError(name: FixtureName): Promise<MediaError> {
  const err = await probeMedia(bins, await mediaFixture(name)).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MediaError);
  return err as MediaError;
}

describe("probeMedia", () => {
  it("reports container, size, duration, fps and codecs of an H.264/AAC mp4", async () => {
    const info = await probeMedia(bins, await mediaFixture("cuts"));
    expect(info).toMatchObject({
      formatName: "mov,mp4,m4a,3gp,3g2,mj2",
      container: "mp4",
      mimeType: "video/mp4",
      width: CUTS.width,
      height: CUTS.height,
      videoCodec: "h264",
      audioCodec: "aac",
      hasVideo: true,
      hasAudio: true,
      rotation: 0,
      hdr: false,
      pixFmt: "yuv420p",
    });
    expect(info.durationSecs).toBeCloseTo(CUTS.durationSecs, 1);
    expect(info.fps).toBeCloseTo(CUTS.fps, 3);
    expect(info.displayAspectRatio).toBeCloseTo(4 / 3, 5);
    expect(info.bitRate).toBeGreaterThan(10_000);
    expect(info.sizeBytes).toBe(Bun.file(await mediaFixture("cuts")).size);
  });

  // The container comes from the bytes, not the extension.
  it.each([
    ["mov", "mov", "video/quicktime"],
    ["avi", "avi", "video/x-msvideo"],
    ["mkv", "mkv", "video/x-matroska"],
    ["webm", "webm", "video/webm"],
    ["mpg", "mpeg", "video/mpeg"],
    ["cutsTs", "mpeg", "video/mp2t"],
    ["threeGp", "mp4", "video/mp4"],
    ["odd", "webm", "video/webm"],
  ] as const)("accepts %s as %s", async (name, container, mime) => {
    const info = await probeMedia(bins, await mediaFixture(name));
    expect(info.container).toBe(container);
    expect(info.mimeType).toBe(mime);
    expect(info.hasVideo).toBe(true);
    expect(info.durationSecs).toBeGreaterThan(0.4);
  });

  it("reads MPEG-TS without the static ffprobe crashing (gconv guard)", async () => {
    const info = await probeMedia(bins, await mediaFixture("cutsTs"));
    expect(info.formatName).toBe("mpegts");
    expect(info.width).toBe(CUTS.width);
    expect(info.audioCodec).toBe("aac");
  });

  it("keeps odd sizes exact", async () => {
    const info = await probeMedia(bins, await mediaFixture("odd"));
    expect([info.width, info.height]).toEqual([333, 197]);
  });

  it("swaps width and height for a 90° rotation and reports the rotation", async () => {
    const info = await probeMedia(bins, await mediaFixture("rotated"));
    expect([info.width, info.height]).toEqual([160, 320]);
    expect([90, 270]).toContain(info.rotation);
    expect(info.displayAspectRatio).toBeCloseTo(0.5, 5);
  });

  it("applies non-square pixels to the display aspect ratio", async () => {
    const info = await probeMedia(bins, await mediaFixture("anamorphic"));
    expect([info.width, info.height]).toEqual([160, 240]);
    expect(info.displayAspectRatio).toBeCloseTo(4 / 3, 5);
  });

  it("flags PQ 10-bit video as HDR", async () => {
    const info = await probeMedia(bins, await mediaFixture("hdr"));
    expect(info).toMatchObject({ videoCodec: "hevc", hdr: true, pixFmt: "yuv420p10le" });
  });

  it.each([
    ["pngAsMp4", "UNSUPPORTED_FORMAT"],
    ["textAsMp4", "UNSUPPORTED_FORMAT"],
    ["randomBytes", "UNSUPPORTED_FORMAT"],
    ["audioM4a", "NO_VIDEO_STREAM"],
    ["audioMp3", "NO_VIDEO_STREAM"],
    ["empty", "EMPTY_FILE"],
    ["truncated", "DECODE_FAILED"],
    ["garbageMp4", "DECODE_FAILED"],
  ] as [FixtureName, MediaErrorCode][])("%s → %s", async (name, code) => {
    const err = await probeError(name);
    expect(err.code).toBe(code);
    expect(err.message.length).toBeGreaterThan(5);
    expect(err.toJSON()).toEqual({ code, message: err.message });
  });

  it("reports a missing file as FILE_NOT_FOUND", async () => {
    await expect(probeMedia(bins, "/nonexistent/clip.mp4")).rejects.toMatchObject({ code: "FILE_NOT_FOUND" });
  });

  it("with strict: false describes what it found instead of refusing", async () => {
    const png = await probeMedia(bins, await mediaFixture("pngAsMp4"), { strict: false });
    expect(png).toMatchObject({ container: null, mimeType: null, formatName: "png_pipe" });
    const m4a = await probeMedia(bins, await mediaFixture("audioM4a"), { strict: false });
    expect(m4a).toMatchObject({ container: "mp4", hasVideo: false, hasAudio: true, audioCodec: "aac", width: null });
  });

  it("kills a probe that runs past its time limit", async () => {
    await expect(probeMedia(bins, await mediaFixture("cuts"), { timeoutMs: 1 })).rejects.toMatchObject({
      code: "TIMEOUT",
    });
  });

  it("accepts a truncated file whose index is intact (decoding copes later)", async () => {
    const info = await probeMedia(bins, await mediaFixture("truncatedFaststart"));
    expect(info.container).toBe("mp4");
  });
});
