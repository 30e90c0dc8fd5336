import { isMediaError } from "../media/errors.ts";
import { probeMedia } from "../media/probe.ts";
import type { ContainerSniffer } from "./service.ts";

const EXT: Record<string, string> = { mp4: "mp4", mov: "mov", avi: "avi", webm: "webm", mkv: "mkv" };

/** ffprobe decides what a file is; the name and the client's Content-Type are not trusted. */
export function ffprobeSniffer(bins: { ffmpeg: string; ffprobe: string }): ContainerSniffer {
  return {
    async sniff(file) {
      try {
        const info = await probeMedia(bins, file);
        const container = info.container!;
        const ext = container === "mpeg" ? (info.formatName === "mpegts" ? "ts" : "mpg") : EXT[container];
        return { ok: true, container, ext, mimeType: info.mimeType! };
      } catch (e) {
        if (isMediaError(e, "NO_VIDEO_STREAM"))
          return {
            ok: false,
            code: e.code,
            message: "The file has no video stream (audio-only files are not accepted)",
          };
        if (isMediaError(e, "VIDEO_TOO_LARGE"))
          return { ok: false, code: e.code, message: `The video is too large to decode: ${e.message}` };
        if (isMediaError(e, "DECODE_FAILED"))
          return { ok: false, code: e.code, message: `The file could not be decoded: ${e.message}` };
        if (isMediaError(e, "UNSUPPORTED_FORMAT") || isMediaError(e, "EMPTY_FILE")) {
          return {
            ok: false,
            code: "UNSUPPORTED_FORMAT",
            message: "Unsupported format: upload an MP4, MOV, AVI, WebM, MPEG or MKV video",
          };
        }
        throw e;
      }
    },
  };
}
