import { open, stat } from "node:fs/promises";
import { decodeLimits, maxPixelsOf, refusedSize, tooLarge } from "./bounds.ts";
import { containerOf, looksLikeVideoContainer, mimeTypeOf, type Container } from "./container.ts";
import { MediaError } from "./errors.ts";
import { failureFromExit, runTool, type MediaBins } from "./process.ts";

export interface MediaInfo {
  /** ffprobe's demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "mpegts". */
  formatName: string;
  /** The sniffed container; null only with `strict: false` for a container we do not accept. */
  container: Container | null;
  /** MIME type of the sniffed container (video/mp2t for a TS), null when container is null. */
  mimeType: string | null;
  /** null when the container does not say (e.g. a WebM written by MediaRecorder). */
  durationSecs: number | null;
  /**
   * Coded size, swapped for a 90°/270° rotation (so it is upright, like the frames we decode).
   * Non-square pixels are not applied here; `displayAspectRatio` has the shape to show.
   */
  width: number | null;
  height: number | null;
  /** Width / height as shown: rotation and sample aspect ratio applied. */
  displayAspectRatio: number | null;
  fps: number | null;
  videoCodec: string | null;
  audioCodec: string | null;
  hasVideo: boolean;
  hasAudio: boolean;
  bitRate: number | null;
  sizeBytes: number;
  /** Clockwise degrees the player must rotate (0, 90, 180, 270); ffmpeg applies it when decoding. */
  rotation: number;
  pixFmt: string | null;
  /** PQ (smpte2084) or HLG (arib-std-b67) transfer: frames need tone mapping to look right. */
  hdr: boolean;
}

export interface ProbeOptions {
  /** true (default): throw UNSUPPORTED_FORMAT / NO_VIDEO_STREAM; false: report them in the result. */
  strict?: boolean;
  /** Also decode the first video frame with ffmpeg (the decoder ingest will use). Default true. */
  decodeCheck?: boolean;
  timeoutMs?: number;
  /** Kills the tools when aborted (the caller left). */
  signal?: AbortSignal;
}

interface FfStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  sample_aspect_ratio?: string;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  color_transfer?: string;
  duration?: string;
  disposition?: Record<string, number>;
  tags?: Record<string, string>;
  side_data_list?: { side_data_type?: string; rotation?: number }[];
}
interface FfProbeJson {
  streams?: FfStream[];
  format?: { format_name?: string; duration?: string; bit_rate?: string; tags?: Record<string, string> };
  error?: { code: number; string: string };
}

const HEADER_BYTES = 4096;

/**
 * Probes a file: what container it really is, its video/audio streams, and whether ffmpeg can
 * decode its first frame. Throws MediaError with FILE_NOT_FOUND, EMPTY_FILE, DECODE_FAILED,
 * UNSUPPORTED_FORMAT, NO_VIDEO_STREAM, TIMEOUT or TOOL_FAILED.
 *
 * Order of the verdicts: a file ffprobe cannot open is DECODE_FAILED if its first bytes claim an
 * accepted container (truncated, corrupt) and UNSUPPORTED_FORMAT otherwise (text, random bytes).
 * A file ffprobe opens that has audio but no video is NO_VIDEO_STREAM even in a container we would
 * refuse (an .mp3): "this has no picture" is the more useful answer.
 */
export async function probeMedia(bins: MediaBins, file: string, opts: ProbeOptions = {}): Promise<MediaInfo> {
  const strict = opts.strict ?? true;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const sizeBytes = await fileSize(file);
  const header = await readHeader(file);

  // ffprobe decodes the first frames to fill in what the container leaves out: under the pixel
  // bound like every decode (a 12000×12000 PNG frame took ffprobe alone 435 MB without it).
  const stderr: string[] = [];
  const run = await runTool(
    bins.ffprobe,
    [
      "-v",
      "error",
      "-hide_banner",
      ...decodeLimits(bins),
      "-print_format",
      "json",
      "-show_error",
      "-show_format",
      "-show_streams",
      file,
    ],
    { timeoutMs, signal: opts.signal, onStderrLine: (l) => stderr.length < 64 && stderr.push(l) },
  );
  if (run.signal) throw failureFromExit("ffprobe", run);
  let json: FfProbeJson;
  try {
    json = JSON.parse(new TextDecoder().decode(run.stdout)) as FfProbeJson;
  } catch {
    throw new MediaError("TOOL_FAILED", "ffprobe printed no JSON", run.tail.join("\n"));
  }
  if (json.error || run.code !== 0 || !json.format) {
    const why = json.error?.string ?? run.tail.at(-1) ?? `exit code ${run.code}`;
    if (looksLikeVideoContainer(header))
      throw new MediaError("DECODE_FAILED", `cannot read the file: ${why}`, run.tail.join("\n"));
    throw new MediaError("UNSUPPORTED_FORMAT", "not a video file in a supported format", why);
  }

  const streams = json.streams ?? [];
  const formatName = json.format.format_name ?? "";
  // Cover art in an .m4a/.mp3 shows up as a one-frame mjpeg/png "video" stream: not a video.
  const video = streams.find((s) => s.codec_type === "video" && !s.disposition?.attached_pic);
  const audio = streams.find((s) => s.codec_type === "audio");
  const container = containerOf(formatName, json.format.tags?.major_brand ?? null, header);

  if (strict && !video && audio) throw new MediaError("NO_VIDEO_STREAM", "the file has audio but no video stream");
  if (strict && !container) throw new MediaError("UNSUPPORTED_FORMAT", `unsupported container (${formatName})`);
  if (strict && !video) throw new MediaError("NO_VIDEO_STREAM", "the file has no video stream");

  // Over max_video_pixels: as declared, or as the first frame decoded (the container may say less).
  const maxPixels = maxPixelsOf(bins);
  if (video?.width && video.height && video.width * video.height > maxPixels)
    throw tooLarge(video.width, video.height, maxPixels);
  const refused = video ? refusedSize(stderr) : null;
  if (refused && !(video?.width && video.height)) throw tooLarge(refused.width, refused.height, maxPixels);

  const rotation = rotationOf(video);
  const swap = rotation === 90 || rotation === 270;
  const info: MediaInfo = {
    formatName,
    container,
    mimeType: container ? mimeTypeOf(container, formatName) : null,
    durationSecs: positive(json.format.duration) ?? positive(video?.duration),
    width: (swap ? video?.height : video?.width) ?? null,
    height: (swap ? video?.width : video?.height) ?? null,
    displayAspectRatio: video ? displayAspect(video, swap) : null,
    fps: video ? frameRateOf(video) : null,
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
    hasVideo: video !== undefined,
    hasAudio: audio !== undefined,
    bitRate: positive(json.format.bit_rate),
    sizeBytes,
    rotation,
    pixFmt: video?.pix_fmt ?? null,
    hdr: video?.color_transfer === "smpte2084" || video?.color_transfer === "arib-std-b67",
  };
  if (video && (opts.decodeCheck ?? true)) await checkFirstFrameDecodes(bins, file, timeoutMs, opts.signal);
  return info;
}

