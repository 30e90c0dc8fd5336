import { rename, stat } from "node:fs/promises";
import type { ShotInput } from "../indexing/store.ts";
import { writeThumbnail, writeThumbnails, type ThumbnailRequest } from "../media/thumbnails.ts";
import type { VideoRow } from "../videos/schema.ts";
import type { PipelineDeps } from "./deps.ts";
import { SHOT_THUMB_WIDTH, frameJpegPath, type FrameEmbedding } from "./stage-frames.ts";

/** JPEGs the visual pass wrote of the frames it embedded (see embedFrames `jpegDir`). */
export interface PassJpegs {
  dir: string;
  frames: FrameEmbedding[];
}

/**
 * A small JPEG per shot (at its keyframe) and a poster; paths relative to the data dir. A shot's
 * keyframe is one of the embedded frames, so when the visual pass kept their JPEGs the thumbnail
 * is a rename; only shots without one (no image model, or a frame ffmpeg could not write) seek
 * and decode again.
 */
export async function writeVideoThumbnails(
  d: PipelineDeps,
  video: VideoRow,
  source: string,
  scenes: ShotInput[],
  hdr: boolean,
  keyframesOnly: boolean,
  pass: PassJpegs | null,
) {
  d.files.ensureDir(video.id);
  const requests = scenes.map((s) => ({ timestampSecs: s.keyframe, outPath: d.files.shotThumbFile(video.id, s.shotIndex) }));
  const missing: ThumbnailRequest[] = [];
  const byTime = new Map(pass?.frames.map((f) => [f.timestamp, f.frameIndex]) ?? []);
  for (const r of requests) {
    const index = byTime.get(r.timestampSecs);
    const jpeg = pass && index !== undefined ? frameJpegPath(pass.dir, index) : null;
    if (jpeg && (await nonEmpty(jpeg))) await rename(jpeg, r.outPath);
    else missing.push(r);
  }
  await writeThumbnails(d.bins, source, missing, { width: SHOT_THUMB_WIDTH, hdr, keyframesOnly });
  const poster = d.files.posterFile(video.id);
  // The poster is the keyframe of the shot at 10% of the video (past black openings and titles):
  // one seek + one GOP decode, instead of scanning dozens of full-size frames for the "best" one.
  const at = (video.duration_secs ?? 0) * 0.1;
  const shot = scenes.find((s) => s.start <= at && at < s.end) ?? scenes[0];
  await writeThumbnail(d.bins, source, shot ? shot.keyframe : 0, poster, { width: 640, hdr, keyframesOnly });
  return { shots: requests.map((r) => d.files.rel(r.outPath)), poster: d.files.rel(poster), fromPass: requests.length - missing.length };
}

async function nonEmpty(path: string): Promise<boolean> {
  try {
    return (await stat(path)).size > 0;
  } catch {
    return false;
  }
}
