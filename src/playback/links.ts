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
    playbackUrl: (videoId: string) =>
      signer.sign(playback.readyPath(videoId) ? mediaPaths.rendition(videoId) : mediaPaths.source(videoId)),
    shotThumbnailUrl: (videoId: string, n: number) => signer.sign(mediaPaths.shot(videoId, n)),
    rendition: (videoId: string) => {
      const r = playback.get(videoId);
      return r ? { status: r.status, reason: r.reason, size_bytes: r.size_bytes } : null;
    },
  };
}
