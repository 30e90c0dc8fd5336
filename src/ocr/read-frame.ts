import type { GrayFrame, OcrEngine, OcrLine } from "./engine.ts";
import { plausible } from "./tracks.ts";

/**
 * Luma at or above which a pixel may be the fill of white caption text (second pass). Low enough to
 * keep the anti-aliased middle of 1–2 px strokes at 20 px (at 200 they broke apart: 51 % CER at
 * 20 px against 0.8 %); bright footage above it is told apart by the piece test in `outlinedFill`.
 */
const BRIGHT_TEXT = 160;
/** A first-pass line under this confidence over outlined white text means it was misread. */
const SURE = 90;

export interface FrameReading {
  lines: OcrLine[];
  /** Recognitions it took: 1, or 2 when the bright-text pass ran. */
  passes: number;
}

/**
 * Reads a frame, with a second pass for one common caption style tesseract's global threshold
 * misses: white text with a dark outline over bright footage. Its threshold falls between the
 * outline and everything light, so the letters come out hollow and are read as junk ("Lap! time
 * 8 miln tte)" for "Lap time 1 minute") or cut short. The second pass reads the frame again as
 * black-on-white of the caption fill only (`outlinedFill`).
 * It runs only when the frame has white strokes edged in near-black (`whiteOnDark`) and the first
 * pass was unsure there or found nothing, so boxed captions read at high confidence and footage
 * without such strokes cost one recognition. A second-pass line replaces the first-pass lines it
 * overlaps when it holds more letters and they were unsure or it is sure.
 */
export async function readFrame(engine: OcrEngine, frame: GrayFrame): Promise<FrameReading> {
  const first = await engine.recognize(frame);
  const kept = first.filter(plausible);
  const unsure = kept.length === 0 || first.some((l) => l.confidence < SURE && letters(l.text) >= 3);
  if (!unsure || !whiteOnDark(frame)) return { lines: first, passes: 1 };
  const second = (await engine.recognize(outlinedFill(frame))).filter(plausible);
  // First-pass lines give way to a second-pass line over them that holds more letters, when they
  // were all unsure or it is sure itself: over bright footage the first pass often reads the start
  // of a caption confidently and stops ("Research sta" @ 92 for "Research station weather", which
  // the fill reads @ 96). Second-pass lines over nothing are added.
  let lines = kept;
  for (const l of second) {
    const over = lines.filter((k) => overlap(k.box, l.box) > 0.3);
    if (over.length === 0) lines = [...lines, l];
    else if (
      (l.confidence >= SURE || over.every((k) => k.confidence < SURE)) &&
      letters(l.text) > over.reduce((s, k) => s + letters(k.text), 0)
    ) {
      lines = [...lines.filter((k) => !over.includes(k)), l];
    }
  }
  return { lines: lines.sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x), passes: 2 };
}

const letters = (s: string) => (s.match(/[\p{L}\p{N}]/gu) ?? []).length;

/**
 * Whether the frame has white strokes edged in near-black (outlined or boxed white text): at
 * least 0.03 % of pixels ≥ 220 with a pixel ≤ 60 two columns away. One three-word caption line
 * at 24 px has ~0.1 % (at 0.1 % the gate missed half of those), at 16 px ~0.05 %; the blurred
 * footage of the bench has none, daylight footage rarely any.
 */
export function whiteOnDark(f: GrayFrame): boolean {
  const { width, height, pixels } = f;
  let n = 0;
  const need = Math.max(1, Math.floor(width * height * 0.0003));
  for (let y = 0; y < height; y += 2) {
    const row = y * width;
    for (let x = 2; x < width - 2; x++) {
      const p = pixels[row + x];
      if (p >= 220 && (pixels[row + x - 2] <= 60 || pixels[row + x + 2] <= 60)) {
        // Every other row was scanned: count double.
        n += 2;
        if (n >= need) return true;
      }
    }
  }
  return false;
}

/** How far (px) a fill pixel may be from the dark outline: half the stroke width of 48 px text. */
const FILL_REACH = 4;
/**
 * Pieces of fewer pixels are grain: footage just under BRIGHT_TEXT next to the outline breaks up
 * into 1–2 px specks above it, which read as stray marks ("platfórm").
 */
const MIN_PIECE = 3;
/** How far (luma) a piece's brightest pixel may be under the whitest piece's and still count as fill. */
const POCKET_GAP = 12;
/** A fill piece taller than this share of the frame is bright footage, not a letter (48 px text: ~7 %). */
const MAX_PIECE_H = 1 / 6;
/** … or wider than this share (one letter's fill; a caption box's inside is one piece, so boxes go too, but the first pass reads those). */
const MAX_PIECE_W = 1 / 8;

/**
 * Black-on-white of the fill of outlined white text: pixels that are bright (≥ BRIGHT_TEXT) and within
 * FILL_REACH px of a near-black one (≤ 60), kept only where they form a small piece (4-connected
 * bright pixels) that the dark outline closes off. Over bright footage the footage next to the
 * outline is as bright as the letters: without the piece test it joins the fill as a halo round
 * every letter and the words read as blobs ("Harbourmuse uy quarts"); that halo is one piece with
 * the whole bright field, so its size drops it. A letter's counter over bright footage (the hole in
 * "o", "e", "a") is also a small closed-off piece, but one lying inside its letter's fill piece: a
 * piece whose box lies strictly inside another kept piece's box is dropped, so "o" stays hollow.
 * The "near a dark pixel" map is a square max filter, done as two running-window passes.
 */
