import type { MediaInfo } from "../media/probe.ts";
import type { Shot } from "../media/shots.ts";
import { sampleTextFrames } from "../media/text-frames.ts";
import type { OcrEngine, OcrLine } from "../ocr/engine.ts";
import { changed, mayHaveText, signature } from "../ocr/frame-test.ts";
import { readFrame } from "../ocr/read-frame.ts";
import { TextTracker, type TextRange } from "../ocr/tracks.ts";
import type { MediaBins } from "../media/process.ts";
import type { DecodeSkip } from "../media/decode.ts";
import { JobFailure } from "../jobs/failure.ts";

/** About one frame a second, like the image embeddings (plus every shot start). */
export const OCR_INTERVAL_SECS = 1;

export interface OcrStageResult {
  lines: TextRange[];
  /** Frames decoded for the stage. */
  sampled: number;
  /** Frames that went to tesseract. */
  read: number;
  /** Of those, frames read a second time for outlined white captions (src/ocr/read-frame.ts). */
  reread: number;
  /** Frames the cheap test found no text in. */
  noText: number;
  /** Frames unchanged since the last one read (their lines carried over). */
  carried: number;
}

/**
 * On-screen text of one video: frames sampled at ~1/s plus each shot's first frame, in grayscale
 * at up to 1280×720 (src/media/text-frames.ts), decoded with the video's decode plan (keyframes
 * only, or what a full decode may skip); an unchanged frame carries the previous lines
 * over, a frame without the look of text skips OCR; the rest are read by the OCR engine (bounded
 * worker threads) and joined into time ranges (src/ocr/tracks.ts). One frame is in flight at a
 * time: ffmpeg waits on the pipe while tesseract reads, so memory stays at a frame or two.
 */
export async function readOnScreenText(
  bins: MediaBins,
  engine: OcrEngine,
  source: string,
  info: MediaInfo,
  shots: Shot[],
  decode: { keyframesOnly: boolean; skipFrames?: DecodeSkip },
  signal: AbortSignal,
  onProgress: (within: number) => void,
): Promise<OcrStageResult> {
  const width = info.width!;
  const height = info.displayAspectRatio ? Math.max(2, Math.round(width / info.displayAspectRatio)) : info.height!;
  const tracker = new TextTracker(OCR_INTERVAL_SECS);
  const r: OcrStageResult = { lines: [], sampled: 0, read: 0, reread: 0, noText: 0, carried: 0 };
  let lastSig: Float32Array | null = null;
  let lastLines: OcrLine[] = [];
  const frames = sampleTextFrames(bins, source, {
    displayWidth: width,
    displayHeight: height,
    everySecs: OCR_INTERVAL_SECS,
    extraTimestamps: shots.slice(1).map((s) => s.start),
    keyframesOnly: decode.keyframesOnly,
    // The frame decode's own shortcuts (pipeline planDecode): a long-GOP file costs what that decode costs.
    skipFrames: decode.skipFrames,
    hdr: info.hdr,
    signal, // a stopped task (its video deleted) kills the decode at once
  });
  for await (const f of frames) {
    if (signal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
    r.sampled++;
    const sig = signature(f);
    if (!f.forced && !changed(lastSig, sig)) {
      r.carried++;
      tracker.push(f.timestamp, lastLines);
      continue;
    }
    lastSig = sig;
    if (!mayHaveText(f)) {
      r.noText++;
      lastLines = [];
    } else {
      const reading = await readFrame(engine, f);
      lastLines = reading.lines;
      r.read++;
      if (reading.passes > 1) r.reread++;
    }
    tracker.push(f.timestamp, lastLines);
    if (info.durationSecs) onProgress(Math.min(1, f.timestamp / info.durationSecs));
  }
  r.lines = tracker.finish(info.durationSecs);
  return r;
}
