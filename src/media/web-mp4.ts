import { CODEC_THREADS, decodeLimits } from "./bounds.ts";
import { MediaError } from "./errors.ts";
import { HDR_TO_SDR } from "./filters.ts";
import { failureFromExit, ToolProcess, type MediaBins } from "./process.ts";

export interface WebMp4Options {
  /** PQ/HLG source: tone-mapped to SDR BT.709 (8-bit H.264 cannot carry HDR a browser shows right). */
  hdr: boolean;
  hasAudio: boolean;
  /** Cut a span (seconds); omitted: the whole file. */
  start?: number;
  duration?: number;
  /** Wall-clock limit, ms. */
  timeoutMs: number;
  /**
   * Cap on the total bit rate, bits/s (a rendition is at most the source's size: for a source
   * coded more tightly than CRF 23 would be, the cap wins). The audio's 128 kb/s is taken off it.
   */
  maxBitRate?: number | null;
  /** Kills ffmpeg (server shutdown); the caller then ignores the result. */
  signal?: AbortSignal;
}

/**
 * Encodes `src` as what every browser plays: H.264 (High, yuv420p, 8-bit) + AAC stereo in MP4 with
 * the index up front (`+faststart`, so playback starts before the whole file arrives). Never
 * larger than the source frame (and, with `maxBitRate`, about the source's bytes at most) (only rounded down to even sizes, which 4:2:0 needs); rotation is
 * applied, so the output is upright. A span is cut with `-ss` before `-i`: ffmpeg seeks to the
 * keyframe before `start` and decodes up to it, so with re-encoding the cut is exact to the frame
 * (stream copy could only start at a keyframe, up to a GOP early).
 */
export async function encodeWebMp4(bins: MediaBins, src: string, out: string, o: WebMp4Options): Promise<void> {
  // Below ~200 kb/s of video H.264 turns to mush; such sources are tiny anyway.
  const videoCap = o.maxBitRate ? Math.max(200_000, Math.floor(o.maxBitRate - (o.hasAudio ? 128_000 : 0))) : null;
  const vf = ["scale=w='trunc(iw/2)*2':h='trunc(ih/2)*2'", ...(o.hdr ? [HDR_TO_SDR] : []), "format=yuv420p"].join(",");
  const args = [
    "-hide_banner",
    "-nostdin",
    "-loglevel",
    "error",
    "-y",
    // Memory: a bounded decoded size, and two decoder threads (each holds frames of its own).
    ...decodeLimits(bins),
    "-threads",
    CODEC_THREADS,
    ...(o.start !== undefined ? ["-ss", o.start.toFixed(3)] : []),
    "-i",
    src,
    ...(o.duration !== undefined ? ["-t", o.duration.toFixed(3)] : []),
    "-map",
    "0:v:0",
    ...(o.hasAudio ? ["-map", "0:a:0"] : []),
    "-vf",
    vf,
    "-filter_threads",
    "1",
    // The source's own timestamps, no frames made up to fill gaps: the work is the frames the file
    // has (a file with one frame at t = 100 000 s was 2.5 million duplicated frames; bounds.ts).
    "-vsync",
    "vfr",
    "-c:v",
    "libx264",
    "-threads",
    CODEC_THREADS,
    "-preset",
    "veryfast",
    "-crf",
    "23",
    "-profile:v",
    "high",
    "-pix_fmt",
    "yuv420p",
    ...(videoCap ? ["-maxrate", String(videoCap), "-bufsize", String(videoCap * 2)] : []),
    ...(o.hasAudio ? ["-c:a", "aac", "-b:a", "128k", "-ac", "2"] : []),
    "-sn",
    "-dn",
    "-map_metadata",
    "-1",
    "-movflags",
    "+faststart",
    "-f",
    "mp4",
    out,
  ];
  const p = new ToolProcess(bins.ffmpeg, args, { timeoutMs: o.timeoutMs });
  const onAbort = () => p.kill();
  o.signal?.addEventListener("abort", onAbort);
  try {
    await p.readAll(1024); // ffmpeg writes the file, not stdout
    const run = await p.exited();
    if (o.signal?.aborted) throw new MediaError("TOOL_FAILED", "stopped");
    if (run.code !== 0 || run.signal) throw failureFromExit("ffmpeg (web mp4)", run);
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
    p.dispose();
  }
}
