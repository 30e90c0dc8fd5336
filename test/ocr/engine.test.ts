import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { OcrEngine, type GrayFrame } from "../../src/ocr/engine.ts";
import { mayHaveText } from "../../src/ocr/frame-test.ts";
import { devOcrPaths } from "../../src/ocr/paths.ts";
import { readFrame } from "../../src/ocr/read-frame.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";

const dir = scratchDir("ocr-engine");
const FONTS = "/usr/share/fonts/truetype";

/** One 1280×720 grayscale frame: `background` (a lavfi source + filters) with `text` drawn on it. */
async function drawn(name: string, background: string, text: string, style: string): Promise<GrayFrame> {
  const out = join(dir, `${name}.gray`);
  await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      background,
      "-vf",
      `drawtext=text='${text}':${style},format=gray`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
    ],
    out,
  );
  return { width: 1280, height: 720, pixels: new Uint8Array(readFileSync(out)) };
}

const flat = (c: string) => `color=c=${c}:size=1280x720`;
/** Footage stand-in: a moving test pattern blurred into soft colour fields, with grain. */
const footage = "testsrc2=size=1280x720:rate=10,trim=start=2,gblur=sigma=24,noise=alls=14:allf=t";

const CASES = [
  {
    name: "sans-24-navy",
    bg: flat("navy"),
    text: "Quarterly revenue forecast",
    style: `fontfile=${FONTS}/dejavu/DejaVuSans.ttf:fontsize=24:fontcolor=white:x=100:y=300`,
  },
  {
    name: "serif-36-yellow",
    bg: flat("yellow"),
    text: "Museum opening hours",
    style: `fontfile=${FONTS}/dejavu/DejaVuSerif.ttf:fontsize=36:fontcolor=black:x=200:y=200`,
  },
  {
    name: "liberation-bold-48-white",
    bg: flat("white"),
    text: "Emergency exit",
    style: `fontfile=${FONTS}/liberation/LiberationSans-Bold.ttf:fontsize=48:fontcolor=darkred:x=300:y=500`,
  },
  {
    name: "mono-30-footage-outline",
    bg: footage,
    text: "Lap time 1 minute",
    style: `fontfile=${FONTS}/liberation/LiberationMono-Regular.ttf:fontsize=30:fontcolor=white:borderw=3:bordercolor=black:x=120:y=600`,
  },
  // White text, thin dark outline, over the bright field of the footage (as bright as the letters):
  // the first pass reads nothing here, and the fill pass read blobs until the halo of bright footage
  // round the outline was told apart from the letters (src/ocr/read-frame.ts, outlinedFill).
  {
    name: "sans-48-bright-footage-outline",
    bg: footage.replace("start=2", "start=3"),
    text: "Harbour museum quarterly",
    style: `fontfile=${FONTS}/dejavu/DejaVuSans.ttf:fontsize=48:fontcolor=white:borderw=2:bordercolor=black:x=64:y=(h-th)/2`,
  },
  {
    name: "serif-20-bright-footage-outline",
    bg: footage.replace("start=2", "start=3"),
    text: "Opening festival street platform",
    style: `fontfile=${FONTS}/dejavu/DejaVuSerif.ttf:fontsize=20:fontcolor=white:borderw=2:bordercolor=black:x=64:y=(h-th)/2`,
  },
  {
    name: "sans-40-footage-box",
    bg: footage,
    text: "Harbour lighthouse tour",
    style: `fontfile=${FONTS}/dejavu/DejaVuSans.ttf:fontsize=40:fontcolor=white:box=1:boxcolor=black:boxborderw=10:x=(w-tw)/2:y=h-120`,
  },
];

describe("OCR engine (tesseract.js, bundled English data) on generated 720p frames", () => {
  const engine = new OcrEngine({ paths: devOcrPaths(), workers: 1 });
  afterAll(() => engine.close());

  test.each(CASES)(
    "$name: reads the text exactly, with its box (a second pass for outlined captions)",
    async (c) => {
      const f = await drawn(c.name, c.bg, c.text, c.style);
      expect(mayHaveText(f)).toBe(true);
      const { lines } = await readFrame(engine, f);
      const hit = lines.find((l) => l.text.toLowerCase() === c.text.toLowerCase());
      expect(hit, JSON.stringify(lines.map((l) => [l.text, l.confidence]))).toBeDefined();
      expect(hit!.confidence).toBeGreaterThan(70);
      const x = Number(/:x=(\d+)/.exec(c.style)?.[1] ?? NaN);
      if (Number.isFinite(x)) expect(hit!.box.x).toBeCloseTo(x / 1280, 1);
      expect(hit!.box.w).toBeGreaterThan(0.05);
      expect(hit!.box.h).toBeGreaterThan(0.02);
    },
    60_000,
  );

  test("a frame with no text gives no lines; two frames at once share the one worker", async () => {
    const empty = await drawn("empty", flat("teal"), " ", "fontsize=10");
    expect(mayHaveText(empty)).toBe(false);
    const sign = await drawn(
      "sign",
      flat("black"),
      "Platform nine",
      `fontfile=${FONTS}/dejavu/DejaVuSans.ttf:fontsize=40:fontcolor=white:x=100:y=100`,
    );
    const [a, b] = await Promise.all([engine.recognize(empty), engine.recognize(sign)]);
    expect(a).toEqual([]);
    expect(b.map((l) => l.text)).toEqual(["Platform nine"]);
  }, 60_000);

  test("a closed engine refuses work", async () => {
    const e = new OcrEngine({ paths: devOcrPaths() });
    await e.close();
    await expect(e.recognize({ width: 2, height: 2, pixels: new Uint8Array(4) })).rejects.toThrow(/closed/);
  });
});
