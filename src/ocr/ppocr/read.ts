import type { GrayFrame, OcrLine } from "../engine.ts";
import { cropFrame, iou, regionOf, sameRegion, type RegionPixels } from "../regions.ts";
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

/**
 * Reads one frame with PP-OCR: the detector finds the text boxes; a box in the place of a line read
 * earlier (`known`, from the frames before) whose pixels still match (regions.ts) keeps that line's
 * text, and only the others go to the recognizer, all in one task. So a caption that stays on
 * screen while the footage moves is recognised once, not at every frame.
 */
export async function readWithPpOcr(
  engine: PpOcrEngine,
  frame: GrayFrame,
  known: readonly KnownLine[],
): Promise<PpOcrReading> {
  const boxes = await engine.detect(frame);
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
