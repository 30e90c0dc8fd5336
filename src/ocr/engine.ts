import { statSync } from "node:fs";
import { join } from "node:path";
import type { OcrPaths } from "./paths.ts";

/** The OCR engine could not start or read a frame (missing data, a worker that died). */
export class OcrError extends Error {
  readonly code = "OCR_FAILED";
}

/** A worker loads in ~0.25 s (wasm + 3 MB of data); far longer means it never will. */
const SPAWN_TIMEOUT_MS = 60_000;

/** A decoded grayscale frame, one byte per pixel, row-major. */
export interface GrayFrame {
  width: number;
  height: number;
  pixels: Uint8Array;
}

/** One line of text as tesseract read it. The box is in fractions of the frame (0..1). */
export interface OcrLine {
  text: string;
  /** 0..100, tesseract's mean word confidence for the line. */
  confidence: number;
  box: { x: number; y: number; w: number; h: number };
}

export interface OcrEngineOptions {
  paths: OcrPaths;
  /** How many tesseract worker threads at most (each is single-threaded wasm). Default 1. */
  workers?: number;
  /**
   * Ends the worker threads once none has read a frame for this long (0 or absent: never). The
   * next frame starts one again (~0.25 s, see SPAWN_TIMEOUT_MS).
   */
  idleCloseMs?: number;
  /** Called after idle workers were ended (not after `close()`). */
  onIdleClosed?: (workers: number) => void;
}

interface TessWorker {
  recognize(image: Uint8Array | Buffer, options?: object, output?: object): Promise<{ data: TessPage }>;
  setParameters(params: Record<string, string>): Promise<unknown>;
  terminate(): Promise<unknown>;
}
interface TessLine {
  text: string;
  confidence: number;
  bbox: { x0: number; y0: number; x1: number; y1: number };
}
interface TessPage {
  blocks: { paragraphs: { lines: TessLine[] }[] }[] | null;
}

/**
 * Text in frames with tesseract.js (LSTM only, English, `4.0.0_best_int` data: 3 MB, the fastest
 * of the packaged models). Worker threads start on first use and stay until none has had a frame
 * for `idleCloseMs` (each holds its wasm memory and a JavaScript heap, ~25 MB); at most `workers` of them, each running one recognition at a time, so OCR never takes more than
 * that many cores however many frames are queued. Frames go in as binary PGM: Leptonica reads it
 * natively, so there is no image encoding on our side.
 */
