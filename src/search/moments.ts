import type { Mode } from "./thresholds.ts";

export type SegmentType = "frame" | "scene" | "transcript" | "ocr";

/** One result clip before fusion: what a mode found, already over its threshold. */
export interface Candidate {
  videoId: string;
  type: SegmentType;
  mode: Mode;
  start: number;
  end: number;
  /** Calibrated 0–1. */
  score: number;
  /** The mode's own similarity (cosine; BM25 as a positive number; word coverage for scene:text). */
  raw: number;
  thresholdKey: string;
  text: string | null;
  /** Shot whose thumbnail represents the clip (the best frame's shot, the shot itself). */
  shotIndex: number | null;
}

/** A sampled frame that passed its threshold. */
export interface FrameHit {
  videoId: string;
  timestamp: number;
  /** Timestamp of the video's next sampled frame, if any: adjacency, and the clip's end. */
  nextTimestamp: number | null;
  shotIndex: number;
  raw: number;
  score: number;
}

/** With `min_score`, a frame moment keeps the frames within this of its best score (`band` below). */
export const MIN_SCORE_BAND = 0.1;

export interface MomentOptions {
  /** The pipeline's sampling interval (about one frame a second). */
  intervalSecs: number;
  /** Video duration, to keep clip ends inside the video. */
  durationOf: (videoId: string) => number | null;
  thresholdKey: string;
  /**
   * With a request's `min_score` under the usual cut, whole stretches of a video pass and would
   * merge into one long clip; a band keeps, of each run, only the frames within `band` of the run's
   * best score (split where it dips), so the clips stay around the peaks. Unset: the whole run.
   */
  band?: number;
}

/**
 * Moments, not frames: matching frames of one video that are adjacent — at most 1.5 sampling
 * intervals apart, or consecutive in the video's frame list within 5 intervals (the frames between
 * were dropped as near-duplicates of them; the pipeline keeps one every 4 s) — merge into one clip from the first frame to one interval past the
 * last (never past the next sampled frame or the end of the video). The clip scores as its best frame.
 */
export function framesToMoments(hits: FrameHit[], opts: MomentOptions): Candidate[] {
  const byVideo = new Map<string, FrameHit[]>();
  for (const h of hits) {
    let list = byVideo.get(h.videoId);
    if (!list) byVideo.set(h.videoId, (list = []));
    list.push(h);
  }
  const maxGap = 1.5 * opts.intervalSecs;
  // The pipeline drops near-duplicate frames but keeps one at least every 4 s: consecutive frames
  // further apart than this were not a run of near-duplicates.
  const maxDedupGap = 5 * opts.intervalSecs;
  const out: Candidate[] = [];
  for (const [videoId, list] of byVideo) {
    list.sort((a, b) => a.timestamp - b.timestamp);
    const duration = opts.durationOf(videoId);
    let run: FrameHit[] = [];
    const flush = () => {
      if (!run.length) return;
      if (opts.band !== undefined) {
        const floor = Math.max(...run.map((h) => h.score)) - opts.band;
        const all = run;
        run = [];
        for (const h of all) {
          if (h.score >= floor) run.push(h);
          else emit();
        }
      }
      emit();
    };
    const emit = () => {
      if (!run.length) return;
      const first = run[0];
      const last = run[run.length - 1];
      const best = run.reduce((a, b) => (b.score > a.score || (b.score === a.score && b.raw > a.raw) ? b : a));
      let end = last.timestamp + opts.intervalSecs;
      if (last.nextTimestamp !== null) end = Math.min(end, last.nextTimestamp);
      if (duration !== null && duration > 0) end = Math.min(end, duration);
      out.push({
        videoId,
        type: "frame",
        mode: "video",
        start: first.timestamp,
        end: Math.max(end, first.timestamp),
        score: best.score,
        raw: best.raw,
        thresholdKey: opts.thresholdKey,
        text: null,
        shotIndex: best.shotIndex,
      });
      run = [];
    };
    for (const h of list) {
      const prev = run[run.length - 1];
      const gap = prev ? h.timestamp - prev.timestamp : 0;
      const consecutive =
        prev?.nextTimestamp !== null &&
        prev?.nextTimestamp !== undefined &&
        Math.abs(prev.nextTimestamp - h.timestamp) < 1e-6;
      if (prev && !(gap <= maxGap || (consecutive && gap <= maxDedupGap))) flush();
      run.push(h);
    }
    flush();
  }
  return out;
}

/** Temporal intersection-over-union of two clips (a zero-length clip overlaps only itself). */
export function temporalIou(a: { start: number; end: number }, b: { start: number; end: number }): number {
  const inter = Math.min(a.end, b.end) - Math.max(a.start, b.start);
  const union = Math.max(a.end, b.end) - Math.min(a.start, b.start);
  if (union <= 0) return a.start === b.start ? 1 : 0;
  return Math.max(0, inter) / union;
}

/** Feedback and hiding address a segment by its video and start, within this tolerance. */
export const START_TOLERANCE_SECS = 0.01;

export const sameStart = (a: number, b: number): boolean => Math.abs(a - b) <= START_TOLERANCE_SECS + 1e-9;
