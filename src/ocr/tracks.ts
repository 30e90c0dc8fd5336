import type { OcrLine } from "./engine.ts";

/** A line of on-screen text and the time range it was shown. */
export interface TextRange {
  start: number;
  end: number;
  text: string;
  confidence: number;
  box: OcrLine["box"];
}

/**
 * Lines below this confidence (0–100) are mostly texture read as letters: on real footage
 * (a skyline, an animation) tesseract returns "INS", "NN", "au", "A Nr" at 55–74, while text
 * that is really there reads at 85–96. Short lines (under 4 letters or digits) need SHORT_CONFIDENCE.
 */
export const MIN_CONFIDENCE = 70;
export const SHORT_CONFIDENCE = 80;

interface Open extends TextRange {
  key: string;
  lastSeen: number;
}

/** Lower case, letters and digits only, single spaces: what "the same text" is compared on. */
export function textKey(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** Whether a line is worth keeping: confident, and mostly letters and digits (not "|/_-~"). */
export function plausible(line: OcrLine): boolean {
  if (line.confidence < MIN_CONFIDENCE) return false;
  const chars = [...line.text.replace(/\s+/g, "")];
  const alnum = chars.filter((c) => /[\p{L}\p{N}]/u.test(c)).length;
  if (alnum < 4 && line.confidence < SHORT_CONFIDENCE) return false;
  return alnum >= 2 && alnum / chars.length >= 0.6;
}

/**
 * Joins what OCR read frame by frame into time ranges: a line read again at the next sampled
 * frame (same text up to a few misread characters, see `similar`) extends its range; a line not
 * read at a frame ends there. So a caption shown for 8 s is one row, not 8, and a slide that
 * comes back later is a second range.
 */
export class TextTracker {
  private open: Open[] = [];
  private readonly done: TextRange[] = [];

  constructor(private readonly intervalSecs: number) {}

  /** The lines read at (or carried over to) the frame at `t`, in time order. */
  push(t: number, lines: OcrLine[]): void {
    const seen = new Set<Open>();
    for (const line of lines.filter(plausible)) {
      const key = textKey(line.text);
      if (!key) continue;
      const o = this.open.find((x) => !seen.has(x) && similar(x.key, key));
      if (o) {
        o.lastSeen = t;
        o.end = t;
        if (line.confidence > o.confidence)
          Object.assign(o, { text: line.text, confidence: line.confidence, box: line.box, key });
        seen.add(o);
      } else {
        const n: Open = {
          start: t,
          end: t,
          lastSeen: t,
          text: line.text,
          confidence: line.confidence,
          box: line.box,
          key,
        };
        this.open.push(n);
        seen.add(n);
      }
    }
    for (const o of this.open) if (!seen.has(o)) this.close(o, t);
    this.open = this.open.filter((o) => seen.has(o));
  }

  /** Closes what is still on screen at the end of the video (`endSecs`, when known). */
  finish(endSecs: number | null): TextRange[] {
    for (const o of this.open) this.close(o, endSecs ?? o.lastSeen + this.intervalSecs);
    this.open = [];
    return this.done.sort((a, b) => a.start - b.start || a.box.y - b.box.y);
  }

  /** Shown until the next sampled frame without it (at most one interval past the last sighting). */
  private close(o: Open, next: number): void {
    const end = Math.max(o.lastSeen, Math.min(next, o.lastSeen + this.intervalSecs));
    this.done.push({
      start: o.start,
      end: end > o.start ? end : o.start + Math.min(this.intervalSecs, 1),
      text: o.text,
      confidence: o.confidence,
      box: o.box,
    });
  }
}

/**
 * Same text, allowing for OCR jitter between frames of one caption: spaces are ignored (a stroke
 * lost at one frame splits "lighthouse" into "ligh house"), and about one character in six may be
 * misread ("Harbour igh ouse tour" is still "Harbour lighthouse tour"). Short texts must match
 * closely: "Step 1 of 5" and "Step 2 of 5" are two captions.
 */
export function similar(a: string, b: string): boolean {
  if (a === b) return true;
  const x = a.replaceAll(" ", "");
  const y = b.replaceAll(" ", "");
  if (x === y) return true;
  const longest = Math.max(x.length, y.length);
  const budget = longest >= 12 ? Math.floor(longest / 6) : longest >= 6 ? 1 : 0;
  if (budget === 0 || Math.abs(x.length - y.length) > budget) return false;
  // A different number is a different caption, however close the rest is.
  if (x.replace(/\D+/g, "") !== y.replace(/\D+/g, "")) return false;
  return editDistance(x, y, budget) <= budget;
}

/** Levenshtein distance, giving up (returning budget + 1) once it must exceed `budget`. */
function editDistance(a: string, b: string, budget: number): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      best = Math.min(best, cur[j]);
    }
    if (best > budget) return budget + 1;
    prev = cur;
  }
  return prev[b.length];
}
