import {
  type DecodeSkip,
  fullDecodeSkip,
  type LoopFilter,
  loopFilterFor,
  readX264Options,
  x264ClosedGops,
} from "../media/decode.ts";
import type { MediaInfo } from "../media/probe.ts";
import { keyframesCloseEnough } from "../media/select.ts";
import type { PipelineDeps } from "./deps.ts";

/** Keyframe-only decoding is used when no keyframe gap (first 30 s) is longer than this. */
const MAX_KEYFRAME_GAP_SECS = 2.5;

/**
 * How a video is decoded: keyframes only, or a full decode that skips what it exactly can.
 * Decided once, by the ingest task, and handed to the OCR task that follows it (in the task's
 * payload), so a long-GOP file is never decoded in full by one and with shortcuts by the other.
 */
export interface DecodePlan {
  keyframesOnly: boolean;
  /** Full decode only (media/decode.ts fullDecodeSkip). */
  skipFrames?: DecodeSkip;
  /**
   * Full decode only, and only the visual decode's (config frame_loop_filter, decode.ts
   * loopFilterFor): the OCR decode always filters, so the pictures it reads stay exact.
   */
  loopFilter?: LoopFilter;
}

/**
 * Keyframes only or a full decode, and what a full decode may skip without changing a decoded
 * picture (x264 ref=1: every B picture; else non-reference pictures). The one decision for every
 * decode of the video: the frame decode, shot detection without a model, and OCR.
 */
export async function planDecode(
  d: Pick<PipelineDeps, "bins" | "frameLoopFilter">,
  source: string,
  info: MediaInfo,
  packetTimes: number[] | null,
): Promise<DecodePlan> {
  // x264's settings (one packet read, ~50 ms), read at most once and only where a full decode is
  // likely: they say what it may skip, and whether the packets' keyframes can be trusted.
  let x264: Promise<Record<string, string> | null> | null = null;
  const x264Options = () =>
    (x264 ??= info.videoCodec === "h264" ? readX264Options(d.bins, source) : Promise.resolve(null));
  const keyframesOnly = await useKeyframes(d, source, info, packetTimes, x264Options);
  if (keyframesOnly) return { keyframesOnly };
  const loopFilter = loopFilterFor(d.frameLoopFilter ?? "auto", info.width, info.height);
  return {
    keyframesOnly,
    skipFrames: await fullDecodeSkip(d.bins, source, info.videoCodec, await x264Options()),
    loopFilter,
  };
}

/** Short clips always decode every frame; longer ones use keyframes when they are close enough. */
async function useKeyframes(
  d: Pick<PipelineDeps, "bins">,
  source: string,
  info: MediaInfo,
  packetTimes: number[] | null,
  x264Options: () => Promise<Record<string, string> | null>,
): Promise<boolean> {
  if (!info.durationSecs || info.durationSecs <= 15 || !info.width) return false;
  const r = await keyframesCloseEnough(d.bins, source, {
    durationSecs: info.durationSecs,
    maxGapSecs: MAX_KEYFRAME_GAP_SECS,
    packetTimes,
    // x264 with closed GOPs: a long gap between flagged packets is a long GOP (no decode to confirm it).
    packetsFlagEveryKeyframe: async () => x264ClosedGops(await x264Options()),
  }).catch(() => null);
  return r?.ok ?? false;
}
