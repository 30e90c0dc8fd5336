import { decodeLimits } from "./bounds.ts";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jpegCodecArgs } from "./filters.ts";
import { cutOptions, filterGraph, filterGraphWithJpegs } from "./frame-graph.ts";
import { throwIfStreamRunFailed, ToolProcess, type MediaBins } from "./process.ts";
import { decodeSkipArgs, type DecodeSkip, type LoopFilter } from "./decode.ts";
import { cutAnalysisFilters, filterBoundaries } from "./shots.ts";
import { keyframesCloseEnough, samplingExpression, type KeyframeSpacing } from "./select.ts";
import { createShowinfoParser, isErrorLine } from "./showinfo.ts";
import { pipedFrames, ShowinfoQueue, type PipedFrame } from "./frame-pipe.ts";
import {
  joinFirstFrameKept,
  keyframesNearSeams,
  planSegments,
  ReadAhead,
  splitMayPay,
  type DecodeSegment,
  type SplitOptions,
} from "./split-decode.ts";

export interface SampleFramesOptions {
  /** Output side in pixels (CLIP: 224). Frames are size × size RGB. */
  size?: number;
  /** One frame per this many seconds of video (the first frame of each bucket). Default 1. */
  everySecs?: number;
  /** Also emit the first frame at or after each of these times (shot boundaries). */
  extraTimestamps?: readonly number[];
  /**
   * true: decode keyframes only (`-skip_frame nokey`: 0.32 vs 5.7 CPU-s per minute of 1080p
   * H.264 with 2 s GOPs, see bench/media-decode.ts; one frame per GOP at most);
   * false: decode everything and pick; "auto" (default): keyframes only when the measured
   * keyframe spacing is at most `maxKeyframeGapSecs`. Short clips (≤ 15 s) always decode all.
   */
  keyframesOnly?: "auto" | boolean;
  /** From probeMedia; lets "auto" skip the measurement for short clips. */
  durationSecs?: number | null;
  /** "auto" accepts keyframe mode when no keyframe gap is longer than this. Default 2 × everySecs. */
  maxKeyframeGapSecs?: number;
  /** From probeMedia: PQ/HLG video is tone-mapped to SDR so the model sees normal colours. */
  hdr?: boolean;
  /**
   * Also write a JPEG of every emitted frame to `dir/<index>.jpg` (8 digits, the frame's `index`),
   * scaled to `width` with the display aspect — thumbnails from the decode that happens anyway,
   * instead of seeking and decoding again per shot. The caller owns (and removes) the folder.
   */
  jpegs?: { dir: string; width: number; quality?: number };
  /**
   * Also write a poster: the first emitted frame at or after `atSecs`, `width` wide, to `path`
   * (nothing is written if no frame qualifies). Needs `jpegs` (it is a branch of the same graph).
   */
  poster?: { path: string; atSecs: number; width: number; quality?: number };
  /**
   * Also write every emitted frame in gray at `width` × `height` for the OCR stage, as a JPEG of
   * quality ~97 (mjpeg q 2: ~75 KB at 1280×720) named like its thumbnail, in `dir`: the frames
   * for reading on-screen text from the decode that happens anyway (issue 28). Needs `jpegs`.
   */
  textFrames?: { dir: string; width: number; height: number };
  /**
   * Full decode only: also find the shot changes, in the same decode. The decoded pictures are
   * `split` into the sampling chain and detectShotBoundaries' analysis chain (shrink, `scene`
   * score, showinfo@cuts, nullsink), so the cuts are the ones a separate detectShotBoundaries run
   * would find, without decoding the video a second time. They land in `stats.cuts` once the
   * stream has ended. They cannot steer this run's sampling (the grid is fixed before they are
   * known): see docs/INGEST.md on shots shorter than `everySecs`.
   */
  cuts?: { threshold?: number; analysisWidth?: number; minShotSecs?: number };
  /** Kills every ffmpeg of this decode at once when this aborts (process.ts SpawnOptions.signal). */
  signal?: AbortSignal;
  /** Full decode only: pictures the decoder may skip (decode.ts). Default "none". */
  skipFrames?: DecodeSkip;
  /** Full decode only: whether the loop filter runs (decode.ts). Default "exact". */
  loopFilter?: LoopFilter;
  /**
   * Full decode only: decode in up to `processes` ffmpeg processes over ranges that start at
   * keyframes, joined into the same stream (split-decode.ts). Needs `durationSecs` and a container
   * whose seeks land on the keyframe asked for (MP4/MOV: the caller decides); short files and
   * files without a usable keyframe near a seam decode in one process. Default: one process.
   */
  split?: SplitOptions;
  /** Decoder threads (ffmpeg picks by default; a range of a split decode: 1). */
  threads?: number;
  /** Kill ffmpeg when it produces nothing for this long while we wait on it. Default 60 s. */
  stallTimeoutMs?: number;
  /** Optional wall-clock limit for the whole run, consumer time included. */
  timeoutMs?: number;
}

