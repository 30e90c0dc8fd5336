import type { GrayFrame, OcrEngine, OcrLine } from "./engine.ts";
import { changed, mayHaveText, mayHaveTextOutside, signature } from "./frame-test.ts";
import type { PpOcrEngine } from "./ppocr/engine.ts";
import { readWithPpOcr, type KnownLine } from "./ppocr/read.ts";
import { readFrame } from "./read-frame.ts";
import { regionOf, sameRegion, type RegionPixels } from "./regions.ts";
import { TextTracker, type TextRange } from "./tracks.ts";

/** The two OCR engines (config `ocr_engine`): PP-OCR on ONNX Runtime, or tesseract.js. */
export type TextEngine = PpOcrEngine | OcrEngine;

/** A frame of the video as the OCR stage gets it: gray, with its time. */
export interface TimedFrame extends GrayFrame {
  timestamp: number;
  /** The first frame sampled in a shot: never carried over on the frame signature alone. */
  forced: boolean;
}

export interface VideoTextLimits {
  /** At most this many frames go to the engine per minute of video (each minute counted on its own). */
  framesPerMinute: number;
  /** Reading stops once this much time (ms, wall clock, from the first frame) has been spent. */
  budgetMs: number;
}

export interface VideoTextStats {
  /** Frames offered. */
  sampled: number;
  /** Frames the engine ran on. */
  read: number;
  /** tesseract: frames read a second time for outlined white captions (read-frame.ts). */
  reread: number;
  /** PP-OCR: lines the recognizer read, and lines whose earlier reading was kept (same place, same pixels). */
  recognized: number;
  reused: number;
  /** Frames the cheap test found no text in. */
  noText: number;
  /** Frames whose text was carried over without reading: the frame did not change, or the lines read last did not. */
  carried: number;
  /** Frames not read because their minute had had `framesPerMinute` reads already. */
  overLimit: number;
  /** Set when the time budget ran out: the video time reached, and the budget. */
  stopped: { atSecs: number; budgetMs: number } | null;
}

/**
 * Reads the text of one video frame by frame, in time order, at the least cost it can:
 *   1. a frame whose 32×18 luma grid did not move since the last frame read carries that frame's
 *      lines over (frame-test.ts `changed`);
 *   2. a frame in which every line read last is still there, pixel for pixel on its edges
 *      (regions.ts), and nothing else looks like text, carries them over too: a caption that stays
 *      on screen over moving footage is read once;
 *   3. a frame without the look of text is not read (frame-test.ts `mayHaveText`);
 *   4. the rest is read. PP-OCR finds the boxes and recognizes only boxes it has not read in the
 *      same place with the same pixels (ppocr/read.ts); tesseract reads the frame, with its second
 *      pass for outlined captions only where the first was unsure (read-frame.ts).
 * What was read is joined into time ranges (tracks.ts). Bounded by `limits`: reads per minute of
 * video, and a time budget after which `push` answers false and reading ends.
 */
export class VideoTextReader {
  readonly stats: VideoTextStats = {
    sampled: 0,
    read: 0,
    reread: 0,
    recognized: 0,
    reused: 0,
    noText: 0,
    carried: 0,
    overLimit: 0,
    stopped: null,
  };
  private readonly tracker: TextTracker;
  private lastSig: Float32Array | null = null;
  private lastLines: OcrLine[] = [];
  /** The lines of the last frame read, with their pixels there (ppocr: every box, read or not). */
  private regions: (RegionPixels & Partial<KnownLine>)[] = [];
  private minute = -1;
  private readsThisMinute = 0;
  private startedAt: number | null = null;
  private lastTime = 0;

  constructor(
    private readonly engine: TextEngine,
    intervalSecs: number,
    private readonly limits: VideoTextLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tracker = new TextTracker(intervalSecs);
  }

  /** Takes the next frame; false once the time budget is spent (nothing more will be read). */
  async push(f: TimedFrame): Promise<boolean> {
    if (this.stats.stopped) return false;
    this.startedAt ??= this.now();
    if (this.now() - this.startedAt > this.limits.budgetMs) {
      this.stats.stopped = { atSecs: f.timestamp, budgetMs: this.limits.budgetMs };
      return false;
    }
    this.stats.sampled++;
    this.lastTime = f.timestamp;
    const sig = signature(f);
    if (!f.forced && !changed(this.lastSig, sig)) {
      this.stats.carried++;
      this.tracker.push(f.timestamp, this.lastLines);
      return true;
    }
    this.lastSig = sig;
    if (
      this.regions.length > 0 &&
      this.regions.every((r) => sameRegion(r, f)) &&
      !mayHaveTextOutside(
        f,
        this.regions.map((r) => r.box),
      )
    ) {
      this.stats.carried++;
      this.tracker.push(f.timestamp, this.lastLines);
      return true;
    }
    if (!mayHaveText(f)) {
      this.stats.noText++;
      this.lastLines = [];
      this.regions = [];
      this.tracker.push(f.timestamp, []);
      return true;
    }
    const minute = Math.floor(f.timestamp / 60);
    if (minute !== this.minute) {
      this.minute = minute;
      this.readsThisMinute = 0;
    }
    if (this.readsThisMinute >= this.limits.framesPerMinute) {
      // Not read and not pushed: the ranges open now run on over it, as over any unsampled time.
      this.stats.overLimit++;
      return true;
    }
    this.readsThisMinute++;
    this.stats.read++;
    await this.read(f);
    this.tracker.push(f.timestamp, this.lastLines);
    return true;
  }

  /** The time ranges read; `endSecs`: where the video (or, when the budget ran out, the reading) ended. */
  finish(endSecs: number | null): TextRange[] {
    const end = this.stats.stopped ? Math.max(this.lastTime, this.stats.stopped.atSecs) : endSecs;
    return this.tracker.finish(end);
  }

  private async read(f: TimedFrame): Promise<void> {
    if (this.engine.kind === "ppocr") {
      const known = this.regions.filter((r): r is KnownLine => r.text !== undefined);
      const r = await readWithPpOcr(this.engine, f, known);
      this.stats.recognized += r.recognized;
      this.stats.reused += r.reused;
      this.lastLines = r.lines;
      this.regions = r.known;
      return;
    }
    const reading = await readFrame(this.engine, f);
    if (reading.passes > 1) this.stats.reread++;
    this.lastLines = reading.lines;
    // tesseract's boxes hug the letters: a margin of a fifth of the line height keeps the edges inside.
    this.regions = reading.lines.map((l) => {
      const h = l.box.h * f.height;
      const m = h / 5;
      return regionOf(f, {
        x: l.box.x * f.width - m,
        y: l.box.y * f.height - m,
        w: l.box.w * f.width + 2 * m,
        h: h + 2 * m,
      });
    });
  }
}
