import type { GrayFrame } from "./engine.ts";
import type { PixelBox } from "./regions.ts";

/**
 * The cheap tests that decide which frames go to OCR (a recognition costs 80–300 ms; these cost a
 * few ms on a 1280×720 frame).
 *
 * `mayHaveText`: text is rows of sharp, dense vertical strokes. The frame is cut into 32 px cells;
 * a cell is "busy" when enough of its pixels sit on a strong horizontal-intensity step; a frame
 * may carry text when some cell row has `MIN_RUN` busy cells side by side (a word at ≥ 16 px is at
 * least that wide). Flat colours, gradients, sky and soft footage fail it and skip OCR; sharp
 * detail (a skyline, a roof, foliage in native-resolution footage) can pass it, which only costs a
 * recognition that finds nothing.
 *
 * "Strong" is a step of more than `EDGE_STEP` over two pixels. Rendered text is a near-full
 * contrast step within a pixel or two: every caption frame of bench/ocr-bench.ts's CER set (flat
 * colours, boxes, outlines, 12–48 px) passes with the threshold as high as 108; of its captions
 * drawn over real footage, every one OCR can read passes at 88 (one it cannot, yellow over bright
 * grass, nearly white in luma, does not); textured footage is softer: the ingest bench clip's 60
 * frames (grass, water, fur; real footage scaled to 1080p) all fail once it is above 76. It was
 * 48, which let 22 of those 60 frames through to a ~300 ms recognition. The price: text with less
 * than about a third of full contrast between letters and background (88/255, e.g. mid-gray on
 * dark gray) is not read; ocr-bench measures that floor.
 *
 * `signature` / `changed`: a 32×18 grid of mean luma. A frame whose grid matches the last frame
 * read (no cell moved more than `CELL_DELTA`) shows the same text: its lines are carried over
 * instead of read again. A caption swapped over a still picture moves the cells under it by far
 * more than that; compression noise and slow fades do not.
 */

const CELL = 32;
export const EDGE_STEP = 88;
const BUSY_SHARE = 0.06;
const MIN_RUN = 2;
const GRID_W = 32;
const GRID_H = 18;
const CELL_DELTA = 6;

export function mayHaveText(f: GrayFrame): boolean {
  return mayHaveTextAt(f, EDGE_STEP);
}

/**
 * mayHaveText with another step threshold: for benchmarks comparing thresholds (bench/ocr-bench.ts).
 * (A separate function, not a default parameter: with one, JavaScriptCore ran the loop ~10× slower.)
 */
export function mayHaveTextAt(f: GrayFrame, edgeStep: number): boolean {
  const cols = Math.floor(f.width / CELL);
  const rows = Math.floor(f.height / CELL);
  if (cols === 0 || rows === 0) return false;
  const counts = new Uint32Array(cols);
  for (let r = 0; r < rows; r++) if (rowHasRun(f, r, cols, counts, edgeStep)) return true;
  return false;
}

/**
 * Whether cell row `r` has `MIN_RUN` busy cells side by side (`counts`: scratch, one per column).
 * Every other pixel row: strokes are taller than 2 px at any readable size.
 */
function rowHasRun(f: GrayFrame, r: number, cols: number, counts: Uint32Array, edgeStep: number): boolean {
  const { width, pixels } = f;
  const perCell = (CELL / 2) * (CELL - 2);
  counts.fill(0);
  for (let y = r * CELL; y < (r + 1) * CELL; y += 2) {
    const row = y * width;
    for (let c = 0; c < cols; c++) {
      let n = 0;
      const x0 = row + c * CELL;
      for (let x = x0 + 1; x < x0 + CELL - 1; x++) {
        const d = pixels[x + 1] - pixels[x - 1];
        if (d > edgeStep || d < -edgeStep) n++;
      }
      counts[c] += n;
    }
  }
  let run = 0;
  for (let c = 0; c < cols; c++) {
    run = counts[c] / perCell >= BUSY_SHARE ? run + 1 : 0;
    if (run >= MIN_RUN) return true;
  }
  return false;
}

/** A horizontal band of a frame: pixel rows y0 (inclusive) to y1 (exclusive). */
export interface Band {
  y0: number;
  y1: number;
}

/**
 * Rows of cells kept above and below a busy row in a text band. The detector needs context around
 * a line: with one cell, 48 px lines in Liberation Mono and in a caption box came out split in two
 * at a word gap and read "Chapter t forecast bridge", "closed I museum market" (bench/ocr-bench.ts);
 * with two, one of them still split; with three both read as in the whole frame.
 */
const BAND_MARGIN_CELLS = 3;

