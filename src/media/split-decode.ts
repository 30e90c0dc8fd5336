import { decodeLimits } from "./bounds.ts";
import type { PipedFrame } from "./frame-pipe.ts";
import { MediaError } from "./errors.ts";
import { runTool, type MediaBins } from "./process.ts";

/**
 * A full decode split over time: N ffmpeg processes, each decoding its own range of the file from
 * a keyframe, joined in time order into the stream one decode would give (issue 14).
 *
 * Why: with `-skip_frame`, ffmpeg 4.1's H.264 frame threading gives no speedup (3.27 s one thread
 * vs 3.30 s default threads on 60 s of 1080p), so a long-GOP file's full decode runs on one core
 * while the model uses the other. Two decoders over disjoint halves use both.
 *
 * Exactness. Each range starts at a keyframe (an IDR in x264's output), so every picture decoded
 * from there is bit-identical to the one-decode picture (the same skipped pictures, the same
 * references). What would differ at a seam K, and how it is made the same:
 * - the sampling grid: a range's first decoded picture is always picked by its own process (its
 *   `select` has no previous pick); the join keeps it only where one decode would have picked it
 *   (its 1 s bucket differs from the last picked frame's, or an extra time lies in between), and
 *   later picks are the same either way (`joinFirstFrameKept`).
 * - the cut score: ffmpeg's `scene` compares a picture with the one before and with the previous
 *   difference, so the first two pictures of a range score wrongly there (the first against
 *   nothing, the second without the difference before it). The range before the seam therefore
 *   decodes READ_PAST_SECS past K, scoring K and the pictures after it as one decode does, and
 *   the range after K reports cuts from its third picture on (shots.ts cutAnalysisFilters
 *   `range`). A cut both report is the same frame, the same time: the union, deduplicated, then
 *   filtered as one decode's list, is the same list.
 * - seam choice keeps the rest unambiguous: not within 1 ms of a grid line (where the join's bucket
 *   arithmetic could round otherwise than ffmpeg's), not within 2 grid steps of the poster time
 *   (the poster branch runs in the one range that holds it), a next keyframe ≥ 0.5 s later (the
 *   seek lands on K: see `seekSecs`).
 */

export interface DecodeSegment {
  /** Keyframe this range starts at (null: the file start). Pictures before it are dropped (`trim`). */
  start: number | null;
  /** Next range's start (null: the file end). Frames at or after it are not sampled here. */
  end: number | null;
  /**
   * Where `-ss` seeks (with `-noaccurate_seek`): a little past `start`, because the demuxer seeks
   * by decode time, which for B-frame streams is a frame or two before the picture's own time:
   * seeking to K itself (or K + 1 ms) lands on the keyframe *before* K (measured: -ss 26.601 on a
   * keyframe at 26.6 started at 18.27). Landing early is still exact (trim drops the extra
   * pictures), only slower.
   */
  seekSecs: number | null;
  /** Input `-t`: how much to read from the seek point; past `end` by READ_PAST_SECS. */
  readSecs: number | null;
  /** Index (and JPEG number) of this range's first frame: ranges number their frames from here. */
  indexBase: number;
}

export interface SplitOptions {
  /** Processes to run at once (the machine's cores). Below 2 nothing is split. */
  processes: number;
  /** Files shorter than this are decoded in one process. Default 20 s. */
  minDurationSecs?: number;
  /**
   * Longest range: more ranges than processes for long files, so the frames a range decodes ahead
   * of the consumer (held in memory) stay bounded. Default 120 s.
   */
  maxSegmentSecs?: number;
}

/** More than one process, and a file long enough for a second one to pay for its start. */
export function splitMayPay(split: SplitOptions, durationSecs: number): boolean {
  return split.processes >= 2 && durationSecs >= (split.minDurationSecs ?? 20);
}

const rangeCount = (split: SplitOptions, durationSecs: number) =>
  Math.max(split.processes, Math.ceil(durationSecs / (split.maxSegmentSecs ?? 120)));

/** How far the range before a seam reads past it: enough to decode the two pictures its cut score needs. */
export const READ_PAST_SECS = 1;
const MIN_SEGMENT_SECS = 5;

/**
 * Ranges for a file of `durationSecs` with keyframes at `keyframes` (seconds, ascending), or null
 * when a split does not pay or no keyframe qualifies as a seam.
 */
