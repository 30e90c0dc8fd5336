import type { GrayFrame } from "./engine.ts";
import { dilate1d } from "./read-frame.ts";

/**
 * "Is this still the text that was read here?" without reading it again (issue 28: text that does
 * not change is read once). A caption that stays on screen over moving footage changes the frame
 * everywhere but inside its own strokes: the frame-level signature (frame-test.ts) moves, but the
 * caption's edges stay where they were. So a region read earlier is compared with the same pixels
 * of the new frame on its edges: per column cell (half as wide as the box is high, about one
 * character), the strong steps of the old pixels must mostly still be there with the same sign,
 * and the new pixels' strong steps must mostly lie within two pixels of old ones (an outline's
 * outer edge comes and goes as the footage behind it darkens or brightens). A changed character
 * moves the steps of its cell ("Step 1 of 5" → "Step 2 of 5" fails in the digit's cell);
 * compression noise and a background that drifts behind boxed or outlined text do not.
 */

/** A box in frame pixels. */
export interface PixelBox {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** What a region looked like where it was read: its box and those pixels (w × h, row-major). */
export interface RegionPixels {
  box: PixelBox;
  pixels: Uint8Array;
}

/** A step between pixels two apart larger than this is an edge. */
const STEP = 64;
/** … and an old edge is still there when the new pixels step at least this much the same way. */
const KEEP = 16;
/** A new edge within this many pixels of an old one belongs to the same stroke (its outline against a changed background). */
const NEAR = 2;
/**
 * Shares of a cell's edges that must agree: the old ones found again, the new ones near old ones.
 * Measured on 32 px captions (white, outlined, boxed, shadowed; Latin and CJK) over moving footage
 * through H.264 at CRF 28: the same text kept ≥ 0.94 of its old edges in every cell and had ≥ 0.97
 * of its new edges near old ones; one character changed ("Step 1" → "Step 2", "7", "4";
 * 预算 → 预箅; 一 → 二, 十) kept ≤ 0.80 in its cell.
 */
const KEPT = 0.88;
const EXPLAINED = 0.9;
/** Cells with fewer edges than this (gaps between words) need only about as many. */
const FEW = 6;

/** The box rounded out to whole pixels inside the frame. */
export function wholeBox(frame: { width: number; height: number }, b: PixelBox): PixelBox {
  const x0 = Math.max(0, Math.floor(b.x));
  const y0 = Math.max(0, Math.floor(b.y));
  const x1 = Math.min(frame.width, Math.ceil(b.x + b.w));
  const y1 = Math.min(frame.height, Math.ceil(b.y + b.h));
  return { x: x0, y: y0, w: Math.max(0, x1 - x0), h: Math.max(0, y1 - y0) };
}

/** The pixels of a box (rounded out to whole pixels) as a frame of their own. */
export function cropFrame(frame: GrayFrame, b: PixelBox): GrayFrame {
  const box = wholeBox(frame, b);
  const pixels = new Uint8Array(box.w * box.h);
  for (let y = 0; y < box.h; y++) {
    const from = (box.y + y) * frame.width + box.x;
    pixels.set(frame.pixels.subarray(from, from + box.w), y * box.w);
  }
  return { width: box.w, height: box.h, pixels };
}

/** Remembers a region as read in `frame`. */
export function regionOf(frame: GrayFrame, b: PixelBox): RegionPixels {
  const box = wholeBox(frame, b);
  return { box, pixels: cropFrame(frame, box).pixels };
}

const strong = (d: number) => d > STEP || d < -STEP;

/** Whether `frame` still shows what `r` showed, inside r's box (see the header). */
export function sameRegion(r: RegionPixels, frame: GrayFrame): boolean {
  const { x: bx, y: by, w, h } = r.box;
  if (w < 3 || h < 3 || bx + w > frame.width || by + h > frame.height) return false;
  const old = r.pixels;
  const px = frame.pixels;
  const fw = frame.width;
  // Where the old pixels have an edge, grown by NEAR (a square max filter: rows, then columns).
  const near = new Uint8Array(w * h);
  for (let y = 1; y < h - 1; y++) {
    const o = y * w;
    for (let x = 1; x < w - 1; x++)
      if (strong(old[o + x + 1] - old[o + x - 1]) || strong(old[o + x + w] - old[o + x - w])) near[o + x] = 1;
  }
  const grown = dilate1d(dilate1d(near, w, h, 1, w, NEAR), h, w, w, 1, NEAR);
  // Half the box's height: about one character of Latin text (the box has a margin round the line).
  const cell = Math.max(4, Math.round(h / 2));
  const cells = Math.ceil(w / cell);
  const oldEdges = new Uint32Array(cells);
  const newEdges = new Uint32Array(cells);
  const kept = new Uint32Array(cells);
  const explained = new Uint32Array(cells);
  const tally = (c: number, a: number, b: number, nearOld: number) => {
    if (strong(a)) {
      oldEdges[c]++;
      if ((a > 0 && b > KEEP) || (a < 0 && b < -KEEP)) kept[c]++;
    }
    if (strong(b)) {
      newEdges[c]++;
      explained[c] += nearOld;
    }
  };
  for (let y = 1; y < h - 1; y++) {
    const orow = y * w;
    const nrow = (by + y) * fw + bx;
    for (let x = 1; x < w - 1; x++) {
      const c = Math.floor(x / cell);
      const n = grown[orow + x];
      // Across: steps of vertical strokes; down: of horizontal ones (一, 二, "-", the bar of "e").
      tally(c, old[orow + x + 1] - old[orow + x - 1], px[nrow + x + 1] - px[nrow + x - 1], n);
      tally(c, old[orow + x + w] - old[orow + x - w], px[nrow + x + fw] - px[nrow + x - fw], n);
    }
  }
  for (let c = 0; c < cells; c++) {
    const a = oldEdges[c];
    const b = newEdges[c];
    if (a < FEW && b < FEW) {
      if (Math.abs(a - b) > FEW / 2) return false;
      continue;
    }
    if (kept[c] < KEPT * a || explained[c] < EXPLAINED * b) return false;
  }
  return true;
}

/** Intersection over union of two boxes. */
export function iou(a: PixelBox, b: PixelBox): number {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  const i = w * h;
  return i / (a.w * a.h + b.w * b.h - i);
}