/**
 * Where in the frame text may be: mayHaveText's test applied to each row of cells on its own. A
 * row with a run of busy cells gives a band from BAND_MARGIN_CELLS above it to as many below it;
 * overlapping or touching bands are merged. Top to bottom; empty exactly when mayHaveText is
 * false. The detector runs on these bands instead of the whole frame (ppocr/read.ts): on a frame
 * with one caption line, about a third of the pixels.
 */
export function textBands(f: GrayFrame): Band[] {
  const { height } = f;
  const cols = Math.floor(f.width / CELL);
  const rows = Math.floor(height / CELL);
  const bands: Band[] = [];
  if (cols === 0 || rows === 0) return bands;
  const counts = new Uint32Array(cols);
  for (let r = 0; r < rows; r++) {
    if (!rowHasRun(f, r, cols, counts, EDGE_STEP)) continue;
    // The last row of cells also covers the few pixel rows below it that no cell holds.
    const y0 = Math.max(0, (r - BAND_MARGIN_CELLS) * CELL);
    const y1 = r + 1 + BAND_MARGIN_CELLS >= rows ? height : (r + 1 + BAND_MARGIN_CELLS) * CELL;
    const last = bands.at(-1);
    if (last && y0 <= last.y1) last.y1 = Math.max(last.y1, y1);
    else bands.push({ y0, y1 });
  }
  return bands;
}

/**
 * mayHaveText for the frame outside `boxes` (frame pixels): the cells a box touches (grown by a
 * quarter cell) never count as busy. Used when every line read at the last frame is still on
 * screen unchanged (regions.ts): text anywhere else means the frame must be read again.
 */
export function mayHaveTextOutside(f: GrayFrame, boxes: readonly PixelBox[]): boolean {
  const { width, height, pixels } = f;
  const cols = Math.floor(width / CELL);
  const rows = Math.floor(height / CELL);
  if (cols === 0 || rows === 0) return false;
  const masked = new Uint8Array(cols * rows);
  const grow = CELL / 4;
  for (const b of boxes) {
    const c0 = Math.max(0, Math.floor((b.x - grow) / CELL));
    const c1 = Math.min(cols - 1, Math.floor((b.x + b.w + grow) / CELL));
    const r0 = Math.max(0, Math.floor((b.y - grow) / CELL));
    const r1 = Math.min(rows - 1, Math.floor((b.y + b.h + grow) / CELL));
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) masked[r * cols + c] = 1;
  }
  const counts = new Uint32Array(cols);
  const perCell = (CELL / 2) * (CELL - 2);
  for (let r = 0; r < rows; r++) {
    counts.fill(0);
    for (let y = r * CELL; y < (r + 1) * CELL; y += 2) {
      const row = y * width;
      for (let c = 0; c < cols; c++) {
        if (masked[r * cols + c]) continue;
        let n = 0;
        const x0 = row + c * CELL;
        for (let x = x0 + 1; x < x0 + CELL - 1; x++) {
          const d = pixels[x + 1] - pixels[x - 1];
          if (d > EDGE_STEP || d < -EDGE_STEP) n++;
        }
        counts[c] += n;
      }
    }
    let run = 0;
    for (let c = 0; c < cols; c++) {
      run = !masked[r * cols + c] && counts[c] / perCell >= BUSY_SHARE ? run + 1 : 0;
      if (run >= MIN_RUN) return true;
    }
  }
  return false;
}

export function signature(f: GrayFrame): Float32Array {
  const { width, height, pixels } = f;
  const sig = new Float32Array(GRID_W * GRID_H);
  for (let gy = 0; gy < GRID_H; gy++) {
    const y0 = Math.floor((gy * height) / GRID_H);
    const y1 = Math.max(y0 + 1, Math.floor(((gy + 1) * height) / GRID_H));
    for (let gx = 0; gx < GRID_W; gx++) {
      const x0 = Math.floor((gx * width) / GRID_W);
      const x1 = Math.max(x0 + 1, Math.floor(((gx + 1) * width) / GRID_W));
      let sum = 0;
      // A 4×4 pixel lattice per cell is plenty for a mean.
      const sy = Math.max(1, (y1 - y0) >> 2);
      const sx = Math.max(1, (x1 - x0) >> 2);
      let n = 0;
      for (let y = y0; y < y1; y += sy) for (let x = x0; x < x1; x += sx, n++) sum += pixels[y * width + x];
      sig[gy * GRID_W + gx] = sum / n;
    }
  }
  return sig;
}

export function changed(a: Float32Array | null, b: Float32Array): boolean {
  if (!a || a.length !== b.length) return true;
  for (let i = 0; i < a.length; i++) if (Math.abs(a[i] - b[i]) > CELL_DELTA) return true;
  return false;
}
