import type { ShotInput } from "../indexing/store.ts";
import { writeThumbnail, writeThumbnails } from "../media/thumbnails.ts";
import type { VideoRow } from "../videos/schema.ts";
import type { PipelineDeps } from "./deps.ts";

/** A small JPEG per shot (at its keyframe) and a poster; paths relative to the data dir. */
export async function writeVideoThumbnails(d: PipelineDeps, video: VideoRow, source: string, scenes: ShotInput[], hdr: boolean, keyframesOnly: boolean) {
  d.files.ensureDir(video.id);
  const requests = scenes.map((s) => ({ timestampSecs: s.keyframe, outPath: d.files.shotThumbFile(video.id, s.shotIndex) }));
  await writeThumbnails(d.bins, source, requests, { width: 320, hdr, keyframesOnly });
  const poster = d.files.posterFile(video.id);
  // The poster is the keyframe of the shot at 10% of the video (past black openings and titles):
  // one seek + one GOP decode, instead of scanning dozens of full-size frames for the "best" one.
  const at = (video.duration_secs ?? 0) * 0.1;
  const shot = scenes.find((s) => s.start <= at && at < s.end) ?? scenes[0];
  await writeThumbnail(d.bins, source, shot ? shot.keyframe : 0, poster, { width: 640, hdr, keyframesOnly });
  return { shots: requests.map((r) => d.files.rel(r.outPath)), poster: d.files.rel(poster) };
}
