import { MediaError } from "./errors.ts";
import { type MediaBins, runTool } from "./process.ts";

/**
 * What one media job may cost (SPEC §8: "every media job is bounded"), in one place:
 *
 * - **Pixels.** `max_video_pixels` (default 8K, 7680×4320) bounds the frames a decoder will
 *   allocate: every ffmpeg/ffprobe that decodes video gets `-max_pixels` before its input, so a
 *   frame over it is refused by the decoder itself ("Picture size … exceeds specified max pixel
 *   count") whatever the container declared, and the probe refuses a file whose declared or first
 *   decoded size is over it (VIDEO_TOO_LARGE). A 1.3 MB MOV of 12000×12000 PNG frames took 435 MB
 *   in ffprobe alone and 4.6 GB in a rendition; with the bound ffprobe stays at ~14 MB.
 * - **Frames and timestamps.** Work that encodes (renditions, clips) is bounded by the frames the
 *   file really has, counted from its packets (`scanTimeline`), not by the span its timestamps
 *   claim: encoders keep the source's timestamps without filling gaps (`-vsync vfr`), so a file of
 *   49 frames with one at t = 100 000 s is 49 frames of work (it was 2.5 million duplicated ones).
 *   Such a file is neither refused nor re-timed: its frames keep the times search returns and the
 *   source plays, and damaged captures with a timestamp jump still index (docs/INGEST.md).
 * - **Time.** Encodes get a timeout proportional to those frames and their size, with a hard
 *   ceiling (`encodeTimeoutMs`).
 * - **Memory per process.** Decoders and encoders run with few threads (each frame thread holds
 *   its own frames), and the decoded size is bounded as above.
 */
export const DEFAULT_MAX_VIDEO_PIXELS = 7680 * 4320;

/** The bound every video decode runs under: `bins.maxPixels`, else 8K. */
export const maxPixelsOf = (bins: Pick<MediaBins, "maxPixels">): number => bins.maxPixels ?? DEFAULT_MAX_VIDEO_PIXELS;

/** Input options for ffmpeg/ffprobe (before `-i`, or anywhere for ffprobe): no decoded frame over the bound. */
export const decodeLimits = (bins: Pick<MediaBins, "maxPixels">): string[] => [
  "-max_pixels",
  String(maxPixelsOf(bins)),
];

/** ffmpeg's words when a decoder refuses a frame over `-max_pixels`. */
const OVERSIZE = /Picture size (\d+)x(\d+) exceeds specified max pixel count/;

/** The size a decoder refused, from a tool's stderr lines; null when none was refused. */
export function refusedSize(lines: readonly string[]): { width: number; height: number } | null {
  for (const l of lines) {
    const m = OVERSIZE.exec(l);
    if (m) return { width: Number(m[1]), height: Number(m[2]) };
  }
  return null;
}

export function tooLarge(width: number, height: number, maxPixels: number): MediaError {
  return new MediaError(
    "VIDEO_TOO_LARGE",
    `the video is ${width}×${height} (${((width * height) / 1e6).toFixed(1)} megapixels); at most ${(maxPixels / 1e6).toFixed(1)} megapixels (max_video_pixels) are decoded`,
  );
}

export interface Timeline {
  /** Video packets (frames) in the file, or in the asked span and the GOP before it. */
  frames: number;
  firstSecs: number | null;
  lastSecs: number | null;
  /** Largest step between consecutive frame times (0 with fewer than two). */
  maxGapSecs: number;
}

/**
 * Counts the first video stream's frames and reads their time range from the packets (a demux,
 * no decode: reading the file once). With `start`/`duration` only that span is read (ffprobe seeks
 * to the keyframe before `start`, so the frames a seek must decode are counted too).
 */
export async function scanTimeline(
  bins: MediaBins,
  file: string,
  opts: { start?: number; duration?: number; timeoutMs?: number } = {},
): Promise<Timeline> {
  const interval =
    opts.start !== undefined ? ["-read_intervals", `${opts.start.toFixed(3)}%+${(opts.duration ?? 0).toFixed(3)}`] : [];
  const run = await runTool(
    bins.ffprobe,
    [
      "-v",
      "error",
      ...decodeLimits(bins),
      "-select_streams",
      "v:0",
      ...interval,
      "-show_entries",
      "packet=pts_time,dts_time",
      "-of",
      "csv=p=0",
      file,
    ],
    // ~30 bytes a packet: 64 MiB is 2 million frames (a day at 25 fps); more is refused below.
    { timeoutMs: opts.timeoutMs ?? 120_000, maxStdoutBytes: 64 * 1024 * 1024 },
  ).catch((e) => {
    if (e instanceof MediaError && e.code === "TOOL_FAILED") {
      throw new MediaError("VIDEO_TOO_LONG", "the video has more frames than can be counted (over ~2 million)");
    }
    throw e;
  });
  if (run.code !== 0) throw new MediaError("DECODE_FAILED", "cannot read the video's packets", run.tail.join("\n"));
  let frames = 0;
  let first: number | null = null;
  let last: number | null = null;
  let prev: number | null = null;
  let maxGap = 0;
  const text = new TextDecoder().decode(run.stdout);
  for (let i = 0; i < text.length; ) {
    let j = text.indexOf("\n", i);
    if (j < 0) j = text.length;
    const line = text.slice(i, j);
    i = j + 1;
    if (!line) continue;
    frames++;
    const comma = line.indexOf(",");
    const pts = Number(comma < 0 ? line : line.slice(0, comma));
    const t = Number.isFinite(pts) && line[0] !== "," ? pts : Number(line.slice(comma + 1));
    if (!Number.isFinite(t)) continue;
    // Packets come in decode order; B-frames make pts step back a little: gaps are between sorted times.
    first = first === null ? t : Math.min(first, t);
    last = last === null ? t : Math.max(last, t);
    if (prev !== null && t > prev) maxGap = Math.max(maxGap, t - prev);
    prev = prev === null ? t : Math.max(prev, t);
  }
  return { frames, firstSecs: first, lastSecs: last, maxGapSecs: maxGap };
}

/** Hard ceiling of one encode (a rendition of a long film at the largest size): 6 hours. */
export const MAX_ENCODE_MS = 6 * 3600_000;

/**
 * Wall-clock budget of an encode of `frames` frames of `pixels` each: a fixed start-up share plus
 * a per-frame share that grows with the frame size (x264 veryfast on one busy core of the 2-core
 * reference machine: ~40 frames/s at 1080p; the budget allows ~11), capped at MAX_ENCODE_MS.
 */
export function encodeTimeoutMs(frames: number, pixels: number, ceilingMs = MAX_ENCODE_MS): number {
  const perFrameMs = 5 + pixels * 4e-5;
  return Math.min(ceilingMs, Math.round(30_000 + frames * perFrameMs));
}

/** Threads of one decoder and one encoder: each frame thread holds frames of its own (memory grows with them). */
export const CODEC_THREADS = "2";
