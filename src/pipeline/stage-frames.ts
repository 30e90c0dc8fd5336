import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { DecodeSkip, LoopFilter } from "../media/decode.ts";
import { sampleFrames, type SampledFrame } from "../media/frames.ts";
import { dropNearDuplicates } from "../media/dedupe.ts";
import { ShotTracker } from "../media/scene-score.ts";
import type { MediaInfo } from "../media/probe.ts";
import type { Shot } from "../media/shots.ts";
import type { ActiveModel } from "../models/roles.ts";
import type { PipelineDeps } from "./deps.ts";
import { ocrFrameSize, saveTextFrameList } from "./stage-ocr.ts";

export interface FrameEmbedding {
  timestamp: number;
  vector: Float32Array;
  /** Position in the decoded stream: names its JPEG when the pass wrote thumbnails. */
  frameIndex: number;
}

export interface VisualPassOptions {
  /** Shot boundaries already known, sampled in addition to the grid (the pipeline passes none). */
  boundaries?: number[];
  /**
   * Keyframes only: shot changes are scored in JS on the decoded keyframes. Otherwise a full decode
   * that skips non-reference pictures (decode.ts "noref") and finds the cuts in the same run
   * (sampleFrames' `cuts`). Either way the video is decoded once.
   */
  keyframesOnly: boolean;
  /** Full decode: what it may skip. Default FULL_DECODE_SKIP. */
  skipFrames?: DecodeSkip;
  /** Full decode: whether the loop filter runs (decode.ts). Default "exact". */
  loopFilter?: LoopFilter;
  /**
   * Write a thumbnail of every decoded frame here (`frameJpegPath`; those of dropped frames are
   * removed), and the poster (`passPosterPath`): the first sampled frame at 10 % of the duration.
   */
  jpegDir?: string;
  /**
   * With `jpegDir`: also write every sampled frame in gray for the OCR stage here, and the list of
   * them once the decode is complete (stage-ocr.ts), so on-screen text needs no decode of its own.
   */
  textDir?: string;
}

export const POSTER_WIDTH = 640;
/** Where the visual pass leaves the poster in its JPEG folder. */
export const passPosterPath = (dir: string) => join(dir, "poster.jpg");
/** The poster shows the video at 10 % of its length: past black openings and titles. */
export const posterTimeSecs = (durationSecs: number | null) => (durationSecs ?? 0) * 0.1;

/** Thumbnail width, and where the visual pass leaves the JPEG of frame `index`. */
export const SHOT_THUMB_WIDTH = 320;
export const frameJpegPath = (dir: string, index: number) => join(dir, `${String(index).padStart(8, "0")}.jpg`);

/** A frame embedding placed in its shot (shots may be known only after sampling). */
export interface EmbeddedFrame extends FrameEmbedding {
  shotIndex: number;
}

/** CLIP's input side; frames are decoded by ffmpeg straight to it. */
const CLIP_SIZE = 224;
/** The sampling grid by default (config frame_interval_secs): one frame per second. */
export const DEFAULT_FRAME_INTERVAL_SECS = 1;
/**
 * What a full decode may always skip: "noref" leaves every decoded picture bit-exact and still
 * decodes a picture at least every few frames (x264: 2 of 4; the grid and the scene score need no
 * more). The pipeline uses "bidir" instead where it is exact too (media/decode.ts fullDecodeSkip).
 */
export const FULL_DECODE_SKIP = "noref" as const;

export const shotIndexAt = (shots: Shot[], t: number): number => {
  for (let i = shots.length - 1; i >= 0; i--) if (t >= shots[i].start - 1e-3) return shots[i].index;
  return 0;
};

/**
 * About one frame a second (config frame_interval_secs) plus any known shot boundary, decoded to 224×224 RGB and piped (no temp
 * images), near-duplicates dropped (at least one kept every 4 s), embedded in batches in the
 * worker pool. While the pool embeds one batch, ffmpeg keeps decoding the next. The same decode
 * can also score shot changes and write thumbnails (see VisualPassOptions).
 */
