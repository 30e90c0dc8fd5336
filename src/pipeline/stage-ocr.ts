import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { MediaInfo } from "../media/probe.ts";
import type { Shot } from "../media/shots.ts";
import { decodeTextFrameFiles, sampleTextFrames, textFrameSize } from "../media/text-frames.ts";
import type { DecodeSkip } from "../media/decode.ts";
import { readAhead } from "../core/read-ahead.ts";
import { VideoTextReader, type TimedFrame, type VideoTextStats } from "../ocr/video-text.ts";
import type { TextRange } from "../ocr/tracks.ts";
import { JobFailure } from "../jobs/failure.ts";
import type { StageOutcome } from "../videos/schema.ts";
import type { PipelineDeps } from "./deps.ts";

/** About one frame a second, like the image embeddings (plus every shot start on its own decode). */
export const OCR_INTERVAL_SECS = 1;

/**
 * Gray frames decoded ahead of the reader (~0.9 MB each at 1280×720, so ~15 MB): ffmpeg decodes
 * the next ones while the engine works on this one, instead of stopping on a full pipe until it is
 * asked. On the 60 s share clip of bench/ocr-bench.ts the wait for frames was ~30 % of the stage
 * one at a time, 0.40–0.50 s of it four ahead, 0.25–0.32 s sixteen ahead.
 */
const FRAMES_AHEAD = 16;

/** Where the frame decode lists the text frames it wrote (index and time of each), once it has finished. */
const LIST_FILE = "frames.json";

export interface OcrStageResult extends VideoTextStats {
  lines: TextRange[];
  /** Where the frames came from: the frame decode's text frames, or a decode of its own. */
  source: "frame decode" | "own decode";
}

/** What the OCR stage needs of one run (ingest.ts). */
export interface OcrRun {
  videoId: string;
  source: string;
  info: MediaInfo;
  shots: Shot[];
  decode: { keyframesOnly: boolean; skipFrames?: DecodeSkip };
  signal: AbortSignal;
  onProgress: (within: number) => Promise<void>;
}

/** The video's display size: its width, and the height its display aspect gives. */
function displaySize(info: MediaInfo): { width: number; height: number } {
  const width = info.width!;
  const height = info.displayAspectRatio ? Math.max(2, Math.round(width / info.displayAspectRatio)) : info.height!;
  return { width, height };
}

/** The size of the gray frames OCR reads: the display shape within 1280×720 (text-frames.ts). */
export function ocrFrameSize(info: MediaInfo): { width: number; height: number } {
  const { width, height } = displaySize(info);
  return textFrameSize(width, height);
}

/** Written by the frame decode once its text frames are complete (stage-frames.ts). */
export function saveTextFrameList(dir: string, frames: { index: number; timestamp: number }[]): void {
  writeFileSync(join(dir, LIST_FILE), JSON.stringify(frames));
}

/**
 * The `ocr` stage's outcome for one video: reads the text (readOnScreenText), records what it
 * read and how, and says in words when a bound cut it short (`partial`).
 */
export async function ocrStage(d: PipelineDeps, r: OcrRun): Promise<{ outcome: StageOutcome; lines: TextRange[] }> {
  const t0 = performance.now();
  try {
    const res = await readOnScreenText(d, r);
    const how =
      `${res.sampled} frames (${res.source}): ${res.read} read` +
      (res.recognized || res.reused
        ? ` (${res.recognized} lines recognized, ${res.reused} kept from earlier frames)`
        : "") +
      (res.reread ? ` (${res.reread} twice)` : "") +
      `, ${res.noText} without text, ${res.carried} unchanged` +
      (res.overLimit
        ? `; ${res.overLimit} not read: more than ${d.ocrLimits.framesPerMinute} frames of one minute of video had text`
        : "");
    const took_ms = Math.round(performance.now() - t0);
    if (res.stopped) {
      const dur = r.info.durationSecs;
      return {
        lines: res.lines,
        outcome: {
          status: "partial",
          took_ms,
          count: res.lines.length,
          reason:
            `on-screen text was read up to ${clock(res.stopped.atSecs)}${dur ? ` of ${clock(dur)}` : ""}: ` +
            `this video's OCR time budget (${duration(res.stopped.budgetMs / 1000)}, ` +
            `${d.ocrLimits.budgetSecsPerMinute} s per minute of video) ran out, so text shown after that is not searchable. ${how}`,
        },
      };
    }
    return { lines: res.lines, outcome: { status: "ran", took_ms, count: res.lines.length, reason: how } };
  } finally {
    // Read (or failed for good): the frames are not needed again. An interrupted run keeps them
    // for the job's next attempt.
    if (!r.signal.aborted) d.files.removeTextFramesDir(r.videoId);
  }
}

