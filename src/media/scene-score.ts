import { MIN_SHOT_SECS, SCENE_THRESHOLD, filterBoundaries } from "./shots.ts";

/**
 * Shot boundaries from frames already decoded for the model, so a keyframe-mode ingest decodes
 * the video once instead of twice (once for `select='gt(scene,T)'`, once for the frames).
 *
 * The score is ffmpeg 4.1's `scene` (vf_select.c): mafd = mean absolute difference of the RGB
 * bytes of two consecutive frames, score = min(mafd, |mafd − previous mafd|) / 100, clipped to
 * 0..1. The |Δmafd| term is what tells a cut (one large jump) from motion (steadily large
 * differences). ffmpeg sums 8×8 blocks and skips a ragged edge; at 224×224 there is none, so the
 * values are the same as ffmpeg's on the same frames.
 */
export function sceneScore(prev: Uint8Array, cur: Uint8Array, prevMafd: number): { score: number; mafd: number } {
  if (prev.length !== cur.length || cur.length === 0) return { score: 0, mafd: 0 };
  let sad = 0;
  for (let i = 0; i < cur.length; i++) {
    const d = cur[i] - prev[i];
    sad += d < 0 ? -d : d;
  }
  const mafd = sad / cur.length;
  const diff = Math.abs(mafd - prevMafd);
  return { score: Math.min(1, Math.max(0, Math.min(mafd, diff) / 100)), mafd };
}

export interface ShotTrackerOptions {
  /** Same meaning and default as detectShotBoundaries: a frame scoring above this starts a shot. */
  threshold?: number;
  /** Boundaries closer than this to the previous one (or the start) are dropped. Default 0.5 s. */
  minShotSecs?: number;
}

/**
 * Feed it every decoded frame in order (before near-duplicate dropping: a cut is a difference to
 * the frame just before it); `boundaries()` then gives what detectShotBoundaries would have.
 * Holds one frame reference.
 */
export class ShotTracker {
  private prev: Uint8Array | null = null;
  private prevMafd = 0;
  private readonly found: number[] = [];
  private readonly threshold: number;
  private readonly minShotSecs: number;

  constructor(opts: ShotTrackerOptions = {}) {
    this.threshold = opts.threshold ?? SCENE_THRESHOLD;
    this.minShotSecs = opts.minShotSecs ?? MIN_SHOT_SECS;
    if (!(this.threshold > 0 && this.threshold < 1)) throw new RangeError("threshold must be in (0, 1)");
  }

  /** `rgb` is only read during the call and until the next one: pass it before handing it on. */
  push(timestamp: number, rgb: Uint8Array): void {
    if (this.prev && this.prev.length === rgb.length) {
      const { score, mafd } = sceneScore(this.prev, rgb, this.prevMafd);
      this.prevMafd = mafd;
      if (score > this.threshold && Number.isFinite(timestamp)) this.found.push(timestamp);
    }
    // A copy (into one reused buffer): the frame's own buffer is transferred to a worker thread,
    // and so detached, once it is embedded.
    if (!this.prev || this.prev.length !== rgb.length) this.prev = new Uint8Array(rgb.length);
    this.prev.set(rgb);
  }

  boundaries(): number[] {
    return filterBoundaries(this.found, this.minShotSecs);
  }
}
