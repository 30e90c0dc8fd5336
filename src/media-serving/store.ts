import type { Database } from "bun:sqlite";

export interface MediaVideoRow {
  id: string;
  source_path: string;
  poster_path: string | null;
  mime_type: string | null;
}

/** The rows the media routes read: where a video's files are. */
export class MediaStore {
  constructor(private readonly db: Database) {}

  video(id: string): MediaVideoRow | null {
    return this.db
      .query<MediaVideoRow, [string]>("SELECT id, source_path, poster_path, mime_type FROM videos WHERE id = ?")
      .get(id);
  }

  /** The web rendition's relative path once it is ready (migration 007). */
  renditionPath(videoId: string): string | null {
    return (
      this.db
        .query<{ path: string }, [string]>("SELECT path FROM renditions WHERE video_id = ? AND status = 'ready'")
        .get(videoId)?.path ?? null
    );
  }

  shotThumbnail(videoId: string, shotIndex: number): string | null {
    return (
      this.db
        .query<{ thumbnail_path: string | null }, [string, number]>(
          "SELECT thumbnail_path FROM shots WHERE video_id = ? AND shot_index = ?",
        )
        .get(videoId, shotIndex)?.thumbnail_path ?? null
    );
  }
}