/**
 * On-screen text of one video. Frames come from the frame decode when it left them
 * (`ocr-frames.tmp/`: every sampled frame in gray at up to 1280×720, written by the same decode
 * that fed the image model, so OCR costs no second decode of the video), else from a decode of
 * its own: ~1/s plus each shot's first frame, with the run's decode plan (keyframes only, or what
 * a full decode may skip). Either way frames decode a few ahead (FRAMES_AHEAD), one is read at a time, and the reading policy is
 * src/ocr/video-text.ts; bounded by `ocr_max_frames_per_minute` and the time budget
 * (`ocr_budget_secs_per_minute` × minutes of video, at least that).
 */
export async function readOnScreenText(d: PipelineDeps, r: OcrRun): Promise<OcrStageResult> {
  if (!d.ocr) throw new Error("readOnScreenText: OCR is off");
  const { width, height } = ocrFrameSize(r.info);
  const minutes = Math.max(1, (r.info.durationSecs ?? 0) / 60);
  const reader = new VideoTextReader(d.ocr, OCR_INTERVAL_SECS, {
    framesPerMinute: d.ocrLimits.framesPerMinute,
    budgetMs: d.ocrLimits.budgetSecsPerMinute * minutes * 1000,
  });
  const listed = passFrames(d, r.videoId, width, height, r.signal);
  const frames = readAhead(listed ? listed.frames : ownDecode(d, r), FRAMES_AHEAD);
  const starts = r.shots.slice(1).map((s) => s.start);
  let shotAt = 0;
  for await (const f of frames) {
    if (r.signal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
    // The frame decode's frames: the first one in each shot is a shot's first frame.
    if (listed) {
      while (shotAt < starts.length && starts[shotAt] - 1e-3 <= f.timestamp) {
        f.forced = true;
        shotAt++;
      }
    }
    if (!(await reader.push(f))) break;
    if (r.info.durationSecs) await r.onProgress(Math.min(1, f.timestamp / r.info.durationSecs));
  }
  return {
    ...reader.stats,
    lines: reader.finish(r.info.durationSecs),
    source: listed ? "frame decode" : "own decode",
  };
}

/** The frame decode's text frames, if it left a complete set; null otherwise. */
function passFrames(
  d: PipelineDeps,
  videoId: string,
  width: number,
  height: number,
  signal: AbortSignal,
): { frames: AsyncGenerator<TimedFrame> } | null {
  const dir = d.files.textFramesDir(videoId);
  const listFile = join(dir, LIST_FILE);
  if (!existsSync(listFile)) return null;
  let list: { index: number; timestamp: number }[];
  try {
    list = JSON.parse(readFileSync(listFile, "utf8"));
  } catch {
    return null;
  }
  const named = list
    .map((f) => ({ ...f, file: join(dir, `${String(f.index).padStart(8, "0")}.jpg`) }))
    .filter((f) => existsSync(f.file));
  if (named.length === 0 || named.length < list.length) return null;
  async function* frames(): AsyncGenerator<TimedFrame> {
    let i = 0;
    for await (const pixels of decodeTextFrameFiles(
      d.bins,
      named.map((f) => f.file),
      width,
      height,
      { dir, signal },
    )) {
      yield { width, height, pixels, timestamp: named[i++].timestamp, forced: false };
    }
  }
  return { frames: frames() };
}

async function* ownDecode(d: PipelineDeps, r: OcrRun): AsyncGenerator<TimedFrame> {
  const { width, height } = displaySize(r.info);
  yield* sampleTextFrames(d.bins, r.source, {
    displayWidth: width,
    displayHeight: height,
    everySecs: OCR_INTERVAL_SECS,
    extraTimestamps: r.shots.slice(1).map((s) => s.start),
    keyframesOnly: r.decode.keyframesOnly,
    // The frame decode's own shortcuts (pipeline planDecode): a long-GOP file costs what that decode costs.
    skipFrames: r.decode.skipFrames,
    hdr: r.info.hdr,
    signal: r.signal, // a stopped task (its video deleted) kills the decode at once
  });
}

/** 75.4 → "1:15". */
function clock(secs: number): string {
  const s = Math.max(0, Math.floor(secs));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** 150 → "2 min 30 s". */
function duration(secs: number): string {
  const s = Math.round(secs);
  const m = Math.floor(s / 60);
  return m ? `${m} min${s % 60 ? ` ${s % 60} s` : ""}` : `${s} s`;
}
