/**
 * PP-OCR (issue 28): the detector's boxes and the recognizer's greedy CTC decoding on hand-made
 * outputs, then the engine — its bounded worker pool running the real models on ONNX Runtime — on
 * 1280×720 frames drawn here, Latin and Chinese, over flat colours and moving footage.
 */
import { afterAll, describe, expect, test } from "vitest";
import type { GrayFrame } from "../../src/ocr/engine.ts";
import { DET_MAX_SIDE, PpOcrEngine } from "../../src/ocr/ppocr/engine.ts";
import { detSize, textBoxes } from "../../src/ocr/ppocr/detect.ts";
import { detectInBands, readWithPpOcr } from "../../src/ocr/ppocr/read.ts";
import { ctcDecode, recInput, REC_HEIGHT, REC_MIN_WIDTH } from "../../src/ocr/ppocr/recognize.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { scratchDir } from "../helpers/ffmpeg.ts";
import { until } from "../helpers/wait.ts";
import { CJK_FONT, CJK_FONT_MISSING, drawnFrame, flat, footage, SERIF_FONT } from "../helpers/text.ts";

const dir = scratchDir("ppocr");
const paths = devOcrPaths().ppocr;
const newEngine = (o: { workers?: number; idleCloseMs?: number } = {}) =>
  new PpOcrEngine({ workerFile: paths.workerFile, files: paths, ...o });

/** Letters and digits only: PP-OCR's spaces between Latin words are its weak spot, not what is tested here. */
const letters = (s: string) => s.replace(/[^\p{L}\p{N}]/gu, "").toLowerCase();

describe("detector output → boxes (DBNet post-processing)", () => {
  test("the input is the frame shrunk to ≤ 960 on its long side, in multiples of 32", () => {
    expect(detSize(1280, 720, DET_MAX_SIDE)).toEqual({ width: 960, height: 544 });
    expect(detSize(640, 360, DET_MAX_SIDE)).toEqual({ width: 640, height: 352 });
    expect(detSize(720, 1280, DET_MAX_SIDE)).toEqual({ width: 544, height: 960 });
    expect(detSize(20, 10, DET_MAX_SIDE)).toEqual({ width: 32, height: 32 });
  });

  test("regions above 0.3 become boxes grown back by area × 1.5 / perimeter, scaled to the frame; weak or tiny ones go", () => {
    const w = 100;
    const h = 50;
    const map = new Float32Array(w * h);
    const fill = (x0: number, y0: number, x1: number, y1: number, p: number) => {
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) map[y * w + x] = p;
    };
    fill(10, 10, 50, 20, 0.9); // a 40 × 10 line
    fill(60, 30, 90, 38, 0.45); // above the pixel threshold, under the box threshold (0.6)
    fill(5, 40, 7, 42, 0.99); // 2 × 2: noise
    const boxes = textBoxes(map, w, h, 200, 100);
    expect(boxes).toHaveLength(1);
    const d = (40 * 10 * 1.5) / (2 * (40 + 10)); // 6
    // Frame = 2 × the map.
    expect(boxes[0].x).toBeCloseTo((10 - d) * 2, 5);
    expect(boxes[0].y).toBeCloseTo((10 - d) * 2, 5);
    expect(boxes[0].w).toBeCloseTo((40 + 2 * d) * 2, 5);
    expect(boxes[0].h).toBeCloseTo((10 + 2 * d) * 2, 5);
    expect(boxes[0].score).toBeCloseTo(0.9, 5);
  });

  test("boxes come top to bottom, and left to right within a line", () => {
    const w = 120;
    const map = new Float32Array(w * 60);
    for (const [x0, y0] of [
      [70, 10],
      [10, 11],
      [10, 40],
    ])
      for (let y = y0; y < y0 + 6; y++) for (let x = x0; x < x0 + 30; x++) map[y * w + x] = 0.9;
    const b = textBoxes(map, w, 60, w, 60);
    expect(b.map((x) => [Math.round(x.x + x.w / 2), Math.round(x.y + x.h / 2)])).toEqual([
      [25, 14],
      [85, 13],
      [25, 43],
    ]);
  });
});

