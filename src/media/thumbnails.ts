import { decodeLimits } from "./bounds.ts";
import { rename, rm, stat } from "node:fs/promises";
import { threadId } from "node:worker_threads";
import { decodeSkipArgs, type DecodeSkip } from "./decode.ts";
import { MediaError } from "./errors.ts";
import { jpegCodecArgs, thumbnailFilters } from "./filters.ts";
import { failureFromExit, runTool, throwIfStreamRunFailed, type MediaBins } from "./process.ts";
import { readKeyframesFromStart } from "./split-decode.ts";

export interface ThumbnailOptions {
  /** Output width in pixels; height follows the display aspect (rounded to even). Default 320. */
  width?: number;
  /** JPEG quality 1–100, higher is better (mapped onto ffmpeg's mjpeg q 31..2). Default 85. */
  quality?: number;
  /** From probeMedia: tone-map PQ/HLG video so thumbnails are not washed out. */
  hdr?: boolean;
  /**
   * The requested times are keyframe times (from keyframe-only sampling): decode keyframes only,
   * so each thumbnail costs one frame instead of everything since the previous keyframe.
   */
  keyframesOnly?: boolean;
  /**
   * Otherwise, pictures the seek's decode may skip on its way to the time (decode.ts): "noref"
   * decodes the pictures before it that matter and no others, bit-exact; the shown picture is the
   * first one decoded at or after the time. Default "none".
   */
  skipFrames?: DecodeSkip;
  /**
   * The container's seeks land on the keyframe asked for (MP4/MOV, by their sample table): a full
   * decode may then start at the keyframe at or before the time (`keyframeSeeks`) instead of
   * ffmpeg's accurate seek, which on a keyframe starts a GOP early. Default false.
   */
  seeksExactly?: boolean;
  /** Per ffmpeg run. Default 60 s. */
  timeoutMs?: number;
}

export interface ThumbnailRequest {
  timestampSecs: number;
  outPath: string;
}

/**
 * One JPEG of the frame shown at `timestampSecs`. Input seeking (`-ss` before `-i`) is exact in
 * ffmpeg ≥ 2.1: it jumps to the keyframe before and decodes forward, so this costs one GOP, not the
 * video up to there. Written to a temp name in the same directory and renamed, so readers never see
 * half a file. A time past the last frame yields the last frame.
 */
export async function writeThumbnail(
  bins: MediaBins,
  file: string,
  timestampSecs: number,
  outPath: string,
  opts: ThumbnailOptions = {},
): Promise<void> {
  await writeThumbnails(bins, file, [{ timestampSecs, outPath }], { ...opts, batchSize: 1 });
}

/**
 * Many thumbnails (one per shot) with few processes: each ffmpeg run opens the file once per
 * requested time (`-ss T -i file` repeated, each seeking on its own) and writes one JPEG per
 * input. The per-thumbnail cost stays one GOP decode, exactly as with separate runs (measured:
 * same CPU, ~0.12 CPU-s per 1080p thumbnail with 2 s GOPs); what batching saves is a process
 * start per shot, which shows as wall time on a busy machine. `batchSize` bounds the decoders
 * alive at once (a 4K H.264 decoder holds ~200 MB of reference frames). One run with `select`
 * over the whole file would decode everything: 5.4 CPU-s per minute of 1080p, so it only pays
 * with more than about one thumbnail per GOP.
 */
export async function writeThumbnails(
  bins: MediaBins,
  file: string,
  requests: readonly ThumbnailRequest[],
  opts: ThumbnailOptions & { batchSize?: number } = {},
): Promise<void> {
  const batch = Math.max(1, Math.min(32, opts.batchSize ?? 8));
  for (const r of requests) if (!(r.timestampSecs >= 0)) throw new RangeError("timestampSecs must be ≥ 0");
  const seeks =
    opts.keyframesOnly || !opts.seeksExactly || requests.length === 0
      ? null
      : await keyframeSeeks(
          bins,
          file,
          requests.map((r) => r.timestampSecs),
        );
  for (let i = 0; i < requests.length; i += batch) {
    const part = requests.slice(i, i + batch);
    const temps = part.map((r) => tempNameFor(r.outPath));
    const args = ["-hide_banner", "-nostdin", "-nostats", "-v", "error", "-y"];
    const trims: (string | null)[] = [];
    part.forEach((r, k) => {
      if (opts.keyframesOnly) args.push("-skip_frame", "nokey");
      else args.push(...decodeSkipArgs(opts.skipFrames));
      const seek = seeks?.[i + k] ?? null;
      if (seek === null) {
        args.push("-threads", "1", ...decodeLimits(bins), "-ss", r.timestampSecs.toFixed(6), "-i", file);
        trims.push(null);
      } else {
        // Keep the file's times, seek past the keyframe at or before T so the demuxer lands on it
        // (not on the one before: keyframeSeeks), and start the output at T.
        args.push(
          "-threads",
          "1",
          ...decodeLimits(bins),
          "-copyts",
          "-start_at_zero",
          "-noaccurate_seek",
          "-ss",
          seek.toFixed(6),
          "-i",
          file,
        );
        trims.push(`trim=start=${Math.max(0, r.timestampSecs - 1e-3).toFixed(6)}`);
      }
    });
    part.forEach((_, k) => args.push("-map", `${k}:v:0`, ...jpegOutputArgs(opts, trims[k] ?? undefined), temps[k]));
    try {
      const exit = await runTool(bins.ffmpeg, args, { timeoutMs: opts.timeoutMs ?? 60_000 });
      throwIfStreamRunFailed("thumbnail failed", exit, "video");
      for (let k = 0; k < part.length; k++) {
        // Nothing decoded at/after the time (it is past the last frame): take the last frame.
        if (!(await nonEmpty(temps[k]))) await lastFrameTo(bins, file, temps[k], opts);
        await rename(temps[k], part[k].outPath);
      }
    } finally {
      await Promise.all(temps.map((t) => rm(t, { force: true })));
    }
  }
}

