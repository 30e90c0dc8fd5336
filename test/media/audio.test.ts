import { describe, expect, it } from "vitest";
import { AUDIO_SAMPLE_RATE, streamAudio16kMono, type AudioWindow } from "../../src/media/audio.ts";
import { CUTS, mediaBins, mediaFixture, type FixtureName } from "../helpers/media.ts";

const bins = mediaBins();

async function windows(name: FixtureName, windowSecs: number): Promise<AudioWindow[]> {
  const out: AudioWindow[] = [];
  for await (const w of streamAudio16kMono(bins, await mediaFixture(name), { windowSecs })) out.push(w);
  return out;
}

/** Dominant frequency from upward zero crossings. */
function frequency(samples: Float32Array): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1] < 0 && samples[i] >= 0) crossings++;
  return crossings / (samples.length / AUDIO_SAMPLE_RATE);
}

const rms = (s: Float32Array) => Math.sqrt(s.reduce((a, v) => a + v * v, 0) / s.length);

describe("streamAudio16kMono", () => {
  it("yields fixed windows at index × windowSecs, the last one shorter", async () => {
    const ws = await windows("cuts", 3);
    expect(ws.map((w) => w.index)).toEqual([0, 1, 2]);
    expect(ws.map((w) => w.offsetSecs)).toEqual([0, 3, 6]);
    expect(ws[0].samples.length).toBe(3 * AUDIO_SAMPLE_RATE);
    expect(ws[1].samples.length).toBe(3 * AUDIO_SAMPLE_RATE);
    // 8 s of audio in all (give or take an AAC frame of padding).
    const total = ws.reduce((n, w) => n + w.samples.length, 0);
    expect(Math.abs(total / AUDIO_SAMPLE_RATE - CUTS.durationSecs)).toBeLessThan(0.1);
    expect(ws[2].samples.length).toBe(total - 6 * AUDIO_SAMPLE_RATE);
    expect(ws[2].samples.buffer.byteLength).toBe(ws[2].samples.length * 4); // not pinning a full window
  });

  it("decodes the 440 Hz tone to mono 16 kHz floats", async () => {
    const [w] = await windows("cuts", 2);
    const middle = w.samples.subarray(AUDIO_SAMPLE_RATE / 2, AUDIO_SAMPLE_RATE * 1.5);
    expect(frequency(middle)).toBeGreaterThan(CUTS.audioHz - 5);
    expect(frequency(middle)).toBeLessThan(CUTS.audioHz + 5);
    expect(rms(middle)).toBeGreaterThan(0.05);
    expect(Math.max(...middle.map(Math.abs))).toBeLessThanOrEqual(1);
  });

  it("pads a late-starting audio track so samples sit on the video's timeline", async () => {
    const [w] = await windows("lateAudio", 30);
    const firstSound = w.samples.findIndex((v) => Math.abs(v) > 0.01) / AUDIO_SAMPLE_RATE;
    // Without the aresample padding the tone would start at ~0.02 s.
    expect(firstSound).toBeGreaterThan(0.95);
    expect(firstSound).toBeLessThan(1.05);
    expect(w.samples.length / AUDIO_SAMPLE_RATE).toBeCloseTo(3, 1);
  });

  it("with the default 30 s window gives one window for a short file", async () => {
    const ws = await windows("audioM4a", 30);
    expect(ws).toHaveLength(1);
    expect(ws[0].samples.length / AUDIO_SAMPLE_RATE).toBeCloseTo(3, 1);
  });

  it("reads audio from an MPEG-TS too", async () => {
    const ws = await windows("cutsTs", 30);
    expect(ws[0].samples.length / AUDIO_SAMPLE_RATE).toBeCloseTo(CUTS.durationSecs, 0);
  });

  it("fails fast with NO_AUDIO_STREAM for a video without audio", async () => {
    const started = Date.now();
    await expect(windows("colors", 30)).rejects.toMatchObject({ code: "NO_AUDIO_STREAM" });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("reports unreadable input as DECODE_FAILED and a missing file as FILE_NOT_FOUND", async () => {
    await expect(windows("truncated", 30)).rejects.toMatchObject({ code: "DECODE_FAILED" });
    const missing = async () => {
      for await (const _ of streamAudio16kMono(bins, "/nonexistent/a.mp4")) void _;
    };
    await expect(missing()).rejects.toMatchObject({ code: "FILE_NOT_FOUND" });
  });

  it("rejects a window size that is not positive", () => {
    expect(() => streamAudio16kMono(bins, "x", { windowSecs: 0 })).toThrow(RangeError);
  });
});
