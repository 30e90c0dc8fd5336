/**
 * Text that does not change is read once (issue 28): a caption that stays on screen while the
 * footage under it moves is recognised at its first frame and carried over after, with either
 * engine; a changed character is read again. And the per-video bounds (issue 21): frames read per
 * minute of video, and the time budget after which reading stops.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { OcrEngine } from "../../src/ocr/engine.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { PpOcrEngine } from "../../src/ocr/ppocr/engine.ts";
import { regionOf, sameRegion } from "../../src/ocr/regions.ts";
import { VideoTextReader, type TextEngine, type TimedFrame } from "../../src/ocr/video-text.ts";
import { scratchDir } from "../helpers/ffmpeg.ts";
import { CJK_FONT, CJK_FONT_MISSING, drawnFrame, flat, footage, type Drawn } from "../helpers/text.ts";

const dir = scratchDir("ocr-read-once");
const paths = devOcrPaths();
const NO_LIMITS = { framesPerMinute: 600, budgetMs: 3_600_000 };
const outlined = (text: string): Drawn => ({
  text,
  size: 32,
  style: "fontcolor=white:borderw=2:bordercolor=black",
  x: 100,
  y: 600,
});
const boxed = (text: string): Drawn => ({
  text,
  size: 32,
  style: "fontcolor=white:box=1:boxcolor=black:boxborderw=10",
  x: 100,
  y: 600,
});

/** The caption `text` over the moving footage at `t` seconds into it. */
const over = async (name: string, text: string, t: number, drawn = outlined(text)): Promise<TimedFrame> => ({
  ...(await drawnFrame(dir, name, footage(2), drawn, t)),
  timestamp: t,
  forced: false,
});

/** 0–5 s: one caption over moving footage; 6–7 s: one character of it changed. */
async function captionSequence(name: string, style: (text: string) => Drawn): Promise<TimedFrame[]> {
  const out: TimedFrame[] = [];
  for (let t = 0; t < 6; t++) out.push(await over(`${name}-a${t}`, "Step 1 of 5", t, style("Step 1 of 5")));
  for (let t = 6; t < 8; t++) out.push(await over(`${name}-b${t}`, "Step 2 of 5", t, style("Step 2 of 5")));
  return out;
}

/** White with a dark outline, and white in a black box. */
const sequences: Record<"outlined" | "boxed", TimedFrame[]> = { outlined: [], boxed: [] };
let sequence: TimedFrame[];
beforeAll(async () => {
  sequences.outlined = sequence = await captionSequence("outlined", outlined);
  sequences.boxed = await captionSequence("boxed", boxed);
}, 240_000);

describe("the same pixels are the same text (regions.ts)", () => {
  test("a caption kept over moving footage matches; one changed character does not", async () => {
    const box = { x: 90, y: 590, w: 240, h: 52 };
    const first = regionOf(sequence[0], box);
    for (const f of sequence.slice(1, 6)) expect(sameRegion(first, f), `t=${f.timestamp}`).toBe(true);
    for (const f of sequence.slice(6)) expect(sameRegion(first, f), `t=${f.timestamp}`).toBe(false);
  });

  test.skipIf(CJK_FONT_MISSING !== null)(
    `Chinese: one character changed is another text (${CJK_FONT_MISSING ?? "fonts-wqy-microhei"})`,
    async () => {
      const draw = (text: string): Drawn => ({ ...outlined(text), font: CJK_FONT });
      const a = await over("cjk-a", "季度预算会议", 1, draw("季度预算会议"));
      const same = await over("cjk-b", "季度预算会议", 4, draw("季度预算会议"));
      const changed = await over("cjk-c", "季度预箅会议", 4, draw("季度预箅会议"));
      const r = regionOf(a, { x: 90, y: 590, w: 220, h: 52 });
      expect(sameRegion(r, same)).toBe(true);
      expect(sameRegion(r, changed)).toBe(false);
    },
  );
});