async function fileSize(file: string): Promise<number> {
  let st;
  try {
    st = await stat(file);
  } catch {
    throw new MediaError("FILE_NOT_FOUND", "file not found");
  }
  if (!st.isFile()) throw new MediaError("FILE_NOT_FOUND", "not a regular file");
  if (st.size === 0) throw new MediaError("EMPTY_FILE", "the file is empty");
  return st.size;
}

async function readHeader(file: string): Promise<Uint8Array> {
  const fh = await open(file, "r");
  try {
    const buf = new Uint8Array(HEADER_BYTES);
    const { bytesRead } = await fh.read(buf, 0, HEADER_BYTES, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * ffprobe parses headers; it does not prove the pictures decode (a file with a good moov and
 * garbage samples passes it). Decoding one frame with the *ffmpeg* binary — the one every later
 * stage uses, which is older than ffprobe and has a different decoder set — catches both.
 */
async function checkFirstFrameDecodes(
  bins: MediaBins,
  file: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  let frames = 0;
  const seen: { refused: { width: number; height: number } | null } = { refused: null };
  const run = await runTool(
    bins.ffmpeg,
    [
      "-hide_banner",
      "-nostdin",
      "-nostats",
      "-v",
      "error",
      "-progress",
      "pipe:2",
      ...decodeLimits(bins),
      "-i",
      file,
      "-map",
      "0:v:0",
      "-frames:v",
      "1",
      "-f",
      "null",
      "-",
    ],
    {
      timeoutMs,
      signal,
      onStderrLine: (line) => {
        const m = /^frame=\s*(\d+)/.exec(line);
        if (m) frames = Number(m[1]);
        else seen.refused ??= refusedSize([line]);
      },
    },
  );
  // The decoder refused the picture: a first frame over the bound, whatever the container declared.
  if (seen.refused && frames < 1) throw tooLarge(seen.refused.width, seen.refused.height, maxPixelsOf(bins));
  if (run.code !== 0 || run.signal) throw failureFromExit("cannot decode the video", run);
  if (frames < 1) throw new MediaError("DECODE_FAILED", "no video frame could be decoded", run.tail.join("\n"));
}

function positive(v: string | number | undefined): number | null {
  const n = typeof v === "number" ? v : v === undefined ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

function ratio(r: string | undefined): number | null {
  const m = /^(\d+)\/(\d+)$/.exec(r ?? "");
  if (!m || m[2] === "0" || m[1] === "0") return null;
  return Number(m[1]) / Number(m[2]);
}

/**
 * avg_frame_rate is usually right (r_frame_rate is the *field* rate of MPEG-1/2, 50 for 25 fps,
 * and a guess for VFR phone video), but Matroska with 1 ms timestamps can report avg 1000/1.
 * So: avg unless it is implausible or above r, then r.
 */
export function frameRateOf(s: Pick<FfStream, "avg_frame_rate" | "r_frame_rate">): number | null {
  const avg = ratio(s.avg_frame_rate);
  const r = ratio(s.r_frame_rate);
  if (avg !== null && avg <= 240 && (r === null || avg <= r * 1.001)) return avg;
  if (r !== null && r <= 240) return r;
  return avg;
}

function displayAspect(s: FfStream, swap: boolean): number | null {
  if (!s.width || !s.height) return null;
  const sar = /^(\d+):(\d+)$/.exec(s.sample_aspect_ratio ?? "");
  const pixel = sar && Number(sar[1]) > 0 && Number(sar[2]) > 0 ? Number(sar[1]) / Number(sar[2]) : 1;
  const dar = (s.width * pixel) / s.height;
  return swap ? 1 / dar : dar;
}

/** Display rotation from the display matrix (ffprobe ≥ 5) or the legacy `rotate` tag. */
function rotationOf(s: FfStream | undefined): number {
  if (!s) return 0;
  const fromMatrix = s.side_data_list?.find((d) => typeof d.rotation === "number")?.rotation;
  // The matrix gives counter-clockwise degrees (-90 = turn right); the tag gives clockwise.
  const cw = fromMatrix !== undefined ? -fromMatrix : Number(s.tags?.rotate ?? 0);
  if (!Number.isFinite(cw)) return 0;
  return (((Math.round(cw / 90) * 90) % 360) + 360) % 360;
}