export interface SampledFrame {
  /**
   * 0-based position in this stream, and the number of its JPEG (`jpegs`). A split decode numbers
   * each range from its own base: still unique and increasing, with gaps (split-decode.ts).
   */
  index: number;
  /** True presentation time in seconds (from the decoded frame's pts), relative to the file start. */
  timestamp: number;
  /** size × size × 3 bytes, RGB, row-major. Owned by the consumer. */
  rgb: Uint8Array;
  keyframe: boolean;
  /** Emitted because of one of `extraTimestamps` (a shot boundary). */
  forced: boolean;
}

export interface FrameStats {
  /** Which decode was used; null until iteration starts. */
  mode: "keyframes" | "all" | null;
  /** The measurement behind an "auto" decision, if one was made. */
  keyframeSpacing: KeyframeSpacing | null;
  framesEmitted: number;
  /** Error-level messages from the demuxer/decoder (corrupt data); decoding carried on past them. */
  decodeErrors: number;
  /** The first few of those messages. */
  errorSamples: string[];
  /** Shot boundaries found by the `cuts` analysis (seconds, ascending); null when it did not run. */
  cuts: number[] | null;
  /** Where a split decode's ranges met (keyframe times); absent when one process decoded. */
  seams?: number[];
}

export interface FrameStream extends AsyncIterable<SampledFrame> {
  /** Filled in as the stream is consumed; final once iteration has finished. */
  readonly stats: FrameStats;
}

/** Above this, the filtergraph goes through -filter_script: one argv string may not exceed 128 KiB. */
const MAX_INLINE_FILTER = 32 * 1024;

/**
 * Samples frames decoded straight to model input: ffmpeg picks the frames (select), resizes the
 * shortest *display* side to `size` with bicubic (what CLIP's preprocessing uses; swscale widens
 * the kernel when shrinking, so it anti-aliases), center-crops size × size and writes raw rgb24 to
 * a pipe. No temp images. We read exactly one frame at a time, so at most a pipe's worth of data
 * is in flight: a slow consumer blocks ffmpeg instead of filling memory.
 *
 * Rotation: ffmpeg applies the display matrix itself (autorotate), and `dar` (not the coded
 * width/height) decides the aspect, so portrait phone video and non-square pixels come out right.
 * Corrupt data mid-stream is logged by the decoder and skipped; we count it in `stats`.
 * Each iteration runs ffmpeg afresh; leaving the loop early kills it.
 */
export function sampleFrames(bins: MediaBins, file: string, opts: SampleFramesOptions = {}): FrameStream {
  const stats: FrameStats = {
    mode: null,
    keyframeSpacing: null,
    framesEmitted: 0,
    decodeErrors: 0,
    errorSamples: [],
    cuts: null,
  };
  return { stats, [Symbol.asyncIterator]: () => run(bins, file, opts, stats) };
}