// tesseract reads the outlined caption over footage differently from frame to frame ("Step 1", then
// "Step 1 of 5", then nothing): a reading that misses part of the line cannot be carried (the rest
// still looks like text), so it is given the boxed caption, which it reads the same every time.
describe.each([
  ["ppocr", "outlined", () => new PpOcrEngine({ workerFile: paths.ppocr.workerFile, files: paths.ppocr })],
  ["ppocr", "boxed", () => new PpOcrEngine({ workerFile: paths.ppocr.workerFile, files: paths.ppocr })],
  ["tesseract", "boxed", () => new OcrEngine({ paths })],
] as const)("%s, %s caption over moving footage: read once", (kind, style, make) => {
  let engine: TextEngine;
  beforeAll(() => {
    engine = make();
  });
  afterAll(() => engine?.close());

  test("8 frames: read at the first and where it changed, carried over in between; two time ranges", async () => {
    const reader = new VideoTextReader(engine, 1, NO_LIMITS);
    for (const f of sequences[style]) expect(await reader.push(f)).toBe(true);
    const s = reader.stats;
    expect(s).toMatchObject({ sampled: 8, read: 2, carried: 6, noText: 0, overLimit: 0, stopped: null });
    if (kind === "ppocr") expect(s.recognized).toBe(2);
    const ranges = reader.finish(8);
    expect(ranges.map((r) => [r.text.replace(/\s+/g, "").toLowerCase(), r.start, r.end])).toEqual([
      ["step1of5", 0, 6],
      ["step2of5", 6, 8],
    ]);
  }, 180_000);
});

describe("bounds on one video's OCR", () => {
  let slides: TimedFrame[];
  let engine: PpOcrEngine;
  beforeAll(async () => {
    engine = new PpOcrEngine({ workerFile: paths.ppocr.workerFile, files: paths.ppocr });
    // A new slide every second: every frame needs reading.
    slides = [];
    for (const [i, t] of [0, 1, 2, 3, 4, 5, 61, 62].entries()) {
      const f = await drawnFrame(dir, `slide${i}`, flat("navy"), {
        text: `Slide number ${i + 1}`,
        size: 40,
        style: "fontcolor=white",
      });
      slides.push({ ...f, timestamp: t, forced: false });
    }
  }, 180_000);
  afterAll(() => engine?.close());

  test("frames per minute of video: past the limit a minute's frames are not read; the next minute reads again", async () => {
    const reader = new VideoTextReader(engine, 1, { framesPerMinute: 3, budgetMs: 3_600_000 });
    for (const f of slides) await reader.push(f);
    expect(reader.stats).toMatchObject({ sampled: 8, read: 5, overLimit: 3, stopped: null });
    const ranges = reader.finish(63);
    expect(ranges.map((r) => r.text)).toEqual([
      "Slide number 1",
      "Slide number 2",
      "Slide number 3",
      "Slide number 7",
      "Slide number 8",
    ]);
  }, 180_000);

  test("the time budget: once spent, nothing more is read and the ranges end where reading stopped", async () => {
    // A clock that moves 10 s at each frame: a 25 s budget covers three frames.
    let ms = 0;
    const reader = new VideoTextReader(engine, 1, { framesPerMinute: 600, budgetMs: 25_000 }, () => ms);
    const pushed: boolean[] = [];
    for (const f of slides) {
      pushed.push(await reader.push(f));
      ms += 10_000;
    }
    expect(pushed).toEqual([true, true, true, false, false, false, false, false]);
    expect(reader.stats).toMatchObject({ sampled: 3, read: 3, stopped: { atSecs: 3, budgetMs: 25_000 } });
    const ranges = reader.finish(63);
    expect(ranges.map((r) => [r.text, r.start, r.end])).toEqual([
      ["Slide number 1", 0, 1],
      ["Slide number 2", 1, 2],
      ["Slide number 3", 2, 3],
    ]);
  }, 180_000);
});
