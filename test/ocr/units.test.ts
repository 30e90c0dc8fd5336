import { describe, expect, test } from "vitest";
import { textFrameSize } from "../../src/media/text-frames.ts";
import { tidy, type GrayFrame, type OcrLine } from "../../src/ocr/engine.ts";
import { changed, mayHaveText, signature } from "../../src/ocr/frame-test.ts";
import { plausible, similar, textKey, TextTracker } from "../../src/ocr/tracks.ts";

const line = (text: string, confidence = 90, y = 0.5): OcrLine => ({
  text,
  confidence,
  box: { x: 0.1, y, w: 0.5, h: 0.05 },
});

describe("TextTracker: identical text over consecutive frames is one time range", () => {
  test("a caption read at 2, 3, 4 s and gone at 5 s is one range 2–5 s, with its best reading", () => {
    const t = new TextTracker(1);
    t.push(1, []);
    t.push(2, [line("Harbour lighthouse tour", 80)]);
    t.push(3, [line("Harbour ligh house tour", 94)]); // one frame's jitter: still the same caption
    t.push(4, [line("Harbour lighthouse tour", 96)]);
    t.push(5, []);
    expect(t.finish(10)).toEqual([
      { start: 2, end: 5, text: "Harbour lighthouse tour", confidence: 96, box: line("x").box },
    ]);
  });

  test("a caption that leaves and comes back is two ranges; two lines on screen together are two rows", () => {
    const t = new TextTracker(1);
    t.push(0, [line("Chapter one", 90, 0.1), line("The harbour at dawn", 90, 0.8)]);
    t.push(1, [line("Chapter one", 90, 0.1)]);
    t.push(2, []);
    t.push(3, [line("Chapter one", 90, 0.1)]);
    const r = t.finish(3.5);
    expect(r.map((x) => [x.text, x.start, x.end])).toEqual([
      ["Chapter one", 0, 2],
      ["The harbour at dawn", 0, 1],
      ["Chapter one", 3, 3.5],
    ]);
  });

  test("text on screen at the end runs to the end of the video (or one interval past its last sighting)", () => {
    const t = new TextTracker(1);
    t.push(8, [line("Thanks for watching")]);
    expect(t.finish(8.4)[0]).toMatchObject({ start: 8, end: 8.4 });
    const u = new TextTracker(1);
    u.push(8, [line("Thanks for watching")]);
    expect(u.finish(null)[0]).toMatchObject({ start: 8, end: 9 });
  });

  test("low-confidence lines and punctuation soup are dropped", () => {
    expect(plausible(line("Quarterly revenue", 95))).toBe(true);
    expect(plausible(line("Quarterly revenue", 40))).toBe(false);
    expect(plausible(line("|/_-~ ||", 90))).toBe(false);
    expect(plausible(line("a", 96))).toBe(false);
    // Footage texture read as short "words" at middling confidence; real short text reads higher.
    expect(plausible(line("INS", 59))).toBe(false);
    expect(plausible(line("au", 74))).toBe(false);
    expect(plausible(line("EXIT", 90))).toBe(true);
    expect(plausible(line("74", 85))).toBe(true);
    const t = new TextTracker(1);
    t.push(0, [line("= ] |", 80), line("EE", 20)]);
    expect(t.finish(1)).toEqual([]);
  });

  test("similar: spaces and a misread letter in six are the same text; another number or a short word is not", () => {
    expect(similar(textKey("Harbour lighthouse tour"), textKey("Harbour igh ouse tour"))).toBe(true);
    expect(similar(textKey("Step 1 of 5"), textKey("Step 2 of 5"))).toBe(false);
    expect(similar(textKey("00:00:01.000"), textKey("00:00:02.000"))).toBe(false);
    expect(similar("cat", "car")).toBe(false);
    expect(similar(textKey("Quarterly revenue forecast"), textKey("Harbour lighthouse tour"))).toBe(false);
    expect(textKey("  Hello,   WORLD! ")).toBe("hello world");
  });
});

/** A flat frame with dark "strokes": `n` 3-px bars every 8 px in a band (what text looks like to the test). */
function frame(
  width: number,
  height: number,
  fill: number,
  strokes?: { x: number; y: number; w: number; h: number; value: number },
): GrayFrame {
  const pixels = new Uint8Array(width * height).fill(fill);
  if (strokes) {
    for (let y = strokes.y; y < strokes.y + strokes.h; y++) {
      for (let x = strokes.x; x < strokes.x + strokes.w; x++)
        if ((x - strokes.x) % 8 < 3) pixels[y * width + x] = strokes.value;
    }
  }
  return { width, height, pixels };
}

describe("the cheap tests before OCR", () => {
  test("a flat colour or a smooth gradient carries no text; a band of sharp strokes may", () => {
    expect(mayHaveText(frame(1280, 720, 40))).toBe(false);
    const grad = frame(1280, 720, 0);
    for (let y = 0; y < 720; y++)
      for (let x = 0; x < 1280; x++) grad.pixels[y * 1280 + x] = Math.floor((x / 1280) * 255);
    expect(mayHaveText(grad)).toBe(false);
    expect(mayHaveText(frame(1280, 720, 30, { x: 200, y: 300, w: 400, h: 30, value: 240 }))).toBe(true);
    // A single stroke is not a word.
    expect(mayHaveText(frame(1280, 720, 30, { x: 200, y: 300, w: 3, h: 30, value: 240 }))).toBe(false);
  });

  test("a frame that did not change keeps the previous reading; a new caption over the same picture is a change", () => {
    const a = frame(1280, 720, 60, { x: 300, y: 600, w: 500, h: 36, value: 250 });
    const noisy = { ...a, pixels: a.pixels.map((v, i) => Math.min(255, v + (i % 3))) };
    const other = frame(1280, 720, 60, { x: 700, y: 600, w: 500, h: 36, value: 250 });
    expect(changed(null, signature(a))).toBe(true);
    expect(changed(signature(a), signature(noisy))).toBe(false);
    expect(changed(signature(a), signature(other))).toBe(true);
  });

  test("frames for OCR keep the display shape within 1280×720 (720×1280 upright), never upscaled, even sides", () => {
    expect(textFrameSize(1920, 1080)).toEqual({ width: 1280, height: 720 });
    expect(textFrameSize(1080, 1920)).toEqual({ width: 720, height: 1280 });
    expect(textFrameSize(426, 240)).toEqual({ width: 426, height: 240 });
    expect(textFrameSize(3840, 1600)).toEqual({ width: 1280, height: 534 });
    expect(textFrameSize(721, 405)).toEqual({ width: 722, height: 406 });
  });
});

describe("tidy: stray marks at the ends of a line go, punctuation that belongs stays", () => {
  test.each([
    ["Lap time 1 minute:", "Lap time 1 minute"],
    ["| Harbour tour :", "Harbour tour"],
    ["Harbour lighthouse tour §", "Harbour lighthouse tour"],
    ["Stop!", "Stop!"],
    ["Price 5%", "Price 5%"],
    ["(Chapter 1)", "(Chapter 1)"],
    ["  two   spaces  ", "two spaces"],
    ["===", ""],
  ])("%j → %j", (input, out) => {
    expect(tidy(input)).toBe(out);
  });
});
