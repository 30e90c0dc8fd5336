import type { GrayFrame, OcrEngine, OcrLine } from "./engine.ts";
import { plausible } from "./tracks.ts";

/** Luma at or above which a pixel counts as the fill of white caption text (second pass). */
const BRIGHT_TEXT = 200;
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
 * without such strokes cost one recognition. A second-pass line replaces the unsure first-pass
 * lines it overlaps when it holds more letters.
 */
export async function readFrame(engine: OcrEngine, frame: GrayFrame): Promise<FrameReading> {
  const first = await engine.recognize(frame);
  const kept = first.filter(plausible);
  const unsure = kept.length === 0 || first.some((l) => l.confidence < SURE && letters(l.text) >= 3);
  if (!unsure || !whiteOnDark(frame)) return { lines: first, passes: 1 };
  const second = (await engine.recognize(outlinedFill(frame))).filter(plausible);
  // A confident first-pass line stays; an unsure one gives way to a second-pass line over it
  // that holds more letters; second-pass lines over nothing are added.
  let lines = kept;
  for (const l of second) {
    const over = lines.filter((k) => overlap(k.box, l.box) > 0.3);
    if (over.length === 0) lines = [...lines, l];
    else if (over.every((k) => k.confidence < SURE) && letters(l.text) > over.reduce((s, k) => s + letters(k.text), 0)) {
      lines = [...lines.filter((k) => !over.includes(k)), l];
    }
  }
  return { lines: lines.sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x), passes: 2 };
}

const letters = (s: string) => (s.match(/[\p{L}\p{N}]/gu) ?? []).length;

/**
 * Whether the frame has white strokes edged in near-black (outlined or boxed white text): at
 * least 0.1 % of pixels ≥ 220 with a pixel ≤ 60 two columns away. One short caption line at
 * 24 px has ~0.4 %; daylight footage rarely has any.
 */
export function whiteOnDark(f: GrayFrame): boolean {
  const { width, height, pixels } = f;
  let n = 0;
  const need = Math.max(1, Math.floor(width * height * 0.001));
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
 * Black-on-white of the pixels that are bright (luma ≥ 200) and within FILL_REACH px of a
 * near-black one (≤ 60): the fill of outlined or boxed white text, without bright sky or walls
 * elsewhere in the picture. The "near a dark pixel" map is a square max filter, done as two
 * running-window passes (rows, then columns).
 */
export function outlinedFill(f: GrayFrame): GrayFrame {
  const { width: w, height: h, pixels } = f;
  const dark = new Uint8Array(w * h);
  for (let i = 0; i < dark.length; i++) dark[i] = pixels[i] <= 60 ? 1 : 0;
  const rows = dilate1d(dark, w, h, 1, w, FILL_REACH);
  const near = dilate1d(rows, h, w, w, 1, FILL_REACH);
  const out = new Uint8Array(w * h);
  for (let i = 0; i < out.length; i++) out[i] = pixels[i] >= BRIGHT_TEXT && near[i] ? 0 : 255;
  return { width: w, height: h, pixels: out };
}

/** 1-D max filter of radius r along lines of `len` samples `step` apart; `lines` lines `stride` apart. */
function dilate1d(src: Uint8Array, len: number, lines: number, step: number, stride: number, r: number): Uint8Array {
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
