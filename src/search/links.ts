import { existsSync, readFileSync, statSync } from "node:fs";
import type { VideoFiles } from "../videos/files.ts";

/** Presigned media URLs (built by the composition root from the UrlSigner). */
export interface MediaLinks {
  /** One video's playback link (a rendition look-up, then a signature). */
  playbackUrl(videoId: string): Promise<string>;
  /** The playback links of many videos with one look-up (a page of search results). */
  playbackUrls(videoIds: readonly string[]): Promise<Map<string, string>>;
  posterUrl(videoId: string): string;
  shotThumbnailUrl(videoId: string, shotIndex: number): string;
}

/** Seconds as they appear in responses and `#t=` fragments: at most 3 decimals. */
export const secs = (t: number): number => Math.round(t * 1000) / 1000;

export const withFragment = (url: string, start: number, end: number): string => `${url}#t=${secs(start)},${secs(end)}`;

/** Thumbnails are a few KB; anything over this is not inlined. */
const MAX_INLINE_BYTES = 512 * 1024;

/**
 * A stored thumbnail (path relative to the data dir) as base64, or null when missing/too big (or
 * the bucket, when the media are in one, cannot be read: the result goes without it).
 */
export async function thumbnailBase64(files: VideoFiles, relPath: string | null): Promise<string | null> {
  if (!relPath) return null;
  try {
    // Held while read: with a bucket, another fetch's cache pass could otherwise evict it between the fetch and the read.
    return await files.withLocal(relPath, async (abs) =>
      !existsSync(abs) || statSync(abs).size > MAX_INLINE_BYTES ? null : readFileSync(abs).toString("base64"),
    );
  } catch {
    return null;
  }
}
