import { rename } from "node:fs/promises";
import type { ShotInput } from "../indexing/store.ts";
import { nonEmpty, writeThumbnail, writeThumbnails, type ThumbnailRequest } from "../media/thumbnails.ts";
import type { VideoRow } from "../videos/schema.ts";
import { isMediaError } from "../media/errors.ts";
import { thumbnailFromStart } from "../media/readable.ts";
import type { PipelineDeps } from "./deps.ts";
import {
  FULL_DECODE_SKIP,
  POSTER_WIDTH,
  SHOT_THUMB_WIDTH,
  frameJpegPath,
  passPosterPath,
  posterTimeSecs,
  type FrameEmbedding,
} from "./stage-frames.ts";

/** JPEGs the visual pass wrote of the frames it embedded (see embedFrames `jpegDir`). */
export interface PassJpegs {
  dir: string;
  frames: FrameEmbedding[];
}

/**
 * A small JPEG per shot (at its keyframe) and a poster; paths relative to the data dir. A shot's
 * keyframe is one of the embedded frames, so when the visual pass kept their JPEGs the thumbnail
 * is a rename; only shots without one (no image model, or a frame ffmpeg could not write) seek
 * and decode again. Same for the poster.
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
  const requests = scenes.map((s) => ({
    timestampSecs: s.keyframe,
    outPath: d.files.shotThumbFile(video.id, s.shotIndex),
  }));
  const missing: ThumbnailRequest[] = [];
  const byTime = new Map(pass?.frames.map((f) => [f.timestamp, f.frameIndex]) ?? []);
  for (const r of requests) {
    const index = byTime.get(r.timestampSecs);
    const jpeg = pass && index !== undefined ? frameJpegPath(pass.dir, index) : null;
    if (jpeg && (await nonEmpty(jpeg))) await rename(jpeg, r.outPath);
    else missing.push(r);
  }
  // A shot the frame decode has no picture of (shorter than the sampling interval) starts at a cut,
  // a picture the full decode's analysis saw: a noref seek (exact for every codec) skips ~half the
  // decoding on its way there and lands on that picture or the next decoded one.
  const seeksExactly = video.container === "mp4" || video.container === "mov";
  const seekOpts = { hdr, keyframesOnly, skipFrames: keyframesOnly ? undefined : FULL_DECODE_SKIP };
  const unmade = new Set<string>();
  await writeThumbnails(d.bins, source, missing, { ...seekOpts, width: SHOT_THUMB_WIDTH, seeksExactly }).catch(
    async (e) => {
      // A damaged or truncated file whose seeks fail (issue 22): each picture by decoding from the
      // start instead; a shot with no decodable picture goes without a thumbnail.
      if (!isMediaError(e, "DECODE_FAILED")) throw e;
      for (const r of missing)
        if (
          !(await nonEmpty(r.outPath)) &&
          !(await thumbnailFromStart(d.bins, source, r.timestampSecs, r.outPath, { width: SHOT_THUMB_WIDTH, hdr }))
        )
          unmade.add(r.outPath);
    },
  );
  // The poster shows the video at 10 % of its length. The visual pass wrote it when it ran;
  // otherwise one seek and one GOP decode.
  const poster = d.files.posterFile(video.id);
  const fromPass = pass ? passPosterPath(pass.dir) : null;
  const posterFromPass = fromPass !== null && (await nonEmpty(fromPass));
  let posterMade = true;
  if (posterFromPass) await rename(fromPass, poster);
  else {
    const at = posterTimeSecs(video.duration_secs);
    await writeThumbnail(d.bins, source, at, poster, { ...seekOpts, width: POSTER_WIDTH }).catch(async (e) => {
      if (!isMediaError(e, "DECODE_FAILED")) throw e;
      posterMade = await thumbnailFromStart(d.bins, source, at, poster, { width: POSTER_WIDTH, hdr });
    });
  }
  const shots = requests.map((r) => (unmade.has(r.outPath) ? null : d.files.rel(r.outPath)));
  const posterRel = posterMade ? d.files.rel(poster) : null;
  // Into the bucket (when there is one) before the rows that name them commit.
  await d.files.publish([...shots, posterRel]);
  return {
    shots,
    poster: posterRel,
    shotsFromPass: requests.length - missing.length,
    posterFromPass,
  };
}