export function planSegments(
  keyframes: readonly number[],
  o: { durationSecs: number; everySecs: number; posterSecs?: number | null; extraCount: number; split: SplitOptions },
): DecodeSegment[] | null {
  const { durationSecs: dur, everySecs: e } = o;
  if (!splitMayPay(o.split, dur)) return null;
  const n = rangeCount(o.split, dur);
  const ks = [...keyframes].sort((a, b) => a - b);
  const eligible = (k: number, i: number) => {
    const next = ks[i + 1] ?? dur;
    const frac = k / e - Math.floor(k / e);
    return (
      next - k >= 0.5 &&
      frac > 1e-3 / e &&
      frac < 1 - 1e-3 / e &&
      (o.posterSecs == null || Math.abs(k - o.posterSecs) >= 2 * e) &&
      k >= MIN_SEGMENT_SECS &&
      dur - k >= MIN_SEGMENT_SECS
    );
  };
  const seams: { k: number; next: number }[] = [];
  for (let s = 1; s < n; s++) {
    const target = (dur * s) / n;
    const last = seams.length ? seams[seams.length - 1].k : 0;
    let best: { k: number; next: number } | null = null;
    ks.forEach((k, i) => {
      if (k - last < MIN_SEGMENT_SECS || !eligible(k, i)) return;
      if (!best || Math.abs(k - target) < Math.abs(best.k - target)) best = { k, next: ks[i + 1] ?? dur };
    });
    if (best && !seams.some((x) => x.k === best!.k)) seams.push(best);
  }
  seams.sort((a, b) => a.k - b.k);
  if (!seams.length) return null;
  const out: DecodeSegment[] = [];
  let indexBase = 0;
  for (let i = 0; i <= seams.length; i++) {
    const start = i === 0 ? null : seams[i - 1].k;
    const end = i === seams.length ? null : seams[i].k;
    const seekSecs = i === 0 ? null : start! + Math.min(0.4, (seams[i - 1].next - start!) / 2);
    out.push({
      start,
      end,
      seekSecs,
      readSecs: end === null ? null : end + READ_PAST_SECS - (seekSecs ?? 0),
      indexBase,
    });
    // An upper bound of the frames this range can emit (one per grid bucket it touches, plus the
    // extra times), so the next range's numbers never collide with these.
    indexBase += Math.ceil(((end ?? dur) - (start ?? 0)) / e) + 2 + o.extraCount;
  }
  return out;
}

/**
 * Keyframe times of the whole file from the demuxer's packet flags (no decoding: 0.02 CPU-s for
 * 60 s of 1080p), read in windows around the seams wanted, so a long film does not list every
 * packet. Packets list IDR frames only in MP4, which is what a seam needs.
 */
export async function keyframesNearSeams(
  bins: MediaBins,
  file: string,
  durationSecs: number,
  split: SplitOptions,
): Promise<number[]> {
  const n = rangeCount(split, durationSecs);
  const half = Math.min(30, durationSecs / n / 2);
  const windows = Array.from({ length: n - 1 }, (_, i) => (durationSecs * (i + 1)) / n).map(
    (t) => `${Math.max(0, t - half).toFixed(3)}%${(t + half).toFixed(3)}`,
  );
  if (!windows.length) return [];
  return readKeyframesFromStart(bins, file, windows.join(","));
}

/**
 * Keyframe times (packet flags) in ffprobe `-read_intervals` windows, as times from the file's
 * start — what ffmpeg's `-ss` and a decode's timestamps count from (ffprobe prints the stream's
 * own: an MPEG-TS may start at 1.4 s). The windows themselves are in the stream's time, so on a
 * file that starts late they land a little off; whatever keyframes they hold are still exact.
 */
export async function readKeyframesFromStart(bins: MediaBins, file: string, intervals: string): Promise<number[]> {
  const run = await runTool(
    bins.ffprobe,
    [
      "-v",
      "error",
      ...decodeLimits(bins),
      "-select_streams",
      "v:0",
      "-read_intervals",
      intervals,
      "-show_entries",
      "packet=pts_time,flags:format=start_time",
      "-of",
      "csv=p=0",
      file,
    ],
    { timeoutMs: 60_000 },
  );
  if (run.code !== 0) throw new MediaError("DECODE_FAILED", "cannot read keyframes", run.tail.join("\n"));
  const keys: number[] = [];
  let start = 0;
  for (const line of new TextDecoder().decode(run.stdout).split("\n")) {
    const cols = line.trim().split(",");
    if (cols.length === 1 && cols[0] !== "" && Number.isFinite(Number(cols[0])))
      start = Number(cols[0]); // the format's start_time
    else if (cols.length >= 2 && /^K/.test(cols[1]) && cols[0] !== "" && Number.isFinite(Number(cols[0])))
      keys.push(Number(cols[0]));
  }
  return [...new Set(keys.map((k) => Math.round((k - start) * 1e6) / 1e6))].sort((a, b) => a - b);
}

/**
 * Whether one decode would have picked a range's first frame (time `t`): the frame is the first
 * of its grid bucket after the last frame picked before the seam (`lastPicked`, null if none), or
 * an extra time (nudged 0.1 ms earlier, as select.ts atOrAfterTerm) lies in (lastPicked, t].
 */
export function joinFirstFrameKept(
  t: number,
  lastPicked: number | null,
  everySecs: number,
  extras: readonly number[],
): boolean {
  if (lastPicked === null) return true;
  if (Math.floor(t / everySecs) > Math.floor(lastPicked / everySecs)) return true;
  return extras.some((x) => x - 1e-4 > lastPicked && x - 1e-4 <= t);
}

/**
 * One range's frames as its process produces them, read ahead into memory (bounded by the range's
 * length) so every range decodes at its own speed while the consumer is still on an earlier one.
 */
export class ReadAhead {
  private readonly buf: PipedFrame[] = [];
  private head = 0;
  private done = false;
  private error: unknown = null;
  private wake: (() => void) | null = null;
  readonly finished: Promise<void>;

  constructor(source: AsyncGenerator<PipedFrame>) {
    this.finished = (async () => {
      try {
        for await (const f of source) {
          this.buf.push(f);
          this.wake?.();
        }
      } catch (e) {
        this.error = e;
      } finally {
        this.done = true;
        this.wake?.();
      }
    })();
  }

  async *frames(): AsyncGenerator<PipedFrame> {
    for (;;) {
      if (this.head < this.buf.length) {
        const f = this.buf[this.head];
        this.buf[this.head++] = undefined as unknown as PipedFrame; // let the consumer own it alone
        yield f;
      } else if (this.error) throw this.error;
      else if (this.done) return;
      else {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
      }
    }
  }
}
