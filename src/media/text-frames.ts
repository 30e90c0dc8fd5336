import { decodeLimits } from "./bounds.ts";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { textFrameFilters } from "./frame-graph.ts";
import { decodeSkipArgs, type DecodeSkip } from "./decode.ts";
import { throwIfStreamRunFailed, ToolProcess, type MediaBins } from "./process.ts";
import { samplingExpression } from "./select.ts";
import { createShowinfoParser } from "./showinfo.ts";
import { pipedFrames, ShowinfoQueue } from "./frame-pipe.ts";

/**
 * Frames for reading on-screen text: grayscale at up to 1280×720 (the display shape kept, never
 * upscaled), piped raw. This is its own decode rather than a branch of the CLIP decode
 * (frames.ts): that one makes 224 px squares, far too small for text, and carrying 1280×720 frames
 * from it would mean holding them (0.9 MB each) until OCR runs, which happens after the video is
 * already searchable. Decoding keyframes again costs ~0.3 CPU-s a minute of 1080p H.264
 * (bench/media-decode.ts), small beside OCR itself. A full decode (long GOPs) skips what the
 * frame decode skips (`skipFrames`), so it costs what that one does, not a plain decode.
 */
export interface TextFramesOptions {
  /** Display width and height of the video (probe: width and width / display aspect). */
  displayWidth: number;
  displayHeight: number;
  /** One frame per this many seconds (the first of each bucket). Default 1. */
  everySecs?: number;
  /** Also the first frame at or after each of these times (shot starts). */
  extraTimestamps?: readonly number[];
  /** Decode keyframes only (the pipeline's choice for this video). */
  keyframesOnly: boolean;
  /**
   * Full decode only: pictures the decoder may skip — the same decision, and the same decoder
   * arguments (decode.ts `decodeSkipArgs`), as the frame decode of this video (frames.ts). Every
   * picture still decoded is bit-identical to a plain decode's at the same timestamp; a grid frame
   * may be the next decoded picture (≤ 3 pictures later with x264's 3 B-frames: 0.1 s at 30 fps); the shot
   * starts the pipeline passes in are times of pictures that same skip decoded, so each is there.
   * Default "none".
   */
  skipFrames?: DecodeSkip;
  hdr?: boolean;
  /** Kills ffmpeg at once when this aborts (process.ts SpawnOptions.signal). */
  signal?: AbortSignal;
  /** Longest / shortest side of the output at most. Default 1280 / 720. */
  maxLong?: number;
  maxShort?: number;
  stallTimeoutMs?: number;
}

export interface TextFrame {
  index: number;
  timestamp: number;
  width: number;
  height: number;
  /** width × height bytes, 8-bit luma. Owned by the consumer. */
  pixels: Uint8Array;
  /** Emitted because of one of `extraTimestamps`. */
  forced: boolean;
}

const MAX_INLINE_FILTER = 32 * 1024;

/** Output size: the display shape scaled down to fit, even sides (zimg and the scaler like them). */
export function textFrameSize(
  displayWidth: number,
  displayHeight: number,
  maxLong = 1280,
  maxShort = 720,
): { width: number; height: number } {
  const landscape = displayWidth >= displayHeight;
  const [maxW, maxH] = landscape ? [maxLong, maxShort] : [maxShort, maxLong];
  const f = Math.min(1, maxW / displayWidth, maxH / displayHeight);
  const even = (n: number) => Math.max(2, Math.round((n * f) / 2) * 2);
  return { width: even(displayWidth), height: even(displayHeight) };
}

