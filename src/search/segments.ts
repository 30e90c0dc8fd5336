/**
 * The output side of a search: a fused clip shaped into the documented segment (links, thumbnail,
 * scores), and the shot a clip falls in. Split out of service.ts, which ranks; this only formats.
 */
import type { VideoFiles } from "../videos/files.ts";
import type { Fused } from "./fusion.ts";
import { type MediaLinks, secs, thumbnailBase64, withFragment } from "./links.ts";
import type { SearchSegment } from "./schema.ts";
import type { ShotRow, VideoInfoRow } from "./store.ts";

/** The shot of a clip: its own when it came from one, else the shot covering its start (time order; a start in a gap belongs to the shot before). */
export function shotOf(shots: ShotRow[], c: { start: number; shotIndex: number | null }): ShotRow | null {
  if (c.shotIndex !== null) return shots.find((s) => s.shot_index === c.shotIndex) ?? null;
  let found: ShotRow | null = null;
  for (const s of shots) if (s.start_secs <= c.start + 1e-6) found = s;
  return found;
}

/** The links a response's segments carry, all known before the segments are shaped. */
export interface ResponseLinks {
  playbackUrl(videoId: string): string;
  posterUrl(videoId: string): string;
  shotThumbnailUrl(videoId: string, shotIndex: number): string;
}

/**
 * The links of one response, each signed once: a page shows up to 20 segments of each of its
 * videos, and every playback link and thumbnail link of a video or shot is the same for all of
 * them. The playback links of the page's videos were looked up together (`playback`).
 */
export function responseLinks(links: MediaLinks, playback: Map<string, string>): ResponseLinks {
  const memo = new Map<string, string>();
  const once = (key: string, make: () => string) => {
    let v = memo.get(key);
    if (v === undefined) memo.set(key, (v = make()));
    return v;
  };
  return {
    playbackUrl: (v) => playback.get(v) ?? "",
    posterUrl: (v) => once(`t\u0000${v}`, () => links.posterUrl(v)),
    shotThumbnailUrl: (v, i) => once(`s\u0000${v}\u0000${i}`, () => links.shotThumbnailUrl(v, i)),
  };
}

/** One result segment: its shot's thumbnail (or the poster), its playback link with the time fragment, rounded scores. */
export async function toSegment(
  d: { links: ResponseLinks; files: VideoFiles },
  info: VideoInfoRow,
  shots: ShotRow[],
  c: Fused,
  o: { hidden: boolean; rank: number; withBase64: boolean },
): Promise<SearchSegment> {
  const shot = shotOf(shots, c);
  const thumbPath = shot?.thumbnail_path ?? info.poster_path;
  const thumbnailUrl = shot?.thumbnail_path
    ? d.links.shotThumbnailUrl(info.id, shot.shot_index)
    : info.poster_path
      ? d.links.posterUrl(info.id)
      : null;
  const seg: SearchSegment = {
    timestamp_start: secs(c.start),
    timestamp_end: secs(c.end),
    score: Math.round(c.score * 1e4) / 1e4,
    type: c.type,
    text_content: c.text,
    video_url: withFragment(d.links.playbackUrl(info.id), c.start, c.end),
    thumbnail_url: thumbnailUrl,
    hidden: o.hidden,
    rank: o.rank,
    raw_score: Math.round(c.raw * 1e6) / 1e6,
    threshold_key: c.thresholdKey,
  };
  if (o.withBase64) {
    const b64 = await thumbnailBase64(d.files, thumbPath);
    if (b64) seg.thumbnail_base64 = b64;
  }
  return seg;
}
