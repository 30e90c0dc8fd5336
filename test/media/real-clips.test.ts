import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { streamAudio16kMono } from "../../src/media/audio.ts";
import { sampleFrames, type SampledFrame } from "../../src/media/frames.ts";
import { probeMedia } from "../../src/media/probe.ts";
import { detectShotBoundaries } from "../../src/media/shots.ts";
import { mediaBins, SHARED_CLIPS } from "../helpers/media.ts";

const bins = mediaBins();
const clip = (name: string) => join(SHARED_CLIPS, name);
const TS = clip("exo_bbb_2500ms_mpeg2.ts");
const HDR = clip("exo_city_hevc_hdr10.mp4");
const FRIDAY = clip("mdn_friday_his-girl-friday.mp4");

async function firstFrame(file: string, hdr: boolean): Promise<SampledFrame> {
  for await (const f of sampleFrames(bins, file, { size: 64, hdr, keyframesOnly: false })) return f;
  throw new Error("no frame");
}

/** Mean chroma spread (max − min channel): washed-out HDR decoded as SDR is nearly grey. */
function saturation(rgb: Uint8Array): number {
  let s = 0;
  for (let i = 0; i < rgb.length; i += 3)
    s += Math.max(rgb[i], rgb[i + 1], rgb[i + 2]) - Math.min(rgb[i], rgb[i + 1], rgb[i + 2]);
  return s / (rgb.length / 3);
}

// Real footage from /work/shared (see its media/README.md); absent on CI, so the suite skips it.
describe.skipIf(!existsSync(TS) || !existsSync(HDR) || !existsSync(FRIDAY))("real clips", () => {
  it("probes and samples the 1080p MPEG-2 transport stream (2 programs)", async () => {
    const info = await probeMedia(bins, TS);
    expect(info).toMatchObject({
      container: "mpeg",
      mimeType: "video/mp2t",
      width: 1920,
      height: 1080,
      videoCodec: "mpeg2video",
      audioCodec: "mp2",
    });
    expect(info.durationSecs).toBeCloseTo(2.5, 1);
    const frames: SampledFrame[] = [];
    for await (const f of sampleFrames(bins, TS, { durationSecs: info.durationSecs, size: 64 })) frames.push(f);
    expect(frames.map((f) => Math.floor(f.timestamp))).toEqual([0, 1, 2]);
  });

  it("flags the HDR10 HEVC clip and tone-maps it to a more saturated picture", async () => {
    const info = await probeMedia(bins, HDR);
    expect(info).toMatchObject({ videoCodec: "hevc", hdr: true, pixFmt: "yuv420p10le" });
    const [plain, mapped] = [await firstFrame(HDR, false), await firstFrame(HDR, true)];
    expect(saturation(mapped.rgb)).toBeGreaterThan(saturation(plain.rgb) * 1.3);
  });

  it("gets speech-level audio and in-range shot times from the film clip", async () => {
    const info = await probeMedia(bins, FRIDAY);
    expect(info).toMatchObject({ hasAudio: true, audioCodec: "aac", width: 640, height: 480 });
    let energy = 0;
    let samples = 0;
    for await (const w of streamAudio16kMono(bins, FRIDAY, { windowSecs: 30 })) {
      samples += w.samples.length;
      for (const v of w.samples) energy += v * v;
    }
    expect(samples / 16_000).toBeCloseTo(info.durationSecs!, 0);
    expect(Math.sqrt(energy / samples)).toBeGreaterThan(0.01);
    const cuts = await detectShotBoundaries(bins, FRIDAY, { durationSecs: info.durationSecs });
    expect(cuts.every((t) => t > 0 && t < info.durationSecs!)).toBe(true);
  });
});
