import { MediaError } from "./errors.ts";
import { runTool, type MediaBins } from "./process.ts";

/**
 * ffmpeg `select` expressions for frame sampling, and the keyframe-spacing measurement that
 * decides between keyframe-only and full decode.
 *
 * Why `select` and not `fps=1`: the fps filter *re-times* frames onto its own 1/fps grid (it
 * duplicates or drops to hit exact n/fps stamps), so the pts it outputs is the slot time, not the
 * time the picture was shown — a frame shown at 2.04 s comes out stamped 2.0, and with
 * `-skip_frame nokey` (frames only every GOP) it invents duplicates with made-up times. `select`
 * passes real frames through untouched, so showinfo reports their true presentation times.
 * (test/media/frames.test.ts shows the difference.)
 */

/** Keep one frame per `everySecs` bucket: the first frame whose bucket differs from the last kept. */
export function gridTerm(everySecs: number): string {
  const e = fmt(everySecs);
  return `isnan(prev_selected_t)+gt(floor(t/${e}),floor(prev_selected_t/${e}))`;
}

/**
 * "The first frame at or after T" for every T in `times`: select a frame when some T lies in
 * (prev_t, t], where prev_t is the previous *decoded* frame (selected or not). Written as a
 * balanced if-tree that binary-searches the largest T ≤ t (ffmpeg's `if` evaluates one branch),
 * so each frame costs O(log n) instead of a sum over every shot boundary of a two-hour film.
 * T is nudged 0.1 ms earlier so a boundary printed with 6 decimals still matches its own frame.
 */
export function atOrAfterTerm(times: readonly number[]): string {
  const ts = [...new Set(times.filter((t) => Number.isFinite(t) && t >= 0))].sort((a, b) => a - b).map((t) => fmt(Math.max(0, t - 1e-4)));
  if (ts.length === 0) return "";
  const build = (lo: number, hi: number): string => {
    if (lo === hi) return `lt(prev_t,${ts[lo]})`;
    const mid = (lo + hi + 1) >> 1;
    return `if(gte(t,${ts[mid]}),${build(mid, hi)},${build(lo, mid - 1)})`;
  };
  return `if(gte(t,${ts[0]}),${build(0, ts.length - 1)},0)`;
}

/** The whole select expression: the time grid plus the extra timestamps. */
export function samplingExpression(everySecs: number, extra: readonly number[]): string {
  const extraTerm = atOrAfterTerm(extra);
  return extraTerm ? `${gridTerm(everySecs)}+${extraTerm}` : gridTerm(everySecs);
}

function fmt(n: number): string {
  return n.toFixed(6).replace(/\.?0+$/, "") || "0";
}

export interface KeyframeSpacing {
  /** Presentation times of the keyframes in the scanned window, as ffprobe reports them. */
  keyframeTimes: number[];
  /** Largest gap between consecutive keyframes, including the gap to the end of the window. */
  maxGapSecs: number;
  scannedSecs: number;
}

/**
 * Measures keyframe spacing over the first `scanSecs`: ffprobe decodes keyframes only
 * (`-skip_frame nokey`), which is exactly the set ffmpeg will hand us in keyframe mode (packet
 * key flags would miss open-GOP I-frames that the decoder still emits). Costs one keyframe decode
 * per GOP in the window: tens of ms for 1080p H.264.
 */
export async function measureKeyframeSpacing(
  bins: MediaBins,
  file: string,
  opts: { scanSecs?: number; durationSecs?: number | null; timeoutMs?: number } = {},
): Promise<KeyframeSpacing> {
  const scanSecs = opts.scanSecs ?? 30;
  const run = await runTool(
    bins.ffprobe,
    ["-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey", "-read_intervals", `%+${scanSecs}`,
     "-show_entries", "frame=best_effort_timestamp_time,pts_time", "-of", "csv=p=0", file],
    { timeoutMs: opts.timeoutMs ?? 60_000 },
  );
  if (run.code !== 0) throw new MediaError("DECODE_FAILED", "cannot read keyframes", run.tail.join("\n"));
  const times: number[] = [];
  for (const line of new TextDecoder().decode(run.stdout).split("\n")) {
    const t = line.split(",").map(Number).find((v) => Number.isFinite(v));
    if (t !== undefined && line.trim() !== "") times.push(t);
  }
  times.sort((a, b) => a - b);
  // ffprobe's times are not shifted to the file start (a TS may start at 1.4 s); gaps do not care.
  const start = times[0] ?? 0;
  const duration = opts.durationSecs ?? null;
  const scanned = duration === null ? scanSecs : Math.min(scanSecs, duration);
  let maxGap = times.length < 2 && duration === null ? Infinity : 0;
  for (let i = 1; i < times.length; i++) maxGap = Math.max(maxGap, times[i] - times[i - 1]);
  // The tail counts: one keyframe then nothing for 25 s of the window is a 25 s GOP.
  if (times.length > 0 && duration !== null) maxGap = Math.max(maxGap, start + scanned - times[times.length - 1]);
  if (times.length === 0) maxGap = Infinity;
  return { keyframeTimes: times, maxGapSecs: maxGap, scannedSecs: scanned };
}
