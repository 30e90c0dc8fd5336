import type { GrayFrame, OcrLine } from "../engine.ts";
import { textBands, type Band } from "../frame-test.ts";
import { cropFrame, iou, regionOf, sameRegion, type RegionPixels } from "../regions.ts";
import { detSize, type TextBox } from "./detect.ts";
import type { PpOcrEngine } from "./engine.ts";

/** A line PP-OCR read, with the pixels it was read from (kept to spot the same text later). */
export interface KnownLine extends RegionPixels {
  text: string;
  /** 0..100. */
  confidence: number;
}

export interface PpOcrReading {
  lines: OcrLine[];
  /** Every box read or reused at this frame, to hand to the next call. */
  known: KnownLine[];
  /** Boxes the recognizer read at this frame. */
  recognized: number;
  /** Boxes whose text was taken from an earlier read (same place, same pixels). */
  reused: number;
}

/** A detected box is "the same place" as a known line's when they overlap this much (IoU). */
const SAME_PLACE = 0.7;

/** Past this share of the frame's height in bands, the detector gets the whole frame in one go. */
const WHOLE_FRAME_SHARE = 0.6;

/**
 * Reads one frame with PP-OCR: the detector finds the text boxes (in the frame's text bands only,
 * detectInBands); a box in the place of a line read
 * earlier (`known`, from the frames before) whose pixels still match (regions.ts) keeps that line's
 * text, and only the others go to the recognizer, all in one task. So a caption that stays on
 * screen while the footage moves is recognised once, not at every frame.
 */
export async function readWithPpOcr(
  engine: PpOcrEngine,
  frame: GrayFrame,
  known: readonly KnownLine[],
): Promise<PpOcrReading> {
  const boxes = await detectInBands(engine, frame);
  const next: (KnownLine | null)[] = boxes.map((b) => {
    const k = known.find((x) => iou(x.box, b) >= SAME_PLACE && sameRegion(x, frame));
    return k ?? null;
  });
  const todo = boxes.map((b, i) => (next[i] ? null : b)).filter((b) => b !== null);
  const texts = await engine.recognize(todo.map((b) => cropFrame(frame, b)));
  let t = 0;
  const all: KnownLine[] = boxes.map((b, i) => {
    if (next[i]) return next[i];
    const r = texts[t++];
    return { ...regionOf(frame, b), text: r.text.trim(), confidence: Math.round(r.confidence * 1000) / 10 };
  });
  const lines: OcrLine[] = all
    .filter((k) => k.text.length > 0)
    .map((k) => ({
      text: k.text,
      confidence: k.confidence,
      box: {
        x: k.box.x / frame.width,
        y: k.box.y / frame.height,
        w: k.box.w / frame.width,
        h: k.box.h / frame.height,
      },
    }));
  return { lines, known: all, recognized: todo.length, reused: boxes.length - todo.length };
}

/**
 * The detector's boxes for the frame, found in its text bands (frame-test.ts `textBands`: the rows
 * of cells where the cheap test saw text) rather than in the whole frame. A full-width band is
 * scaled exactly as the whole frame would be (its long side is the frame's width), so text looks
 * the same to the network; it is only given fewer rows. On a frame with one caption the detector
 * reads ~a fifth of the pixels: the detector was half of the `ocr` stage's time (BENCHMARKS.md).
 * Bands covering most of the frame, or none (a frame read without the cheap test), read the whole
 * frame.
 */
export async function detectInBands(engine: PpOcrEngine, frame: GrayFrame): Promise<TextBox[]> {
  const bands = textBands(frame).map((b) => fitBand(b, frame, engine.detMaxSide));
  const rows = bands.reduce((n, b) => n + b.y1 - b.y0, 0);
  if (bands.length === 0 || rows >= WHOLE_FRAME_SHARE * frame.height) return engine.detect(frame);
  const found = await Promise.all(
    bands.map((b) =>
      engine.detect({
        width: frame.width,
        height: b.y1 - b.y0,
        // Full-width rows are one contiguous run of the frame's pixels: no copy here.
        pixels: frame.pixels.subarray(b.y0 * frame.width, b.y1 * frame.width),
      }),
    ),
  );
  return found.flatMap((boxes, i) => boxes.map((x) => ({ ...x, y: x.y + bands[i].y0 })));
}

/**
 * The band grown (downwards, or upwards at the frame's bottom) until the detector's input height
 * is a whole multiple of 32 at the frame's scale, so the network sees the band unstretched.
 */
function fitBand(b: Band, frame: GrayFrame, maxSide: number): Band {
  const h = b.y1 - b.y0;
  const scaled = detSize(frame.width, h, maxSide);
  const ratio = scaled.width / frame.width;
  const want = Math.min(frame.height, Math.ceil((Math.ceil((h * ratio) / 32) * 32) / ratio));
  const y1 = Math.min(frame.height, b.y0 + want);
  return { y0: Math.max(0, y1 - want), y1 };
}
