import type { GrayFrame } from "../engine.ts";

/**
 * PP-OCR's text detector (DBNet, `ch_PP-OCRv4_det_infer.onnx`): what goes in and what its
 * probability map means. Pure functions; the ONNX session runs them in model.ts.
 *
 * In: the frame shrunk so its long side is at most `maxSide` (never enlarged), both sides rounded to
 * multiples of 32 (the network downsamples by 32), as a [1, 3, H, W] float tensor normalised with
 * ImageNet's mean and std — PaddleOCR's `DetResizeForTest` (limit_type "max") and
 * `NormalizeImage`. Our frames are gray: each of the three channels gets the same luma.
 *
 * Out: a [1, 1, H, W] map, per pixel the probability that it lies in the shrunk core of a text
 * region. `textBoxes` turns it into boxes as PaddleOCR's `DBPostProcess` does: threshold at 0.3,
 * connected regions, a region's score is the mean probability over its box (dropped under 0.6),
 * then the box is grown back ("unclip") by area × 1.5 / perimeter on every side, since the network
 * was trained to mark a core shrunk by that much. Boxes are axis-aligned: captions, titles and
 * signs in video are horizontal, and a tilted line still lands inside its box (PaddleOCR fits a
 * rotated rectangle; what it buys for tilted text is not worth its cost here).
 */

export interface DetInput {
  /** [1, 3, height, width], float32. */
  data: Float32Array;
  width: number;
  height: number;
}

/** A box in frame pixels, and the detector's mean probability over it. */
export interface TextBox {
  x: number;
  y: number;
  w: number;
  h: number;
  score: number;
}

export interface DetParams {
  /** A pixel is text above this probability. PaddleOCR: 0.3. */
  threshold: number;
  /** A region's mean probability over its box must reach this. PaddleOCR: 0.6. */
  boxThreshold: number;
  /** How far a region is grown back: area × ratio / perimeter. PaddleOCR: 1.5 (RapidOCR 1.6). */
  unclipRatio: number;
  /** Regions with a side under this (map pixels) are noise. PaddleOCR: 3. */
  minSide: number;
}

/**
 * Detector input's long side. 960 is PaddleOCR's default; a 1280×720 frame becomes 960×544, where
 * a 12 px caption line is still found (bench/ocr-bench.ts).
 */
export const DET_MAX_SIDE = 960;

export const DET_PARAMS: DetParams = { threshold: 0.3, boxThreshold: 0.6, unclipRatio: 1.5, minSide: 3 };

const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];

/** The detector's input size for a frame: long side ≤ maxSide, multiples of 32, at least 32. */
export function detSize(width: number, height: number, maxSide: number): { width: number; height: number } {
  const ratio = Math.min(1, maxSide / Math.max(width, height));
  const round32 = (n: number) => Math.max(32, Math.round((n * ratio) / 32) * 32);
  return { width: round32(width), height: round32(height) };
}

/** The frame as the detector's input tensor (bilinear resize, as cv2.resize's default). */
export function detInput(frame: GrayFrame, maxSide: number): DetInput {
  const { width, height } = detSize(frame.width, frame.height, maxSide);
  const plane = resizeBilinear(frame, width, height);
  const n = width * height;
  const data = new Float32Array(3 * n);
  for (let c = 0; c < 3; c++) {
    const scale = 1 / 255 / STD[c];
    const shift = MEAN[c] / STD[c];
    const base = c * n;
    for (let i = 0; i < n; i++) data[base + i] = plane[i] * scale - shift;
  }
  return { data, width, height };
}

/**
 * Boxes of text from the probability map (`map`: mapW × mapH, the detector's input size), in the
 * pixels of a frame of frameW × frameH, top to bottom then left to right.
 */
