import { describe, expect, test } from "vitest";
import { timestamp, toSrt, toVtt } from "../../src/playback/transcript-format.ts";
import { parseCues } from "./helpers.ts";

describe("transcript documents", () => {
  test("timestamps: hours, rounding to the millisecond, the separator of each format", () => {
    expect(timestamp(0, ",")).toBe("00:00:00,000");
    expect(timestamp(1.0005, ".")).toBe("00:00:01.001");
    expect(timestamp(59.9996, ",")).toBe("00:01:00,000");
    expect(timestamp(3723.25, ".")).toBe("01:02:03.250");
    expect(timestamp(36000 + 61.5, ",")).toBe("10:01:01,500");
    expect(timestamp(-1, ",")).toBe("00:00:00,000");
  });

  const segments = [
    { start: 0.5, end: 2.25, text: " Hello there. " },
    { start: 2.25, end: 3661.001, text: "A long\n\nline --> with an arrow" },
    { start: 4, end: 3, text: "ends before it starts" },
    { start: 5, end: 6, text: "   " },
  ];

  test("SRT: numbered cues, comma milliseconds, no blank line inside a cue, empty cues dropped", () => {
    const cues = parseCues(toSrt(segments), "srt");
    expect(cues).toEqual([
      { start: 0.5, end: 2.25, text: "Hello there." },
      { start: 2.25, end: 3661.001, text: "A long line -> with an arrow" },
      { start: 4, end: 4, text: "ends before it starts" },
    ]);
  });

  test("WebVTT: header, dot milliseconds, same cues", () => {
    const doc = toVtt(segments);
    expect(doc.startsWith("WEBVTT\n\n")).toBe(true);
    expect(parseCues(doc, "vtt").map((c) => c.text)).toEqual([
      "Hello there.",
      "A long line -> with an arrow",
      "ends before it starts",
    ]);
  });

  test("an empty transcript is a valid empty document", () => {
    expect(toSrt([])).toBe("");
    expect(parseCues(toSrt([]), "srt")).toEqual([]);
    expect(toVtt([])).toBe("WEBVTT\n");
    expect(parseCues(toVtt([]), "vtt")).toEqual([]);
  });
});