export async function* sampleTextFrames(
  bins: MediaBins,
  file: string,
  opts: TextFramesOptions,
): AsyncGenerator<TextFrame> {
  const every = opts.everySecs ?? 1;
  if (!(every > 0)) throw new RangeError("everySecs must be > 0");
  if (!(opts.displayWidth > 0 && opts.displayHeight > 0)) throw new RangeError("display size must be positive");
  const { width, height } = textFrameSize(opts.displayWidth, opts.displayHeight, opts.maxLong, opts.maxShort);
  const extras = [...new Set(opts.extraTimestamps ?? [])]
    .filter((t) => Number.isFinite(t) && t >= 0)
    .sort((a, b) => a - b);
  const graph = [
    `select='${samplingExpression(every, extras)}'`,
    ...textFrameFilters(width, height, opts.hdr ?? false),
    "showinfo",
  ].join(",");
  let scriptDir: string | null = null;
  let filterArgs = ["-vf", graph];
  if (graph.length > MAX_INLINE_FILTER) {
    scriptDir = await mkdtemp(join(tmpdir(), "vsearch-text-frames-"));
    await writeFile(join(scriptDir, "graph.txt"), graph);
    filterArgs = ["-filter_script:v", join(scriptDir, "graph.txt")];
  }
  const parse = createShowinfoParser();
  const infos = new ShowinfoQueue();
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
      ...(opts.keyframesOnly ? ["-skip_frame", "nokey"] : decodeSkipArgs(opts.skipFrames)),
      // One decoder thread: this runs while CLIP and Whisper may be busy on the other cores.
      "-threads",
      "1",
      ...decodeLimits(bins),
      "-i",
      file,
      ...filterArgs,
      "-map",
      "0:v:0",
      "-an",
      "-sn",
      "-dn",
      "-vsync",
      "passthrough",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "gray",
      "pipe:1",
    ],
    {
      stallTimeoutMs: opts.stallTimeoutMs ?? 60_000,
      signal: opts.signal,
      onStderrLine: (line) => {
        // Corrupt data (error lines) is skipped by the decoder: OCR just sees fewer frames.
        const f = parse(line);
        if (f) infos.push(f);
      },
    },
  );
  void proc.stderrClosed.then(() => infos.close());
  try {
    for await (const f of pipedFrames(proc, width * height, infos, extras)) {
      yield { index: f.index, timestamp: f.timestamp, width, height, pixels: f.bytes, forced: f.forced };
    }
    const exit = await proc.exited();
    throwIfStreamRunFailed("text frame sampling failed", exit, "video");
  } finally {
    proc.dispose();
    if (scriptDir) await rm(scriptDir, { recursive: true, force: true });
  }
}

/**
 * Gray frames written earlier as JPEG files (the frame decode's text branch, frames.ts
 * `textFrames`), decoded in order by one ffmpeg through a concat list: `width` × `height` bytes
 * each, one per file. A file that does not decode ends the stream with an error.
 */
export async function* decodeTextFrameFiles(
  bins: MediaBins,
  files: readonly string[],
  width: number,
  height: number,
  opts: {
    /** Where the concat list is written (the frames' own folder: a crash leaves nothing elsewhere). */
    dir?: string;
    /** Kills ffmpeg at once when this aborts (a deleted video). */
    signal?: AbortSignal;
    stallTimeoutMs?: number;
  } = {},
): AsyncGenerator<Uint8Array> {
  if (files.length === 0) return;
  const listDir = await mkdtemp(join(opts.dir ?? tmpdir(), "vsearch-text-list-"));
  try {
    const list = join(listDir, "frames.ffconcat");
    // Absolute paths of our own files; quotes escaped as the concat format wants.
    await writeFile(
      list,
      `ffconcat version 1.0\n${files.map((f) => `file '${f.replaceAll("'", "'\\''")}'`).join("\n")}\n`,
    );
    const proc = new ToolProcess(
      bins.ffmpeg,
      [
        "-hide_banner",
        "-nostdin",
        "-nostats",
        "-loglevel",
        "error",
        "-f",
        "concat",
        "-safe",
        "0",
        "-i",
        list,
        "-vf",
        `scale=${width}:${height},format=gray`,
        "-vsync",
        "passthrough",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "gray",
        "pipe:1",
      ],
      { stallTimeoutMs: opts.stallTimeoutMs ?? 60_000, signal: opts.signal },
    );
    try {
      for (let i = 0; i < files.length; i++) {
        const bytes = new Uint8Array(width * height);
        if ((await proc.readFull(bytes)) < bytes.length) break;
        yield bytes;
      }
      const exit = await proc.exited();
      throwIfStreamRunFailed("reading the text frames failed", exit, "video");
    } finally {
      proc.dispose();
    }
  } finally {
    await rm(listDir, { recursive: true, force: true });
  }
}