async function* run(
  bins: MediaBins,
  file: string,
  opts: SampleFramesOptions,
  stats: FrameStats,
): AsyncGenerator<SampledFrame> {
  const size = opts.size ?? 224;
  const every = opts.everySecs ?? 1;
  if (!Number.isInteger(size) || size < 8 || size > 4096) throw new RangeError("size must be an integer in 8..4096");
  if (!(every > 0)) throw new RangeError("everySecs must be > 0");
  const extras = [...new Set(opts.extraTimestamps ?? [])]
    .filter((t) => Number.isFinite(t) && t >= 0)
    .sort((a, b) => a - b);

  const keyframes = await chooseKeyframeMode(bins, file, opts, every, stats);
  stats.mode = keyframes ? "keyframes" : "all";

  if (opts.poster && !opts.jpegs) throw new RangeError("poster needs jpegs");
  if (opts.textFrames && !opts.jpegs) throw new RangeError("textFrames needs jpegs");
  const poster = opts.poster && Number.isFinite(opts.poster.atSecs) ? opts.poster : undefined;
  const cuts = !keyframes && opts.cuts ? cutOptions(opts.cuts) : null;
  const plan: DecodePlan = { size, every, extras, hdr: opts.hdr ?? false, poster, cuts, keyframes };
  const segments =
    !keyframes && opts.split && opts.durationSecs
      ? await splitInto(bins, file, opts.split, opts.durationSecs, plan)
      : null;
  const procs: ToolProcess[] = [];
  try {
    if (!segments) {
      const cutTimes: number[] = [];
      for await (const f of decodeRange(bins, file, opts, plan, null, stats, cutTimes, procs)) {
        stats.framesEmitted++;
        yield sampled(f);
      }
      if (cuts) stats.cuts = filterBoundaries(cutTimes, cuts.minShotSecs);
      return;
    }
    stats.seams = segments.slice(1).map((s) => s.start!);
    // Up to `processes` ranges decode at once, each read ahead into memory (split-decode.ts); the
    // consumer takes them in time order, and the next range starts when one is used up.
    const cutLists = segments.map((): number[] => []);
    const running: ReadAhead[] = [];
    const start = (i: number) =>
      (running[i] = new ReadAhead(decodeRange(bins, file, opts, plan, segments[i], stats, cutLists[i], procs)));
    for (let i = 0; i < Math.min(opts.split!.processes, segments.length); i++) start(i);
    const unpicked: number[] = [];
    let lastPicked: number | null = null;
    for (let i = 0; i < segments.length; i++) {
      let first = i > 0;
      for await (const f of running[i].frames()) {
        if (first) {
          first = false;
          // The range's seek must have landed on its keyframe (trim drops what comes before it);
          // landing past it loses pictures. Counted like corrupt data, not silently.
          if (!f.keyframe || f.timestamp > segments[i].start! + 1e-3) {
            stats.decodeErrors++;
            if (stats.errorSamples.length < 5)
              stats.errorSamples.push(`split decode: the range from ${segments[i].start} s began at ${f.timestamp} s`);
          }
          if (!joinFirstFrameKept(f.timestamp, lastPicked, every, extras)) {
            unpicked.push(f.index);
            continue;
          }
          f.forced = extras.some((x) => x - 1e-4 > (lastPicked ?? -Infinity) && x - 1e-4 <= f.timestamp);
        }
        lastPicked = f.timestamp;
        stats.framesEmitted++;
        yield sampled(f);
      }
      await running[i].finished;
      const next = i + opts.split!.processes;
      if (next < segments.length) start(next);
    }
    // A range's first frame that one decode would not have picked also loses its thumbnail (its
    // process has exited: the file is complete).
    for (const dir of [opts.jpegs?.dir, opts.textFrames?.dir])
      if (dir) await Promise.all(unpicked.map((n) => rm(jpegPath(dir, n), { force: true })));
    // The range before a seam scores on past it (the same pictures, the same scores as the range
    // after it, which skips its first two): a cut found by both is one cut.
    if (cuts) stats.cuts = filterBoundaries([...new Set(cutLists.flat())], cuts.minShotSecs);
  } finally {
    for (const p of procs) p.dispose();
  }
}

interface DecodePlan {
  size: number;
  every: number;
  extras: number[];
  hdr: boolean;
  poster: SampleFramesOptions["poster"];
  cuts: ReturnType<typeof cutOptions> | null;
  keyframes: boolean;
}

const sampled = (f: PipedFrame): SampledFrame => ({
  index: f.index,
  timestamp: f.timestamp,
  rgb: f.bytes,
  keyframe: f.keyframe,
  forced: f.forced,
});
const jpegPath = (dir: string, index: number) => join(dir, `${String(index).padStart(8, "0")}.jpg`);

