import { hasCjk } from "../../core/cjk.ts";
import type { GrayFrame } from "../engine.ts";

/**
 * PP-OCR's line recognizer (`ch_PP-OCRv4_rec_infer.onnx`, SVTR + CTC): what goes in and how its
 * output is read. Pure functions; the ONNX session runs them in model.ts.
 *
 * In: one line cut out of the frame, scaled (bilinear) to 48 px high keeping its aspect, as a
 * [1, 3, 48, W] tensor in −1..1 (`x / 127.5 − 1`), padded on the right with 0 (mid gray) to at
 * least REC_MIN_WIDTH — PaddleOCR's `resize_norm_img`, whose batches are never narrower than
 * 320 px (the width the model was trained at). A box taller than 1.5× its width is a vertical
 * line and is turned a quarter to the left first, as PaddleOCR does.
 *
 * Out: [1, W/8, 6625], per time step a softmax over the CTC blank (0), the 6 623 characters of
 * `ppocr_keys_v1.txt` (1..6623) and a space (6624). Greedy decoding: the most likely class per
 * step, repeats merged, blanks dropped; the line's confidence is the mean probability of the
 * characters kept. Small Latin text (10 px captions in 240p video) often loses the spaces between
 * words: at the gap the blank wins, but the space class rises well above its level inside words
 * (≥ 0.035 at every gap of the road-trip caption, ≤ 0.0004 for 99 % of in-word gaps of the
 * drawn CER set, 0.021 in "Qua|rterly" at 40 px DejaVu Sans on navy, the highest seen). Such a
 * gap between two letters or digits that are not CJK becomes a space.
 */

export const REC_HEIGHT = 48;
export const REC_MIN_WIDTH = 320;
/** Longest line input: 48 × 25 (a whole-width caption at 1280 px, 30 px high, is ~43:1; wider lines are squeezed). */
export const REC_MAX_WIDTH = 48 * 40;

export interface RecInput {
  /** [1, 3, 48, width], float32. */
  data: Float32Array;
  width: number;
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The box's pixels (whole pixels inside the frame) as the recognizer's input. */
export function recInput(frame: GrayFrame, box: Box): RecInput {
  const x0 = Math.max(0, Math.floor(box.x));
  const y0 = Math.max(0, Math.floor(box.y));
  const x1 = Math.min(frame.width, Math.ceil(box.x + box.w));
  const y1 = Math.min(frame.height, Math.ceil(box.y + box.h));
  const cw = Math.max(1, x1 - x0);
  const ch = Math.max(1, y1 - y0);
  const vertical = ch >= 1.5 * cw;
  // The crop's sampling position for output (u, v): column u along the line, row v across it.
  const along = vertical ? ch : cw;
  const across = vertical ? cw : ch;
  const scaled = Math.max(1, Math.ceil((REC_HEIGHT * along) / across));
  const contentW = Math.min(REC_MAX_WIDTH, scaled);
  const width = Math.max(REC_MIN_WIDTH, Math.ceil(contentW / 8) * 8);
  const plane = width * REC_HEIGHT;
  const data = new Float32Array(3 * plane);
  const su = along / contentW;
  const sv = across / REC_HEIGHT;
  const px = frame.pixels;
  const fw = frame.width;
  for (let v = 0; v < REC_HEIGHT; v++) {
    const tv = Math.min(across - 1, Math.max(0, (v + 0.5) * sv - 0.5));
    const v0 = Math.floor(tv);
    const v1 = Math.min(across - 1, v0 + 1);
    const fv = tv - v0;
    for (let u = 0; u < contentW; u++) {
      const tu = Math.min(along - 1, Math.max(0, (u + 0.5) * su - 0.5));
      const u0 = Math.floor(tu);
      const u1 = Math.min(along - 1, u0 + 1);
      const fu = tu - u0;
      // Vertical: turned a quarter to the left, so the top of the line is its left end.
      const at = (a: number, c: number) =>
        vertical ? px[(y0 + a) * fw + (x0 + cw - 1 - c)] : px[(y0 + c) * fw + (x0 + a)];
      const p0 = at(u0, v0) + (at(u1, v0) - at(u0, v0)) * fu;
      const p1 = at(u0, v1) + (at(u1, v1) - at(u0, v1)) * fu;
      const value = (p0 + (p1 - p0) * fv) / 127.5 - 1;
      const i = v * width + u;
      data[i] = value;
      data[plane + i] = value;
      data[2 * plane + i] = value;
    }
  }
  return { data, width };
}

export interface Decoded {
  text: string;
  /** 0..1: mean probability of the characters kept (0 when none). */
  confidence: number;
}

/** A blank run between two characters whose space probability reaches this is a word gap (see above). */
export const SPACE_HINT = 0.03;

/**
 * Greedy CTC decoding of `probs` (steps × classes, row-major softmax): class 0 is the blank,
 * 1..keys.length the key list, keys.length + 1 a space.
 */
export function ctcDecode(probs: Float32Array, steps: number, classes: number, keys: readonly string[]): Decoded {
  const space = classes - 1;
  let text = "";
  let sum = 0;
  let n = 0;
  let prev = -1;
  /** Highest space probability since the last character. */
  let gap = 0;
  for (let t = 0; t < steps; t++) {
    const row = t * classes;
    let best = 0;
    let p = probs[row];
    for (let c = 1; c < classes; c++) {
      if (probs[row + c] > p) {
        p = probs[row + c];
        best = c;
      }
    }
    if (best === 0) {
      if (probs[row + space] > gap) gap = probs[row + space];
    } else if (best !== prev) {
      const ch = best <= keys.length ? keys[best - 1] : " ";
      const last = text.at(-1);
      if (gap >= SPACE_HINT && ch !== " " && last !== undefined && last !== " " && !hasCjk(last + ch)) text += " ";
      text += ch;
      sum += p;
      n++;
      gap = 0;
    }
    prev = best;
  }
  return { text, confidence: n ? sum / n : 0 };
}

/** The key list: one character a line (the file's last line has no newline). */
export function parseKeys(text: string): string[] {
  const keys = text.split("\n");
  if (keys.length && keys[keys.length - 1] === "") keys.pop();
  return keys.map((k) => k.replace(/\r$/, ""));
}