/**
 * A poster for the video: ffmpeg's `thumbnail` filter picks the most representative of 60 frames
 * (the one closest to their average histogram — not a fade or a black frame) starting at 10% of
 * the duration, capped at 30 s in, since openings are often black or titles. Default width 640.
 */
export async function writePoster(
  bins: MediaBins,
  file: string,
  outPath: string,
  opts: ThumbnailOptions & { durationSecs?: number | null } = {},
): Promise<void> {
  const start = opts.durationSecs ? Math.min(opts.durationSecs * 0.1, 30) : 0;
  const tmp = tempNameFor(outPath);
  try {
    const exit = await runTool(
      bins.ffmpeg,
      [
        "-hide_banner",
        "-nostdin",
        "-nostats",
        "-v",
        "error",
        "-y",
        ...decodeLimits(bins),
        "-ss",
        start.toFixed(6),
        "-i",
        file,
        "-map",
        "0:v:0",
        ...jpegOutputArgs({ ...opts, width: opts.width ?? 640 }, "thumbnail=60"),
        tmp,
      ],
      { timeoutMs: opts.timeoutMs ?? 60_000 },
    );
    if (exit.code !== 0) throw failureFromExit("poster failed", exit);
    if (!(await nonEmpty(tmp))) await lastFrameTo(bins, file, tmp, opts);
    await rename(tmp, outPath);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** The last frame: seek to 3 s before the end and let `-update 1` overwrite one file per frame. */
async function lastFrameTo(bins: MediaBins, file: string, tmp: string, opts: ThumbnailOptions): Promise<void> {
  const args = jpegOutputArgs(opts).filter((a, i, all) => !(a === "-frames:v" || all[i - 1] === "-frames:v"));
  const exit = await runTool(
    bins.ffmpeg,
    [
      "-hide_banner",
      "-nostdin",
      "-nostats",
      "-v",
      "error",
      "-y",
      ...decodeLimits(bins),
      "-sseof",
      "-3",
      "-i",
      file,
      "-map",
      "0:v:0",
      ...args,
      tmp,
    ],
    { timeoutMs: opts.timeoutMs ?? 60_000 },
  );
  if (exit.code !== 0) throw failureFromExit("thumbnail failed", exit);
  if (!(await nonEmpty(tmp))) throw new MediaError("DECODE_FAILED", "no frame could be decoded for the thumbnail");
}

/** Longest way back from a thumbnail's time to its keyframe that keyframeSeeks trusts. */
const MAX_GOP_SECS = 30;

/**
 * For each time T, where a decode that starts at the keyframe at or before T should seek
 * (`-noaccurate_seek -ss`), or null for a plain accurate seek. ffmpeg's `-ss T` seeks the demuxer
 * by decode time, which in a B-frame stream is a frame or two before the picture's own: for T on a
 * keyframe (a shot starting at a cut, where x264 puts its keyframes) it lands on the keyframe
 * *before*, a whole GOP earlier — 250 frames with x264's default (60 s 1080p: 0.28 CPU-s for one
 * thumbnail instead of 0.04). Seeking a little past the keyframe lands on it (split-decode.ts
 * DecodeSegment.seekSecs). The keyframes come from the packet flags around each T (no decoding).
 */
async function keyframeSeeks(bins: MediaBins, file: string, times: number[]): Promise<(number | null)[] | null> {
  const windows = times.map((t) => `${Math.max(0, t - 2).toFixed(3)}%${(t + 1).toFixed(3)}`).join(",");
  const keys = await readKeyframesFromStart(bins, file, windows).catch(() => null);
  if (!keys?.length) return null;
  return times.map((t) => {
    const k = keys.filter((x) => x <= t + 1e-6).pop();
    if (k === undefined || t - k > MAX_GOP_SECS) return null;
    const next = keys.find((x) => x > k) ?? Infinity;
    return k + Math.min(0.4, (next - k) / 2);
  });
}

function jpegOutputArgs(opts: ThumbnailOptions, preFilter?: string): string[] {
  const filters = [...(preFilter ? [preFilter] : []), ...thumbnailFilters(opts.width ?? 320, opts.hdr ?? false)];
  return ["-vf", filters.join(","), "-frames:v", "1", ...jpegCodecArgs(opts.quality), "-update", "1", "-f", "image2"];
}

function tempNameFor(outPath: string): string {
  return `${outPath}.tmp-${process.pid}-${threadId}-${Math.random().toString(36).slice(2)}`;
}

/** The file exists and has bytes (an ffmpeg output that was really written). */
export async function nonEmpty(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}
