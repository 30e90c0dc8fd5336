import type { ShotInput } from "../indexing/store.ts";
import { writePoster, writeThumbnails } from "../media/thumbnails.ts";
import type { VideoRow } from "../videos/schema.ts";
import type { PipelineDeps } from "./deps.ts";

/** A small JPEG per shot (at its keyframe) and a poster; paths relative to the data dir. */
export async function writeVideoThumbnails(d: PipelineDeps, video: VideoRow, source: string, scenes: ShotInput[], hdr: boolean) {
  d.files.ensureDir(video.id);
  const requests = scenes.map((s) => ({ timestampSecs: s.keyframe, outPath: d.files.shotThumbFile(video.id, s.shotIndex) }));
  await writeThumbnails(d.bins, source, requests, { width: 320, hdr });
  const poster = d.files.posterFile(video.id);
  await writePoster(d.bins, source, poster, { durationSecs: video.duration_secs, hdr });
  return { shots: requests.map((r) => d.files.rel(r.outPath)), poster: d.files.rel(poster) };
}
