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

/** The longest a bucket's presigned URL lives (`serve`); never longer than the link it answers. */
export const BUCKET_URL_MAX_TTL_SECS = 3600;
/** The shortest: a link about to expire still gets a URL a player can open and seek in for a while. */
export const BUCKET_URL_MIN_TTL_SECS = 60;

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

  /**
   * A media link as the route answers it: the file on this node, or, when the media are in a
   * bucket that presigns, a presigned URL of the object to redirect to (the bytes never pass
   * through this server; Range requests go to the bucket). That URL lives as long as the link
   * has left, between BUCKET_URL_MIN_TTL_SECS and BUCKET_URL_MAX_TTL_SECS.
   */
  async serve(
    videoId: string,
    item: MediaItem,
    expires: string | undefined,
    signature: string | undefined,
    nowMs = Date.now(),
  ): Promise<MediaFile | { redirect: string }> {
    const bucket = this.files.bucket;
    const found = await this.locate(videoId, item, expires, signature);
    if (!bucket) return await this.fileOf(found);
    // A row names only objects put before it committed; a clip has no row: asked of the bucket.
    if (!found.rel || (item.kind === "clip" && !(await this.files.has(found.rel)))) throw missing(item.kind);
    const left = Number(expires) - Math.floor(nowMs / 1000);
    const ttl = Math.min(BUCKET_URL_MAX_TTL_SECS, Math.max(BUCKET_URL_MIN_TTL_SECS, left));
    const url = bucket.presign(found.rel, ttl);
    return url === null ? await this.fileOf(found) : { redirect: url };
  }

  /** The file on this node (fetched from the bucket into its cache first, when the media are in one). */
  async open(
    videoId: string,
    item: MediaItem,
    expires: string | undefined,
    signature: string | undefined,
  ): Promise<MediaFile> {
    return await this.fileOf(await this.locate(videoId, item, expires, signature));
  }

  private async fileOf(found: {
    rel: string | null;
    contentType: string;
    item: MediaItem["kind"];
  }): Promise<MediaFile> {
    const file = found.rel ? await this.resolve(found.rel) : null;
    if (!file) throw missing(found.item);
    const st = statSync(file);
    return { path: file, size: st.size, contentType: found.contentType, mtimeMs: st.mtimeMs };
  }

  /** Checks the signature, then finds the stored path the link names (null: none). */
  private async locate(
    videoId: string,
    item: MediaItem,
    expires: string | undefined,
    signature: string | undefined,
  ): Promise<{ rel: string | null; contentType: string; item: MediaItem["kind"] }> {
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
    return { rel, contentType, item: item.kind };
  }

  private async resolve(rel: string): Promise<string | null> {
    try {
      this.files.abs(rel); // refuses a stored path outside the media root
    } catch {
      return null;
    }
    const abs = await this.files.local(rel);
    return existsSync(abs) && statSync(abs).isFile() ? abs : null;
  }
}

const missing = (kind: MediaItem["kind"]) =>
  notFound("NOT_FOUND", kind === "shot" || kind === "poster" ? "Thumbnail" : "Video file");
