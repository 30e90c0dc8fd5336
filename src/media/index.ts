/**
 * The media layer: ffprobe/ffmpeg wrappers for the ingest pipeline. Every function takes the
 * binary paths (`MediaBins`) from its caller and throws only `MediaError`.
 */
export { MediaError, isMediaError, type MediaErrorCode } from "./errors.ts";
export type { MediaBins } from "./process.ts";
export { probeMedia, type MediaInfo, type ProbeOptions } from "./probe.ts";
export { CONTAINER_MIME, type Container } from "./container.ts";
export {
  detectShotBoundaries,
  shotsFromBoundaries,
  filterBoundaries,
  type Shot,
  type ShotDetectionOptions,
} from "./shots.ts";
export {
  sampleFrames,
  type FrameStats,
  type FrameStream,
  type SampledFrame,
  type SampleFramesOptions,
} from "./frames.ts";
export {
  keyframesCloseEnough,
  keyframeSpacing,
  measureKeyframeSpacing,
  readKeyframeTimes,
  type KeyframeSpacing,
} from "./select.ts";
export { ShotTracker, sceneScore, type ShotTrackerOptions } from "./scene-score.ts";
export {
  dropNearDuplicates,
  lumaSignature,
  signatureDistance,
  type DedupeFrame,
  type DedupeOptions,
  type DedupeStream,
} from "./dedupe.ts";
export { streamAudio16kMono, AUDIO_SAMPLE_RATE, type AudioStreamOptions, type AudioWindow } from "./audio.ts";
export {
  writePoster,
  writeThumbnail,
  writeThumbnails,
  type ThumbnailOptions,
  type ThumbnailRequest,
} from "./thumbnails.ts";