export class OcrEngine {
  readonly kind = "tesseract" as const;
  private readonly max: number;
  private readonly idle: TessWorker[] = [];
  private readonly waiting: { resolve: (w: TessWorker) => void; reject: (e: unknown) => void }[] = [];
  private started = 0;
  private closed = false;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly opts: OcrEngineOptions) {
    this.max = Math.max(1, Math.floor(opts.workers ?? 1));
  }

  async recognize(frame: GrayFrame): Promise<OcrLine[]> {
    const worker = await this.acquire();
    let data: TessPage;
    try {
      ({ data } = await worker.recognize(toPgm(frame), {}, { blocks: true, text: false, hocr: false, tsv: false }));
    } catch (e) {
      // A worker that failed a frame may be in any state: end it; the next frame starts a new one.
      this.started--;
      void worker.terminate().catch(() => {});
      this.retryWaiter();
      this.armIdleClose();
      throw new OcrError(`OCR failed on a frame: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      const lines: OcrLine[] = [];
      for (const block of data.blocks ?? []) {
        for (const para of block.paragraphs) {
          for (const l of para.lines) {
            const text = tidy(l.text);
            if (!text) continue;
            const { x0, y0, x1, y1 } = l.bbox;
            lines.push({
              text,
              confidence: Math.round(l.confidence * 10) / 10,
              box: {
                x: x0 / frame.width,
                y: y0 / frame.height,
                w: (x1 - x0) / frame.width,
                h: (y1 - y0) / frame.height,
              },
            });
          }
        }
      }
      return lines;
    } finally {
      this.release(worker);
    }
  }

  /**
   * Starts a worker (tesseract.js and its language data loaded) if none runs, so the first frame
   * does not wait for it (see PpOcrEngine.warm). Failures are left to the first real frame.
   */
  warm(): void {
    if (this.closed || this.started > 0) return;
    this.acquire().then(
      (w) => this.release(w),
      () => {},
    );
  }

  /** Worker threads running or starting now (0 before the first frame and after an idle close). */
  get running(): number {
    return this.started;
  }

  /** Whether a frame is being read or waits for a worker. */
  get busy(): boolean {
    return this.started > this.idle.length || this.waiting.length > 0;
  }

  /**
   * Ends the worker threads if every one is idle (none reading, none starting, no frame waiting);
   * returns how many ended. The timer calls it `idleCloseMs` after the last frame; the next frame
   * starts a worker again.
   */
  async closeIdle(): Promise<number> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.closed || this.busy || this.idle.length === 0) return 0;
    const ending = this.idle.splice(0);
    this.started -= ending.length;
    await Promise.all(ending.map((w) => w.terminate().catch(() => {})));
    this.opts.onIdleClosed?.(ending.length);
    return ending.length;
  }

  /** Ends every worker thread; later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    for (const w of this.waiting.splice(0)) w.reject(new Error("the OCR engine was closed"));
    const all = this.idle.splice(0);
    await Promise.all(all.map((w) => w.terminate().catch(() => {})));
  }

  private async acquire(): Promise<TessWorker> {
    if (this.closed) throw new Error("the OCR engine was closed");
    const w = this.idle.pop();
    if (w) return w;
    if (this.started < this.max) {
      this.started++;
      try {
        return await this.spawn();
      } catch (e) {
        this.started--;
        this.retryWaiter();
        throw e;
      }
    }
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private release(w: TessWorker): void {
    if (this.closed) {
      void w.terminate().catch(() => {});
      return;
    }
    const next = this.waiting.shift();
    if (next) next.resolve(w);
    else {
      this.idle.push(w);
      this.armIdleClose();
    }
  }

  /** (Re)starts the idle countdown once nothing is in flight: it runs from the last frame read. */
  private armIdleClose(): void {
    const ms = this.opts.idleCloseMs ?? 0;
    if (ms <= 0 || this.closed || this.busy) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.closeIdle(), ms);
    this.idleTimer.unref?.();
  }

  /** A worker slot came free without a worker to hand over: the next waiter starts its own. */
  private retryWaiter(): void {
    const next = this.waiting.shift();
    if (next) this.acquire().then(next.resolve, next.reject);
  }

  private async spawn(): Promise<TessWorker> {
    // Loaded here, not at import: a process that never reads text never loads tesseract.js.
    const { createWorker, OEM, PSM } = await import("tesseract.js");
    const p = this.opts.paths;
    // tesseract.js never settles createWorker when its language data cannot be read (the
    // rejection is swallowed inside), so look first; the time limit covers anything else.
    const data = join(p.langDir, "eng.traineddata.gz");
    if (!statSync(data, { throwIfNoEntry: false })?.isFile())
      throw new OcrError(`the OCR language data is missing (${data})`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const starting = createWorker("eng", OEM.LSTM_ONLY, {
      workerPath: p.workerFile,
      langPath: p.langDir,
      gzip: true,
      // Read the bundled data every start (3 MB, a few ms): nothing is written beside it.
      cacheMethod: "none",
      errorHandler: () => {},
    });
    const worker = (await Promise.race([
      starting,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          void starting.then((w) => w.terminate()).catch(() => {});
          reject(new OcrError(`the OCR worker did not start within ${SPAWN_TIMEOUT_MS / 1000} s`));
        }, SPAWN_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer))) as unknown as TessWorker;
    // Sparse text: captions, signs and slides are scattered lines, not a page of paragraphs.
    // Tesseract's global Otsu threshold stays: on white-on-navy slides and the real road-trip
    // clip it read every line, where Sauvola and Leptonica's tiled Otsu lost whole lines of
    // light-on-dark text. Its weak spot is a see-through caption box whose background changes
    // brightness mid-word (it can split the word there).
    await worker.setParameters({ tessedit_pageseg_mode: String(PSM.SPARSE_TEXT) });
    return worker;
  }
}

/** Binary PGM (P5): a 15-byte header in front of the pixels. */
export function toPgm(frame: GrayFrame): Uint8Array {
  const header = new TextEncoder().encode(`P5\n${frame.width} ${frame.height}\n255\n`);
  const out = new Uint8Array(header.length + frame.pixels.length);
  out.set(header, 0);
  out.set(frame.pixels, header.length);
  return out;
}

/**
 * One line's text with single spaces and without the stray marks tesseract reads off box edges
 * and outlines at either end ("| Harbour tour :" → "Harbour tour"); sentence punctuation stays.
 */
export function tidy(text: string): string {
  return text
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^[^\p{L}\p{N}(“"'¿¡$£€#@]+/u, "")
    .replace(/(?:\s+[^\p{L}\p{N}\s]{1,2})+$/u, "")
    .replace(/[^\p{L}\p{N})”"'!?.%]+$/u, "")
    .trim();
}