export function outlinedFill(f: GrayFrame): GrayFrame {
  const { width: w, height: h, pixels } = f;
  const dark = new Uint8Array(w * h);
  for (let i = 0; i < dark.length; i++) dark[i] = pixels[i] <= 60 ? 1 : 0;
  const rows = dilate1d(dark, w, h, 1, w, FILL_REACH);
  const near = dilate1d(rows, h, w, w, 1, FILL_REACH);
  const out = new Uint8Array(w * h).fill(255);
  const pieces = brightPieces(f);
  const maxH = Math.max(8, h * MAX_PIECE_H);
  const maxW = Math.max(8, w * MAX_PIECE_W);
  let small = pieces.boxes.filter((b) => b.n >= MIN_PIECE && b.y1 - b.y0 < maxH && b.x1 - b.x0 < maxW);
  // Pockets of footage wedged between two letters' outlines are closed off too, but a shade darker
  // than the flat fill: a piece whose brightest pixel is well under the whitest piece's goes (the
  // brightest pixel, not the mean: a thin stroke at 20 px is mostly anti-aliased edge).
  const white = small.reduce((m, b) => Math.max(m, b.max), 0);
  small = small.filter((b) => b.max >= white - POCKET_GAP);
  // Counters: a small piece strictly inside another small piece's box. Sorted by left edge, so
  // only boxes starting further left, by less than the widest piece, can hold it.
  small.sort((a, b) => a.x0 - b.x0);
  const keep = new Uint8Array(pieces.boxes.length);
  for (let i = 0; i < small.length; i++) {
    const b = small[i];
    let inside = false;
    for (let j = i - 1; j >= 0 && !inside; j--) {
      const o = small[j];
      if (o.x0 < b.x0 - maxW) break;
      if (o.x0 < b.x0 && o.x1 > b.x1 && o.y0 < b.y0 && o.y1 > b.y1) inside = true;
    }
    if (!inside) keep[b.id] = 1;
  }
  for (let i = 0; i < out.length; i++) {
    const id = pieces.label[i];
    if (id > 0 && keep[id - 1] && near[i]) out[i] = 0;
  }
  return { width: w, height: h, pixels: out };
}

interface Box {
  id: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  n: number;
  max: number;
}

/** 4-connected pieces of pixels ≥ BRIGHT_TEXT: a label per pixel (0 = not bright, else id + 1) and each piece's box. */
function brightPieces(f: GrayFrame): { label: Int32Array; boxes: Box[] } {
  const { width: w, height: h, pixels } = f;
  const label = new Int32Array(w * h);
  const boxes: Box[] = [];
  const stack = new Int32Array(w * h);
  for (let start = 0; start < label.length; start++) {
    if (label[start] !== 0 || pixels[start] < BRIGHT_TEXT) continue;
    const id = boxes.length;
    const box = { id, x0: w, y0: h, x1: -1, y1: -1, n: 0, max: 0 };
    let top = 0;
    stack[top++] = start;
    label[start] = id + 1;
    while (top > 0) {
      const i = stack[--top];
      const x = i % w;
      const y = (i - x) / w;
      box.n++;
      if (pixels[i] > box.max) box.max = pixels[i];
      if (x < box.x0) box.x0 = x;
      if (x > box.x1) box.x1 = x;
      if (y < box.y0) box.y0 = y;
      if (y > box.y1) box.y1 = y;
      if (x > 0 && label[i - 1] === 0 && pixels[i - 1] >= BRIGHT_TEXT) {
        label[i - 1] = id + 1;
        stack[top++] = i - 1;
      }
      if (x < w - 1 && label[i + 1] === 0 && pixels[i + 1] >= BRIGHT_TEXT) {
        label[i + 1] = id + 1;
        stack[top++] = i + 1;
      }
      if (y > 0 && label[i - w] === 0 && pixels[i - w] >= BRIGHT_TEXT) {
        label[i - w] = id + 1;
        stack[top++] = i - w;
      }
      if (y < h - 1 && label[i + w] === 0 && pixels[i + w] >= BRIGHT_TEXT) {
        label[i + w] = id + 1;
        stack[top++] = i + w;
      }
    }
    boxes.push(box);
  }
  return { label, boxes };
}

/** 1-D max filter of radius r along lines of `len` samples `step` apart; `lines` lines `stride` apart. */
export function dilate1d(
  src: Uint8Array,
  len: number,
  lines: number,
  step: number,
  stride: number,
  r: number,
): Uint8Array {
  const out = new Uint8Array(src.length);
  for (let l = 0; l < lines; l++) {
    const base = l * stride;
    let count = 0;
    for (let i = 0; i < Math.min(r, len); i++) count += src[base + i * step];
    for (let i = 0; i < len; i++) {
      if (i + r < len) count += src[base + (i + r) * step];
      if (i - r - 1 >= 0) count -= src[base + (i - r - 1) * step];
      out[base + i * step] = count > 0 ? 1 : 0;
    }
  }
  return out;
}

/** Intersection over the smaller box. */
function overlap(a: OcrLine["box"], b: OcrLine["box"]): number {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  return (w * h) / Math.min(a.w * a.h, b.w * b.h);
}