export async function embedFrames(
  d: PipelineDeps,
  source: string,
  info: MediaInfo,
  model: ActiveModel,
  opts: VisualPassOptions,
  signal: AbortSignal,
  onProgress: (fraction: number) => Promise<void>,
): Promise<{ frames: FrameEmbedding[]; sampled: number; boundaries: number[] | null; note?: string }> {
  // Split only where a seek lands on the keyframe asked for: MP4/MOV seek by their sample table.
  // (An MPEG-TS seek lands wherever a timestamp search ends — past the keyframe, losing pictures.)
  const seeksExactly = info.container === "mp4" || info.container === "mov";
  const split =
    !opts.keyframesOnly && seeksExactly && (d.frameDecodeProcesses ?? 1) > 1
      ? { processes: d.frameDecodeProcesses! }
      : undefined;
  const stream = sampleFrames(d.bins, source, {
    size: CLIP_SIZE,
    everySecs: d.frameIntervalSecs ?? DEFAULT_FRAME_INTERVAL_SECS,
    extraTimestamps: opts.boundaries ?? [],
    durationSecs: info.durationSecs,
    keyframesOnly: opts.keyframesOnly,
    hdr: info.hdr,
    signal, // a stopped task kills the decode now, not when the model batch in flight returns
    jpegs: opts.jpegDir ? { dir: opts.jpegDir, width: SHOT_THUMB_WIDTH } : undefined,
    poster: opts.jpegDir
      ? { path: passPosterPath(opts.jpegDir), atSecs: posterTimeSecs(info.durationSecs), width: POSTER_WIDTH }
      : undefined,
    textFrames:
      opts.jpegDir && opts.textDir && info.width && info.height
        ? { dir: opts.textDir, ...ocrFrameSize(info) }
        : undefined,
    // Keyframes decode fast on one thread; the model has both cores busy anyway, and a single
    // decoder thread spends ~10 % less CPU than ffmpeg's frame threads. A full decode of a long
    // file is split over time into one process per core instead (with -skip_frame, frame threads
    // do not parallelise H.264: media/split-decode.ts).
    threads: opts.keyframesOnly ? 1 : undefined,
    split,
    ...(opts.keyframesOnly
      ? {}
      : { cuts: {}, skipFrames: opts.skipFrames ?? FULL_DECODE_SKIP, loopFilter: opts.loopFilter }),
  });
  const tracker = opts.keyframesOnly ? new ShotTracker() : null;
  const dropped: Promise<void>[] = [];
  // Every decoded frame goes past the shot tracker (a cut is a difference to the frame before);
  // frames the dedupe step drops lose their thumbnail right away, so a long video's temp folder
  // holds only frames that were embedded.
  // (The consumer below sets keptIndex before it asks for the next frame; so when this generator
  // resumes after `yield f`, f was kept exactly when keptIndex is f's index.)
  let keptIndex = -1;
  const sampledList: { index: number; timestamp: number }[] = [];
  async function* decoded(): AsyncGenerator<SampledFrame> {
    for await (const f of stream) {
      sampledList.push({ index: f.index, timestamp: f.timestamp });
      tracker?.push(f.timestamp, f.rgb);
      yield f;
      if (opts.jpegDir && keptIndex !== f.index)
        dropped.push(rm(frameJpegPath(opts.jpegDir, f.index), { force: true }));
    }
  }
  const deduped = dropNearDuplicates(decoded(), { maxGapSecs: 4 });
  const pool = await d.pool();
  const out: FrameEmbedding[] = [];
  let batch: SampledFrame[] = [];
  let inFlight: Promise<void> = Promise.resolve();

  const flush = (frames: SampledFrame[]) => {
    const meta = frames.map((f) => ({ timestamp: f.timestamp, frameIndex: f.index }));
    const run = pool.embedImages(
      { modelDir: model.dir, dtype: model.dtype, batchSize: d.batchSize },
      frames.map((f) => ({ rgb: f.rgb, width: CLIP_SIZE, height: CLIP_SIZE })),
    );
    const prev = inFlight;
    inFlight = (async () => {
      const emb = await run;
      await prev;
      emb.vectors.forEach((v, i) => out.push({ ...meta[i], vector: v }));
      if (info.durationSecs) await onProgress(Math.min(1, meta[meta.length - 1].timestamp / info.durationSecs));
    })();
    // Awaited below, unless the decode fails (or is stopped) first: then its outcome is nobody's.
    inFlight.catch(() => {});
    // At most one batch waits while another is embedded: memory stays bounded for any length.
    return prev;
  };

  // The first batch is half size so the model starts while ffmpeg is still warming up; the sizes
  // stay fixed (q8 embeddings move slightly with their batch mates, so runs must batch alike).
  let limit = Math.max(1, Math.ceil(d.batchSize / 2));
  for await (const f of deduped) {
    keptIndex = f.index;
    if (signal.aborted) break;
    batch.push(f);
    if (batch.length >= limit) {
      limit = d.batchSize;
      await flush(batch);
      batch = [];
    }
  }
  if (batch.length) await flush(batch);
  await inFlight;
  await Promise.all(dropped);
  // Only a complete decode lists its text frames: the OCR stage decodes on its own otherwise.
  if (opts.textDir && !signal.aborted) saveTextFrameList(opts.textDir, sampledList);
  out.sort((a, b) => a.timestamp - b.timestamp);
  const st = stream.stats;
  const note =
    `${st.mode === "keyframes" ? "keyframe decode" : `full decode (${opts.skipFrames ?? FULL_DECODE_SKIP} pictures skipped${opts.loopFilter === "skip" ? ", no loop filter" : ""})`}` +
    (st.seams?.length
      ? `, in ${st.seams.length + 1} processes split at keyframes ${st.seams.map((t) => t.toFixed(2)).join(", ")} s`
      : "") +
    `; ${deduped.stats.dropped} near-duplicates dropped` +
    (st.decodeErrors ? `; ${st.decodeErrors} corrupt frame(s) skipped` : "");
  return { frames: out, sampled: st.framesEmitted, boundaries: tracker ? tracker.boundaries() : st.cuts, note };
}
