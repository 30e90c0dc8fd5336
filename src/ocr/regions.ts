import type { GrayFrame } from "./engine.ts";

/**
 * "Is this still the text that was read here?" without reading it again (issue 28: text that does
 * not change is read once). A caption that stays on screen over moving footage changes the frame
 * everywhere but inside its own strokes: the frame-level signature (frame-test.ts) moves, but the
 * caption's edges stay where they were. So a region read earlier is compared with the same pixels
 * of the new frame on its edges: per column cell (half as wide as the box is high, about one
 * character), the strong steps of the old pixels must mostly still be there with the same sign,
 * and the new pixels must have few strong steps the old did not. A changed character moves the
 * steps of its cell ("Step 1 of 5" → "Step 2 of 5" fails in the digit's cell); compression noise
 * and a background that drifts behind boxed or outlined text do not.
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
/** … and one still counts as the same edge at half that, same sign (noise moves steps a little). */
const KEEP = STEP / 2;
/**
 * Share of a cell's edges that must be found again, both ways. Measured on 32 px captions (white,
 * outlined, boxed, shadowed; Latin and CJK) over moving footage through H.264 at CRF 28: the same
 * text kept ≥ 0.94 in every cell, one character changed ("Step 1" → "Step 2", 预算 → 预箅,
 * 一 → 二) ≤ 0.74 in its cell.
 */
const AGREE = 0.85;
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

/** Whether `frame` still shows what `r` showed, inside r's box (see the header). */
export function sameRegion(r: RegionPixels, frame: GrayFrame): boolean {
  const { x: bx, y: by, w, h } = r.box;
  if (w < 3 || h < 1 || bx + w > frame.width || by + h > frame.height) return false;
  // Half the box's height: about one character of Latin text (the box has a margin round the line).
  const cell = Math.max(4, Math.round(h / 2));
  const cells = Math.ceil(w / cell);
  const oldEdges = new Uint32Array(cells);
  const newEdges = new Uint32Array(cells);
  const oldKept = new Uint32Array(cells);
  const newKept = new Uint32Array(cells);
  const old = r.pixels;
  const px = frame.pixels;
  const fw = frame.width;
  const tally = (c: number, a: number, b: number) => {
    const strongA = a > STEP || a < -STEP;
    const strongB = b > STEP || b < -STEP;
    if (strongA) {
      oldEdges[c]++;
      if ((a > 0 && b > KEEP) || (a < 0 && b < -KEEP)) oldKept[c]++;
    }
    if (strongB) {
      newEdges[c]++;
      if ((b > 0 && a > KEEP) || (b < 0 && a < -KEEP)) newKept[c]++;
    }
  };
  for (let y = 0; y < h; y++) {
    const orow = y * w;
    const nrow = (by + y) * fw + bx;
    for (let x = 1; x < w - 1; x++) {
      const c = Math.floor(x / cell);
      // Across: steps of vertical strokes.
      tally(c, old[orow + x + 1] - old[orow + x - 1], px[nrow + x + 1] - px[nrow + x - 1]);
      // Down: steps of horizontal strokes (一, 二, "-", the bar of "e").
      if (y > 0 && y < h - 1) tally(c, old[orow + w + x] - old[orow - w + x], px[nrow + fw + x] - px[nrow - fw + x]);
    }
  }
  for (let c = 0; c < cells; c++) {
    const a = oldEdges[c];
    const b = newEdges[c];
    if (a < FEW && b < FEW) {
      if (Math.abs(a - b) > FEW / 2) return false;
      continue;
    }
    if (oldKept[c] < AGREE * a || newKept[c] < AGREE * b) return false;
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