describe("recognizer input and output", () => {
  test("a line becomes 48 px high, its aspect kept, padded to at least 320; a tall box is turned to read top down", () => {
    const frame = { width: 400, height: 200, pixels: new Uint8Array(400 * 200).fill(255) };
    expect(recInput(frame, { x: 0, y: 0, w: 240, h: 24 }).width).toBe(480);
    const short = recInput(frame, { x: 0, y: 0, w: 100, h: 24 });
    expect(short.width).toBe(REC_MIN_WIDTH);
    // White is 1 over the line's 200 columns, the padding after them 0 (mid gray).
    expect(short.data[199]).toBeCloseTo(1, 5);
    expect(short.data[200]).toBe(0);
    expect(short.data[REC_HEIGHT * short.width - 1]).toBe(0);
    // A vertical box: a dark pixel at its top-left corner ends up at the left end, bottom row.
    frame.pixels[0] = 0;
    const tall = recInput(frame, { x: 0, y: 0, w: 10, h: 100 });
    expect(tall.width).toBe(480); // 100 px along the line, 10 across: 48 × 10
    expect(tall.data[(REC_HEIGHT - 1) * tall.width]).toBeLessThan(0.9);
    expect(tall.data[0]).toBeCloseTo(1, 5);
  });

  test("greedy CTC: repeats merge, blanks separate, the last class is a space, confidence is the kept characters' mean", () => {
    const keys = ["a", "b", "c"];
    const classes = keys.length + 2; // blank, a, b, c, space
    // a a _ a b space c _
    const best = [1, 1, 0, 1, 2, 4, 3, 0];
    const p = [0.9, 0.7, 0.99, 0.8, 0.6, 0.5, 0.4, 0.99];
    const probs = new Float32Array(best.length * classes);
    best.forEach((c, t) => {
      for (let k = 0; k < classes; k++) probs[t * classes + k] = (1 - p[t]) / (classes - 1);
      probs[t * classes + c] = p[t];
    });
    const d = ctcDecode(probs, best.length, classes, keys);
    expect(d.text).toBe("aab c");
    expect(d.confidence).toBeCloseTo((0.9 + 0.8 + 0.6 + 0.5 + 0.4) / 5, 5);
    expect(
      ctcDecode(
        new Float32Array(classes * 3).fill(0).map((_, i) => (i % classes === 0 ? 1 : 0)),
        3,
        classes,
        keys,
      ),
    ).toEqual({
      text: "",
      confidence: 0,
    });
  });

  test("a word gap the blank wins is a space where the space class rises as at a real gap, not as inside a word", () => {
    const keys = ["a", "b", "c"];
    const classes = keys.length + 2; // blank, a, b, c, space
    /** Steps of [class, probability of the space class at that step]. */
    const decode = (steps: [number, number][]) => {
      const probs = new Float32Array(steps.length * classes);
      steps.forEach(([c, space], t) => {
        probs[t * classes + classes - 1] = space;
        probs[t * classes + c] = 0.9;
      });
      return ctcDecode(probs, steps.length, classes, keys).text;
    };
    // 0.035: the weakest word gap of the road-trip caption; 0.021: inside "Quarterly" at 40 px.
    expect(
      decode([
        [1, 0],
        [0, 0.035],
        [2, 0],
        [0, 0.021],
        [3, 0],
      ]),
    ).toBe("a bc");
    // A space the model writes itself is kept, and no hint doubles it.
    expect(
      decode([
        [1, 0],
        [0, 0.05],
        [4, 0.9],
        [0, 0.05],
        [3, 0],
      ]),
    ).toBe("a c");
  });
});

const LATIN = [
  { name: "flat-24", bg: flat("navy"), size: 24, text: "Quarterly revenue forecast", style: "fontcolor=white" },
  {
    name: "flat-serif-36",
    bg: flat("yellow"),
    size: 36,
    text: "Museum opening hours",
    style: "fontcolor=black",
    font: SERIF_FONT,
  },
  {
    name: "footage-outline-32",
    bg: footage(3),
    size: 32,
    text: "Research station weather",
    style: "fontcolor=white:borderw=2:bordercolor=black",
  },
  {
    name: "footage-box-48",
    bg: footage(2),
    size: 48,
    text: "Harbour lighthouse tour",
    style: "fontcolor=white:box=1:boxcolor=black:boxborderw=10",
  },
];

const CJK = [
  { name: "cjk-flat-24", bg: flat("navy"), size: 24, text: "季度预算会议", style: "fontcolor=white" },
  {
    name: "cjk-footage-outline-32",
    bg: footage(3),
    size: 32,
    text: "北京欢迎你",
    style: "fontcolor=white:borderw=2:bordercolor=black",
  },
  {
    name: "cjk-footage-box-48",
    bg: footage(2),
    size: 48,
    text: "东京塔展望台",
    style: "fontcolor=white:box=1:boxcolor=black:boxborderw=10",
  },
];

