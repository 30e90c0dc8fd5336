import type { GrayFrame, OcrEngine, OcrLine } from "./engine.ts";
import { MIN_CONFIDENCE, plausible } from "./tracks.ts";

/** Luma at or above which a pixel counts as the fill of white caption text (second pass). */
const BRIGHT_TEXT = 200;

export interface FrameReading {
  lines: OcrLine[];
  /** Recognitions it took: 1, or 2 when the bright-text pass ran. */
  passes: number;
}

/**
 * Reads a frame, with a second pass for one common caption style tesseract's global threshold
 * misses: white text with a dark outline over bright footage. Its threshold falls between the
 * outline and everything light, so the letters come out hollow and are read as junk ("Lap! time
 * 8 miln tte)" for "Lap time 1 minute"). When the first pass returns such a line (some
 * characters, confidence under MIN_CONFIDENCE), the frame is read again as black-on-white of its
 * brightest pixels only (luma ≥ 200), which is exactly the caption fill. Lines of the second
 * pass are added where the first pass had nothing confident over the same place.
 */
export async function readFrame(engine: OcrEngine, frame: GrayFrame): Promise<FrameReading> {
  const first = await engine.recognize(frame);
  const unsure = first.some((l) => l.confidence < MIN_CONFIDENCE && l.text.replace(/\s+/g, "").length >= 4);
  if (!unsure) return { lines: first, passes: 1 };
  const bright = new Uint8Array(frame.pixels.length);
  for (let i = 0; i < bright.length; i++) bright[i] = frame.pixels[i] >= BRIGHT_TEXT ? 0 : 255;
  const second = await engine.recognize({ width: frame.width, height: frame.height, pixels: bright });
  const kept = first.filter(plausible);
  const added = second.filter(plausible).filter((l) => !kept.some((k) => overlap(k.box, l.box) > 0.3));
  return { lines: [...kept, ...added].sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x), passes: 2 };
}

/** Intersection over the smaller box. */
function overlap(a: OcrLine["box"], b: OcrLine["box"]): number {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  return (w * h) / Math.min(a.w * a.h, b.w * b.h);
}
