import { decodeLimits } from "./bounds.ts";
import { throwIfStreamRunFailed, ToolProcess, type MediaBins } from "./process.ts";
import { decodeSkipArgs, type DecodeSkip, type LoopFilter } from "./decode.ts";
import { createShowinfoParser } from "./showinfo.ts";

/** Default scene-change score above which a frame starts a shot (also scene-score.ts). */
export const SCENE_THRESHOLD = 0.3;
/** Default: boundaries closer than this to the previous one are dropped. */
export const MIN_SHOT_SECS = 0.5;

export interface ShotDetectionOptions {
  /** Scene-change score (0..1, ffmpeg's `scene`) above which a frame starts a new shot. Default 0.3. */
  threshold?: number;
  /** Boundaries closer than this to the previous one (or to the start) are dropped. Default 0.5 s. */
  minShotSecs?: number;
  /**
   * Width the frames are shrunk to before scoring. Default 160. The score is a mean absolute
   * difference of RGB, so it hardly depends on resolution, while the RGB conversion the scene
   * filter needs is 80× cheaper at 160×90 than at 1080p. Measured (bench/media-decode.ts, 60 s
   * 1080p H.264): 5.6 CPU-s at 160 px vs 8.0 at native size; the rest is decoding.
   */
  analysisWidth?: number;
  /**
   * Decode keyframes only. Much faster, but cuts are found only where the encoder put a keyframe
   * (x264 usually does at a hard cut, but not within `min-keyint` of the last one), their time is
   * that keyframe's, and consecutive keyframes are compared (seconds apart, so motion can read as
   * a cut). Measured: 0.22 vs 5.6 CPU-s per minute of 1080p (~25× less). Default false: on the
   * generated 23.976 fps test clip with 2.5 s GOPs it reports 3 of 7 cuts, stamped at the next
   * keyframe (up to 0.5 s late).
   */
  keyframesOnly?: boolean;
  /** Kills ffmpeg at once when this aborts (process.ts SpawnOptions.signal). */
  signal?: AbortSignal;
  /** Full decode only: pictures the decoder may skip (decode.ts). Default "none". */
  skipFrames?: DecodeSkip;
  /** Full decode only: whether the loop filter runs (decode.ts). Default "exact". */
  loopFilter?: LoopFilter;
  threads?: number;
  /** Wall-clock limit. Default: 10 minutes plus 2 × the duration, if given, else 6 hours. */
  timeoutMs?: number;
  durationSecs?: number | null;
  /** Kill when ffmpeg prints nothing (not even progress) for this long. Default 60 s. */
  stallTimeoutMs?: number;
}

/**
 * Shot boundaries (seconds, ascending, relative to the file start): the presentation times of the
 * frames whose scene score exceeds the threshold. ffmpeg decodes, shrinks, scores and prints only
 * the selected frames (`select='gt(scene,T)',showinfo`); we parse stderr line by line as it
 * streams, so memory is the list of boundaries. `-progress` lines keep the stall watchdog fed
 * through long shots that select nothing.
 */
export async function detectShotBoundaries(
  bins: MediaBins,
  file: string,
  opts: ShotDetectionOptions = {},
): Promise<number[]> {
  const threshold = opts.threshold ?? SCENE_THRESHOLD;
  const minShot = opts.minShotSecs ?? MIN_SHOT_SECS;
  const width = opts.analysisWidth ?? 160;
  if (!(threshold > 0 && threshold < 1)) throw new RangeError("threshold must be in (0, 1)");
  if (!Number.isInteger(width) || width < 16) throw new RangeError("analysisWidth must be an integer ≥ 16");

  const parse = createShowinfoParser();
  const found: number[] = [];
  const proc = new ToolProcess(
    bins.ffmpeg,
    [
      "-hide_banner",
      "-nostdin",
      "-nostats",
      "-loglevel",
      "repeat+level+info",
      "-progress",
      "pipe:2",
      ...(opts.keyframesOnly ? ["-skip_frame", "nokey"] : decodeSkipArgs(opts.skipFrames, opts.loopFilter)),
      ...(opts.threads ? ["-threads", String(opts.threads)] : []),
      ...decodeLimits(bins),
      "-i",
      file,
      "-map",
      "0:v:0",
      "-an",
      "-sn",
      "-dn",
      "-vf",
      cutAnalysisFilters(width, threshold),
      "-vsync",
      "passthrough",
      "-f",
      "null",
      "-",
    ],
    {
      timeoutMs: opts.timeoutMs ?? defaultTimeout(opts.durationSecs),
      stallTimeoutMs: opts.stallTimeoutMs ?? 60_000,
      signal: opts.signal,
      onStderrLine: (line) => {
        const f = parse(line);
        if (f && Number.isFinite(f.time)) found.push(f.time);
      },
    },
  );
  try {
    const exit = await proc.exited();
    throwIfStreamRunFailed("shot detection failed", exit, "video");
  } finally {
    proc.dispose();
  }
  return filterBoundaries(found, minShot);
}

/**
 * The scene-change analysis chain, shared with the one-pass frame sampler (frames.ts) so both find
 * the same cuts. fast_bilinear is plenty for a difference score; min() avoids upscaling tiny videos.
 * `instance` names the showinfo (`showinfo@<instance>`) when the graph has another one.
 */
export function cutAnalysisFilters(width: number, threshold: number, instance?: string, range?: CutRange): string {
  // A range that starts at a seam: its first two pictures score against nothing (split-decode.ts).
  const select = range?.fromThirdPicture ? `gt(scene,${threshold})*gte(n,2)` : `gt(scene,${threshold})`;
  return `scale=w='min(${width},iw)':h=-2:flags=fast_bilinear,select='${select}',showinfo${instance ? `@${instance}` : ""}`;
}

/** A time range of a split decode, for its cut analysis (split-decode.ts). */
export interface CutRange {
  /** The range starts at a seam: its first two pictures are scored by the range before. */
  fromThirdPicture: boolean;
}

function defaultTimeout(durationSecs: number | null | undefined): number {
  return durationSecs ? 600_000 + durationSecs * 2_000 : 6 * 3600_000;
}

/** Sorted, positive, and at least `minShotSecs` after the previous kept boundary (or the start). */
export function filterBoundaries(times: readonly number[], minShotSecs: number): number[] {
  const out: number[] = [];
  let last = 0;
  for (const t of [...times].sort((a, b) => a - b)) {
    if (!(t > 0) || t - last < minShotSecs) continue;
    out.push(t);
    last = t;
  }
  return out;
}

export interface Shot {
  index: number;
  start: number;
  end: number;
}

/**
 * Boundaries → contiguous shots covering [0, duration]. Boundaries outside (0, duration) and
 * duplicates are ignored; a video with no boundary is one shot.
 */
export function shotsFromBoundaries(boundaries: readonly number[], durationSecs: number): Shot[] {
  if (!(durationSecs > 0)) return [];
  const cuts = [...new Set(boundaries)].filter((b) => b > 0 && b < durationSecs).sort((a, b) => a - b);
  const edges = [0, ...cuts, durationSecs];
  const shots: Shot[] = [];
  for (let i = 0; i + 1 < edges.length; i++) shots.push({ index: i, start: edges[i], end: edges[i + 1] });
  return shots;
}