export function textBoxes(
  map: Float32Array,
  mapW: number,
  mapH: number,
  frameW: number,
  frameH: number,
  p: DetParams = DET_PARAMS,
): TextBox[] {
  const label = new Int32Array(mapW * mapH);
  const stack = new Int32Array(mapW * mapH);
  const boxes: TextBox[] = [];
  const sx = frameW / mapW;
  const sy = frameH / mapH;
  let next = 0;
  for (let start = 0; start < map.length; start++) {
    if (label[start] !== 0 || !(map[start] > p.threshold)) continue;
    // One 8-connected region (OpenCV's findContours on the bitmap traces the same outer shapes).
    next++;
    let x0 = mapW;
    let y0 = mapH;
    let x1 = -1;
    let y1 = -1;
    let top = 0;
    stack[top++] = start;
    label[start] = next;
    while (top > 0) {
      const i = stack[--top];
      const x = i % mapW;
      const y = (i - x) / mapW;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
      for (let dy = -1; dy <= 1; dy++) {
        const yy = y + dy;
        if (yy < 0 || yy >= mapH) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const xx = x + dx;
          if (xx < 0 || xx >= mapW) continue;
          const j = yy * mapW + xx;
          if (label[j] === 0 && map[j] > p.threshold) {
            label[j] = next;
            stack[top++] = j;
          }
        }
      }
    }
    const w = x1 - x0 + 1;
    const h = y1 - y0 + 1;
    if (Math.min(w, h) < p.minSide) continue;
    // "fast" score: the mean probability over the region's box.
    let sum = 0;
    for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) sum += map[y * mapW + x];
    const score = sum / (w * h);
    if (score < p.boxThreshold) continue;
    const d = (w * h * p.unclipRatio) / (2 * (w + h));
    if (Math.min(w, h) + 2 * d < p.minSide + 2) continue;
    const bx0 = Math.max(0, (x0 - d) * sx);
    const by0 = Math.max(0, (y0 - d) * sy);
    const bx1 = Math.min(frameW, (x1 + 1 + d) * sx);
    const by1 = Math.min(frameH, (y1 + 1 + d) * sy);
    boxes.push({ x: bx0, y: by0, w: bx1 - bx0, h: by1 - by0, score });
  }
  return sortReadingOrder(boxes);
}

/** Top to bottom; boxes whose tops are within half a line of each other, left to right. */
export function sortReadingOrder<B extends { x: number; y: number; h: number }>(boxes: B[]): B[] {
  const byTop = [...boxes].sort((a, b) => a.y - b.y || a.x - b.x);
  const out: B[] = [];
  let row: B[] = [];
  for (const b of byTop) {
    if (row.length && b.y - row[0].y > Math.min(row[0].h, b.h) / 2) {
      out.push(...row.sort((a, c) => a.x - c.x));
      row = [];
    }
    row.push(b);
  }
  out.push(...row.sort((a, c) => a.x - c.x));
  return out;
}

/** Bilinear resize of a gray frame (pixel centres aligned, as cv2.INTER_LINEAR). */
export function resizeBilinear(f: GrayFrame, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  const sx = f.width / width;
  const sy = f.height / height;
  const xs0 = new Int32Array(width);
  const xs1 = new Int32Array(width);
  const fx = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const s = Math.min(f.width - 1, Math.max(0, (x + 0.5) * sx - 0.5));
    xs0[x] = Math.floor(s);
    xs1[x] = Math.min(f.width - 1, xs0[x] + 1);
    fx[x] = s - xs0[x];
  }
  for (let y = 0; y < height; y++) {
    const s = Math.min(f.height - 1, Math.max(0, (y + 0.5) * sy - 0.5));
    const y0 = Math.floor(s);
    const y1 = Math.min(f.height - 1, y0 + 1);
    const fy = s - y0;
    const r0 = y0 * f.width;
    const r1 = y1 * f.width;
    const o = y * width;
    for (let x = 0; x < width; x++) {
      const a = f.pixels[r0 + xs0[x]] + (f.pixels[r0 + xs1[x]] - f.pixels[r0 + xs0[x]]) * fx[x];
      const b = f.pixels[r1 + xs0[x]] + (f.pixels[r1 + xs1[x]] - f.pixels[r1 + xs0[x]]) * fx[x];
      out[o + x] = a + (b - a) * fy;
    }
  }
  return out;
}
