import { decodeLimits } from "./bounds.ts";
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
  const ts = [...new Set(times.filter((t) => Number.isFinite(t) && t >= 0))]
    .sort((a, b) => a - b)
    .map((t) => fmt(Math.max(0, t - 1e-4)));
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

/** How much of the start of a file keyframe spacing is judged on. */
export const KEYFRAME_SCAN_SECS = 30;

/**
 * Keyframe times over the first `scanSecs`, two ways:
 * - `decode`: ffprobe decodes keyframes only (`-skip_frame nokey`), exactly the set ffmpeg hands
 *   us in keyframe mode, open-GOP I-frames included. One keyframe decode per GOP: ~0.3 CPU-s for
 *   30 s of 1080p H.264.
 * - `packets`: the demuxer's key flags, no decoding (~0.03 CPU-s). They can miss open-GOP
 *   I-frames (an MP4 sync-sample table lists IDR frames only) but never invent one, so gaps come
 *   out the same or longer: a "close enough" answer from packets is safe.
 */
export async function readKeyframeTimes(
  bins: MediaBins,
  file: string,
  opts: { scanSecs?: number; method?: "decode" | "packets"; timeoutMs?: number } = {},
): Promise<number[]> {
  const scanSecs = opts.scanSecs ?? KEYFRAME_SCAN_SECS;
  const what =
    opts.method === "packets"
      ? ["-show_entries", "packet=pts_time,dts_time,flags"]
      : ["-skip_frame", "nokey", "-show_entries", "frame=best_effort_timestamp_time,pts_time"];
  const run = await runTool(
    bins.ffprobe,
    [
      "-v",
      "error",
      ...decodeLimits(bins),
      "-select_streams",
      "v:0",
      "-read_intervals",
      `%+${scanSecs}`,
      ...what,
      "-of",
      "csv=p=0",
      file,
    ],
    { timeoutMs: opts.timeoutMs ?? 60_000 },
  );
  if (run.code !== 0) throw new MediaError("DECODE_FAILED", "cannot read keyframes", run.tail.join("\n"));
  const times: number[] = [];
  for (const line of new TextDecoder().decode(run.stdout).split("\n")) {
    if (line.trim() === "") continue;
    const cols = line.split(",");
    if (opts.method === "packets" && !cols.some((c) => /^K/.test(c.trim()))) continue;
    const t = cols.map(Number).find((v, i) => Number.isFinite(v) && cols[i].trim() !== "");
    if (t !== undefined) times.push(t);
  }
  return times.sort((a, b) => a - b);
}

/** Gaps between keyframe times, the gap from the last one to the end of the scanned window included. */
export function keyframeSpacing(
  times: readonly number[],
  scanSecs: number,
  durationSecs: number | null,
): KeyframeSpacing {
  // ffprobe's times are not shifted to the file start (a TS may start at 1.4 s); gaps do not care.
  const start = times[0] ?? 0;
  const scanned = durationSecs === null ? scanSecs : Math.min(scanSecs, durationSecs);
  let maxGap = times.length < 2 && durationSecs === null ? Infinity : 0;
  for (let i = 1; i < times.length; i++) maxGap = Math.max(maxGap, times[i] - times[i - 1]);
  // The tail counts: one keyframe then nothing for 25 s of the window is a 25 s GOP.
  if (times.length > 0 && durationSecs !== null) maxGap = Math.max(maxGap, start + scanned - times[times.length - 1]);
  if (times.length === 0) maxGap = Infinity;
  return { keyframeTimes: [...times], maxGapSecs: maxGap, scannedSecs: scanned };
}

/** Keyframe spacing over the first `scanSecs` (decode-based unless `method` says otherwise). */
export async function measureKeyframeSpacing(
  bins: MediaBins,
  file: string,
  opts: { scanSecs?: number; durationSecs?: number | null; timeoutMs?: number; method?: "decode" | "packets" } = {},
): Promise<KeyframeSpacing> {
  const scanSecs = opts.scanSecs ?? KEYFRAME_SCAN_SECS;
  const times = await readKeyframeTimes(bins, file, { scanSecs, method: opts.method, timeoutMs: opts.timeoutMs });
  return keyframeSpacing(times, scanSecs, opts.durationSecs ?? null);
}

/**
 * Whether keyframe-only decoding samples densely enough: no keyframe gap in the first 30 s longer
 * than `maxGapSecs`. Packet flags answer most files at almost no cost (`packetTimes`, if the caller
 * already read them, e.g. beside the probe); only when they show a long gap is the decode-based
 * scan asked, since open-GOP streams have I-frames their packets do not flag.
 */
export async function keyframesCloseEnough(
  bins: MediaBins,
  file: string,
  opts: {
    durationSecs: number | null;
    maxGapSecs: number;
    packetTimes?: number[] | null;
    /**
     * Asked only when the packets show a long gap: whether they flag every keyframe anyway (the
     * encoder wrote closed GOPs only, e.g. x264's open_gop=0), so the decode-based scan (~0.13
     * CPU-s and ~0.2 s before the frame decode can start) would only confirm them.
     */
    packetsFlagEveryKeyframe?: () => Promise<boolean>;
  },
): Promise<{ ok: boolean; spacing: KeyframeSpacing; method: "packets" | "decode" }> {
  const packets = opts.packetTimes ?? (await readKeyframeTimes(bins, file, { method: "packets" }).catch(() => null));
  if (packets) {
    const spacing = keyframeSpacing(packets, KEYFRAME_SCAN_SECS, opts.durationSecs);
    if (spacing.maxGapSecs <= opts.maxGapSecs) return { ok: true, spacing, method: "packets" };
    if (packets.length && (await opts.packetsFlagEveryKeyframe?.().catch(() => false)))
      return { ok: false, spacing, method: "packets" };
  }
  const spacing = await measureKeyframeSpacing(bins, file, { durationSecs: opts.durationSecs });
  return { ok: spacing.maxGapSecs <= opts.maxGapSecs, spacing, method: "decode" };
}