describe("the engine on drawn frames", () => {
  const engine = newEngine({ workers: 1 });
  afterAll(() => engine.close());

  test.each(LATIN)(
    "Latin, $name: the line is found where it was drawn and read exactly",
    async (c) => {
      const f = await drawnFrame(dir, c.name, c.bg, { ...c, x: 64 });
      const r = await readWithPpOcr(engine, f, []);
      const hit = r.lines.find((l) => letters(l.text) === letters(c.text));
      expect(hit, JSON.stringify(r.lines)).toBeDefined();
      expect(hit!.confidence).toBeGreaterThan(80);
      expect(hit!.box.x).toBeCloseTo(64 / 1280, 1);
      expect(hit!.box.y + hit!.box.h / 2).toBeCloseTo(0.5, 1);
      expect(r.recognized).toBe(r.lines.length);
    },
    120_000,
  );

  describe.skipIf(CJK_FONT_MISSING !== null)(`Chinese (${CJK_FONT_MISSING ?? CJK_FONT})`, () => {
    test.each(CJK)(
      "CJK, $name: read exactly",
      async (c) => {
        const f = await drawnFrame(dir, c.name, c.bg, { ...c, font: CJK_FONT });
        const r = await readWithPpOcr(engine, f, []);
        expect(
          r.lines.map((l) => l.text.replace(/\s+/g, "")),
          JSON.stringify(r.lines),
        ).toContain(c.text);
      },
      120_000,
    );
  });

  test("the detector reads only the frame's text bands, and finds the same boxes there as in the whole frame", async () => {
    const f = await drawnFrame(dir, "bands", footage(), {
      text: "Harbour museum opening hours",
      size: 32,
      style: "fontcolor=white:borderw=2:bordercolor=black",
      y: 600,
    });
    const whole = await engine.detect(f);
    const heights: number[] = [];
    const spy = new Proxy(engine, {
      get: (o, k) =>
        k === "detect"
          ? (g: GrayFrame) => {
              heights.push(g.height);
              return o.detect(g);
            }
          : Reflect.get(o, k, o),
    });
    const banded = await detectInBands(spy, f);
    expect(heights.length).toBeGreaterThan(0);
    expect(heights.reduce((a, b) => a + b, 0)).toBeLessThan(720 * 0.6);
    const caption = whole.filter((b) => b.y > 560);
    expect(caption.length, JSON.stringify(whole)).toBeGreaterThan(0);
    for (const b of caption) {
      const same = banded.find((x) => Math.abs(x.x - b.x) <= 4 && Math.abs(x.y - b.y) <= 4 && Math.abs(x.w - b.w) <= 8);
      expect(same, `${JSON.stringify(b)} in ${JSON.stringify(banded)}`).toBeDefined();
    }
  }, 120_000);

  test("a frame without text gives no lines", async () => {
    const f = await drawnFrame(dir, "blank", flat("teal"), null);
    expect((await readWithPpOcr(engine, f, [])).lines).toEqual([]);
  }, 120_000);
});

describe("the pool", () => {
  test("at most `workers` threads however many frames wait; they end after the idle time and start again", async () => {
    const e = newEngine({ workers: 1, idleCloseMs: 200 });
    try {
      const f = await drawnFrame(dir, "pool", flat("black"), {
        text: "Platform nine",
        size: 40,
        style: "fontcolor=white",
      });
      expect(e.running).toBe(0);
      const peak: number[] = [];
      const watch = setInterval(() => peak.push(e.running), 5);
      const all = await Promise.all([e.detect(f), e.detect(f), e.detect(f)]).finally(() => clearInterval(watch));
      expect(all.every((b) => b.length === 1)).toBe(true);
      expect(Math.max(...peak)).toBe(1);
      for (let i = 0; i < 200 && e.running > 0; i++) await Bun.sleep(25);
      expect(e.running).toBe(0);
      expect(e.busy).toBe(false);
      expect(await e.detect(f)).toHaveLength(1);
      expect(e.running).toBe(1);
    } finally {
      await e.close();
    }
  }, 120_000);

  test("warm() starts one thread with the models loaded before any frame, once however often it is called", async () => {
    const e = newEngine({ workers: 1 });
    try {
      e.warm();
      e.warm(); // while the first is loading: nothing more
      expect(e.busy).toBe(true);
      expect(await until(async () => !e.busy, 60_000, 10)).toBe(true);
      expect(e.running).toBe(1);
      e.warm(); // already warm: nothing more
      expect(e.busy).toBe(false);
      expect(await e.closeIdle()).toBe(1); // an idle thread like any other
      // A closed engine or one whose models are missing warms nothing and throws nothing; the first frame reports it.
      await e.close();
      e.warm();
      expect(e.running).toBe(0);
      const broken = new PpOcrEngine({ workerFile: paths.workerFile, files: { ...paths, rec: `${dir}/nope.onnx` } });
      broken.warm();
      expect(await until(async () => !broken.busy, 10_000, 10)).toBe(true);
      await expect(broken.detect({ width: 32, height: 32, pixels: new Uint8Array(1024) })).rejects.toThrow(
        /nope\.onnx/,
      );
      await broken.close();
    } finally {
      await e.close();
    }
  }, 120_000);

  test("a closed engine refuses work; a missing model file is an OCR error naming it", async () => {
    const e = newEngine();
    await e.close();
    await expect(e.detect({ width: 2, height: 2, pixels: new Uint8Array(4) })).rejects.toThrow(/closed/);
    const broken = new PpOcrEngine({ workerFile: paths.workerFile, files: { ...paths, det: `${dir}/nope.onnx` } });
    await expect(broken.detect({ width: 32, height: 32, pixels: new Uint8Array(1024) })).rejects.toThrow(
      /PP-OCR model file is missing \(.*nope\.onnx\)/,
    );
    await broken.close();
  }, 60_000);
});
