import type { Executor } from "../store/executor.ts";

export interface MediaVideoRow {
  id: string;
  source_path: string;
  poster_path: string | null;
  mime_type: string | null;
}

/** The rows the media routes read: where a video's files are. */
export class MediaStore {
  constructor(private readonly db: Executor) {}

  async video(id: string): Promise<MediaVideoRow | null> {
    return await this.db.get<MediaVideoRow>(
      "SELECT id, source_path, poster_path, mime_type FROM videos WHERE id = ?",
      id,
    );
  }

  /** The web rendition's relative path once it is ready (migration 007). */
  async renditionPath(videoId: string): Promise<string | null> {
    return (
      (
        await this.db.get<{ path: string }>(
          "SELECT path FROM renditions WHERE video_id = ? AND status = 'ready'",
          videoId,
        )
      )?.path ?? null
    );
  }

  async shotThumbnail(videoId: string, shotIndex: number): Promise<string | null> {
    return (
      (
        await this.db.get<{ thumbnail_path: string | null }>(
          "SELECT thumbnail_path FROM shots WHERE video_id = ? AND shot_index = ?",
          videoId,
          shotIndex,
        )
      )?.thumbnail_path ?? null
    );
  }
}