/** The ranges of a split decode, or null where one process decodes the file (split-decode.ts). */
async function splitInto(
  bins: MediaBins,
  file: string,
  split: SplitOptions,
  durationSecs: number,
  plan: DecodePlan,
): Promise<DecodeSegment[] | null> {
  const probe = {
    durationSecs,
    everySecs: plan.every,
    posterSecs: plan.poster?.atSecs ?? null,
    extraCount: plan.extras.length,
    split,
  };
  if (!splitMayPay(split, durationSecs)) return null;
  const keyframes = await keyframesNearSeams(bins, file, durationSecs, split).catch(() => null);
  return keyframes ? planSegments(keyframes, probe) : null;
}

/**
 * One ffmpeg over `seg` (null: the whole file, as before splitting existed): its sampled frames
 * (indices from `seg.indexBase`), its cut times into `cutTimes`, its errors into `stats`.
 */
async function* decodeRange(
  bins: MediaBins,
  file: string,
  opts: SampleFramesOptions,
  plan: DecodePlan,
  seg: DecodeSegment | null,
  stats: FrameStats,
  cutTimes: number[],
  procs: ToolProcess[],
): AsyncGenerator<PipedFrame> {
  const { size, every, extras, hdr, cuts, keyframes } = plan;
  const ends = seg?.end != null ? `*lt(t,${(seg.end - 1e-3).toFixed(6)})` : "";
  const expr = ends ? `(${samplingExpression(every, extras)})${ends}` : samplingExpression(every, extras);
  const from = seg?.start ?? 0;
  const poster =
    plan.poster && (seg === null || (plan.poster.atSecs >= from && (seg.end === null || plan.poster.atSecs < seg.end)))
      ? plan.poster
      : undefined;
  const trim = seg?.start != null ? `trim=start=${(seg.start - 1e-3).toFixed(6)}` : null;
  const complex = Boolean(opts.jpegs || cuts);
  // With cuts, the decoded pictures are split first: the analysis must see every decoded picture,
  // the sampler only the ones it selects. A range after a seam drops what precedes its keyframe.
  const root = trim && complex ? `[0:v:0]${trim}[seg];` : "";
  const source = root ? "[seg]" : "[0:v:0]";
  const input = cuts ? "[main]" : source;
  let graph = opts.jpegs
    ? filterGraphWithJpegs(expr, size, hdr, opts.jpegs.width, poster, input, opts.textFrames)
    : cuts
      ? `${input}${filterGraph(expr, size, hdr)}[rgb]`
      : `${trim ? `${trim},` : ""}${filterGraph(expr, size, hdr)}`;
  const range = seg ? { fromThirdPicture: seg.start !== null } : undefined;
  if (cuts)
    graph = `${source}split[cutsrc][main];[cutsrc]${cutAnalysisFilters(cuts.width, cuts.threshold, "cuts", range)},nullsink;${graph}`;
  graph = root + graph;
  let scriptDir: string | null = null;
  let filterArgs = [complex ? "-filter_complex" : "-vf", graph];
  if (graph.length > MAX_INLINE_FILTER) {
    scriptDir = await mkdtemp(join(tmpdir(), "vsearch-frames-"));
    await writeFile(join(scriptDir, "graph.txt"), graph);
    filterArgs = [complex ? "-filter_complex_script" : "-filter_script:v", join(scriptDir, "graph.txt")];
  }
  // passthrough: rawvideo is a constant-frame-rate muxer, so by default ffmpeg would duplicate or
  // drop frames to fill its grid and stdout would stop matching showinfo one to one.
  const rgbOut = ["-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"];
  const outputs = opts.jpegs
    ? [
        "-map",
        "[rgb]",
        ...rgbOut,
        "-map",
        "[jpg]",
        ...jpegCodecArgs(opts.jpegs.quality),
        "-f",
        "image2",
        "-start_number",
        String(seg?.indexBase ?? 0),
        join(opts.jpegs.dir, "%08d.jpg"),
        ...(poster
          ? ["-map", "[poster]", ...jpegCodecArgs(poster.quality), "-update", "1", "-f", "image2", poster.path]
          : []),
        ...(opts.textFrames
          ? [
              "-map",
              "[txt]",
              ...["-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p"],
              ...["-f", "image2", "-start_number", String(seg?.indexBase ?? 0)],
              join(opts.textFrames.dir, "%08d.jpg"),
            ]
          : []),
      ]
    : cuts
      ? ["-map", "[rgb]", ...rgbOut]
      : ["-map", "0:v:0", "-an", "-sn", "-dn", ...rgbOut];
  // A range keeps the file's own times (-copyts; start_at_zero: less the start time, as one decode
  // does); it seeks without trimming (its graph's trim does, at the keyframe) and stops reading a
  // little past its end.
  const rangeArgs = seg
    ? [
        "-copyts",
        "-start_at_zero",
        ...(seg.seekSecs !== null ? ["-noaccurate_seek", "-ss", seg.seekSecs.toFixed(6)] : []),
        ...(seg.readSecs !== null ? ["-t", seg.readSecs.toFixed(6)] : []),
      ]
    : [];

  const parse = createShowinfoParser();
  const parseCut = createShowinfoParser("cuts");
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
      // Keyframes only: nothing is predicted from the decoded pictures, so skipping the deblocking
      // filter cannot drift; it saves ~10 % of the decode and moves 224 px pixels by < 1/255 on
      // average (0.2 on 1080p H.264, 0.7 on a 300 kbit/s 360p one).
      ...(keyframes
        ? ["-skip_frame", "nokey", "-skip_loop_filter", "all"]
        : decodeSkipArgs(opts.skipFrames, opts.loopFilter)),
      // A range of a split decode runs on one thread: the ranges are the parallelism.
      ...(opts.threads || seg ? ["-threads", String(opts.threads ?? 1)] : []),
      ...rangeArgs,
      ...decodeLimits(bins),
      "-i",
      file,
      ...filterArgs,
      ...outputs,
    ],
    {
      timeoutMs: opts.timeoutMs,
      stallTimeoutMs: opts.stallTimeoutMs ?? 60_000,
      signal: opts.signal,
      onStderrLine: (line) => {
        const f = parse(line);
        if (f) {
          infos.push(f);
          return;
        }
        const cut = cuts ? parseCut(line) : null;
        if (cut) {
          if (Number.isFinite(cut.time)) cutTimes.push(cut.time);
        } else if (isErrorLine(line) && !(opts.skipFrames === "bidir" && line.includes("mmco: unref short failure"))) {
          // (With bidir, H.264's instruction to drop a B-ref it never decoded is logged as an error;
          // nothing is missing from any decoded picture: decode.ts.)
          stats.decodeErrors++;
          if (stats.errorSamples.length < 5) stats.errorSamples.push(line.slice(0, 300));
        }
      },
    },
  );
  procs.push(proc);
  void proc.stderrClosed.then(() => infos.close());

  try {
    const base = seg?.indexBase ?? 0;
    for await (const f of pipedFrames(proc, size * size * 3, infos, extras)) yield { ...f, index: base + f.index };
    const exit = await proc.exited();
    throwIfStreamRunFailed("frame sampling failed", exit, "video");
    await proc.stderrClosed; // every showinfo@cuts line is in
  } finally {
    proc.dispose();
    if (scriptDir) await rm(scriptDir, { recursive: true, force: true });
  }
}

async function chooseKeyframeMode(
  bins: MediaBins,
  file: string,
  opts: SampleFramesOptions,
  every: number,
  stats: FrameStats,
): Promise<boolean> {
  const mode = opts.keyframesOnly ?? "auto";
  if (typeof mode === "boolean") return mode;
  // Short clips: a full decode costs little and gives the best frames; skip the measurement.
  if (opts.durationSecs != null && opts.durationSecs <= 15) return false;
  const { ok, spacing } = await keyframesCloseEnough(bins, file, {
    durationSecs: opts.durationSecs ?? null,
    maxGapSecs: opts.maxKeyframeGapSecs ?? 2 * every,
  });
  stats.keyframeSpacing = spacing;
  return ok;
}
