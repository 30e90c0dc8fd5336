import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { AppError, notFound } from "../core/errors.ts";
import type { VideoFiles } from "../videos/files.ts";
import { mediaPaths } from "./paths.ts";
import type { MediaStore } from "./store.ts";

export type MediaItem =
  | { kind: "source" }
  | { kind: "poster" }
  | { kind: "shot"; index: number }
  | { kind: "rendition" }
  /** `file` is `<start_ms>-<end_ms>.mp4`, checked by the route. */
  | { kind: "clip"; file: string };

const CLIP_FILE = /^\d{1,10}-\d{1,10}\.mp4$/;

const pathOf = (videoId: string, item: MediaItem): string => {
  switch (item.kind) {
    case "source":
      return mediaPaths.source(videoId);
    case "poster":
      return mediaPaths.poster(videoId);
    case "shot":
      return mediaPaths.shot(videoId, item.index);
    case "rendition":
      return mediaPaths.rendition(videoId);
    case "clip":
      return mediaPaths.clip(videoId, item.file);
  }
};

export interface MediaFile {
  path: string;
  size: number;
  contentType: string;
  mtimeMs: number;
}

export interface SignatureVerifier {
  verify(path: string, expires: string | undefined, signature: string | undefined): "ok" | "bad" | "expired";
}

const VIDEO_ID = /^vid_[0-9A-Za-z]{1,60}$/;

/**
 * Presigned media (SPEC §6): a request carries `expires` + `signature` instead of credentials.
 * The signature is checked first (a bad or expired one is 403 whatever the id), then the video
 * and the file are looked up (404). The route streams the file; nothing here reads it.
 */
export class MediaService {
  constructor(
    private readonly store: MediaStore,
    private readonly files: VideoFiles,
    private readonly signer: SignatureVerifier,
  ) {}

  async open(
    videoId: string,
    item: MediaItem,
    expires: string | undefined,
    signature: string | undefined,
  ): Promise<MediaFile> {
    const path = pathOf(videoId, item);
    const check = this.signer.verify(path, expires, signature);
    if (check === "expired")
      throw new AppError("FORBIDDEN", "This media link has expired; ask the API for a fresh one");
    if (check !== "ok") throw new AppError("FORBIDDEN", "Missing or invalid media signature");
    const video = VIDEO_ID.test(videoId) ? await this.store.video(videoId) : null;
    if (!video) throw notFound("VIDEO_NOT_FOUND", `Video ${videoId}`);
    let rel: string | null;
    let contentType = "image/jpeg";
    if (item.kind === "source") {
      rel = video.source_path;
      contentType = video.mime_type ?? "application/octet-stream";
    } else if (item.kind === "poster") {
      rel = video.poster_path;
    } else if (item.kind === "rendition") {
      rel = await this.store.renditionPath(videoId);
      contentType = "video/mp4";
    } else if (item.kind === "clip") {
      // Clips are files in the video's folder, named by their span; no row (the cache may evict them).
      rel = CLIP_FILE.test(item.file) ? this.files.rel(join(this.files.dir(videoId), "clips", item.file)) : null;
      contentType = "video/mp4";
    } else {
      rel = await this.store.shotThumbnail(videoId, item.index);
    }
    const file = rel ? this.resolve(rel) : null;
    if (!file) throw notFound("NOT_FOUND", item.kind === "shot" || item.kind === "poster" ? "Thumbnail" : "Video file");
    const st = statSync(file);
    return { path: file, size: st.size, contentType, mtimeMs: st.mtimeMs };
  }

  private resolve(rel: string): string | null {
    try {
      const abs = this.files.abs(rel);
      return existsSync(abs) && statSync(abs).isFile() ? abs : null;
    } catch {
      return null;
    }
  }
}
