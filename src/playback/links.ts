import { mediaPaths } from "../media-serving/paths.ts";
import type { UrlSigner } from "../signing/url-signer.ts";
import type { PlaybackStore } from "./store.ts";

/**
 * The media links every answer carries (posters, playback, shot thumbnails), presigned. Playback
 * points at the web rendition once it exists, else at the source (SPEC §11).
 */
export function mediaLinks(signer: UrlSigner, playback: PlaybackStore) {
  return {
    posterUrl: (videoId: string) => signer.sign(`/media/videos/${videoId}/poster.jpg`),
    playbackUrl: async (videoId: string) =>
      signer.sign((await playback.readyPath(videoId)) ? mediaPaths.rendition(videoId) : mediaPaths.source(videoId)),
    playbackUrls: async (videoIds: readonly string[]) => {
      const ready = await playback.readyVideos(videoIds);
      return new Map(
        videoIds.map((id) => [id, signer.sign(ready.has(id) ? mediaPaths.rendition(id) : mediaPaths.source(id))]),
      );
    },
    shotThumbnailUrl: (videoId: string, n: number) => signer.sign(mediaPaths.shot(videoId, n)),
    rendition: async (videoId: string) => {
      const r = await playback.get(videoId);
      return r ? { status: r.status, reason: r.reason, size_bytes: r.size_bytes } : null;
    },
  };
}
