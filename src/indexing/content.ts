import type { EventPublisher } from "../events/bus.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { FrameInput, IndexStore, OcrLineInput, ShotInput, TranscriptInput, VideoScope } from "./store.ts";

/** The video files the owner removes (videos/files.ts `VideoFiles`; videos/ sits above indexing/). */
export interface ContentFiles {
  /** The video's folder and everything in it (and its objects in the bucket, when there is one). */
  remove(videoId: string): Promise<void>;
  /** Removes the video's shot thumbnails other than `keep` (paths relative to the data dir). */
  pruneShotThumbs(videoId: string, keep: ReadonlySet<string>): Promise<void>;
}

/** How the caller deletes a video row, inside the owner's transaction (videos/service.ts). */
export interface VideoRowRemoval {
  /** Whether this video is to go (it exists in the caller's scope, e.g. its account). */
  has(videoId: string): Promise<boolean>;
  /** Deletes the video row (frames, shots, transcript and OCR rows cascade) and records what goes with it. */
  remove(videoId: string): Promise<void>;
}

/**
 * The one owner of a video's derived content (issue 10): frames and their vectors, shots and
 * their thumbnail files, transcript segments, OCR lines. The pipeline's stages write through
 * `replace*` (each replaces what an earlier run wrote, so a resumed or re-run job never
 * duplicates anything) and end a stage with `commitStage`, which announces
 * `video.content_changed` once it commits; video, collection and account deletion go through
 * `deleteVideos` (rows, vectors the database cannot cascade, and files, then `videos.deleted`).
 * The in-memory vector index follows those two events (search/indexes.ts, wired in app.ts).
 */
export class VideoContent {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly index: IndexStore,
    private readonly files: ContentFiles,
    private readonly bus: EventPublisher,
  ) {}

  /** The frames of the visual stage with their vectors. Not searchable until the stage is committed (`commitStage`). */
  async replaceFrames(scope: VideoScope, frames: FrameInput[], modelId: string): Promise<number[]> {
    return await this.index.replaceFrames(scope, frames, modelId);
  }

  /** The transcript segments (`[]` with model "none": a video without audio). */
  async replaceTranscript(scope: VideoScope, segments: TranscriptInput[], modelId: string): Promise<void> {
    await this.index.replaceTranscript(scope, segments, modelId);
  }

  /** The on-screen text lines (the `ocr` stage). */
  async replaceOcrLines(scope: VideoScope, lines: OcrLineInput[]): Promise<void> {
    await this.index.replaceOcrLines(scope, lines);
  }

  /**
   * The shots with their thumbnails (written by the stage before this call). Once the rows
   * commit, thumbnail files of shots an earlier run had and this one has not are removed.
   */
  async replaceShots(scope: VideoScope, shots: ShotInput[], modelId: string | null): Promise<number[]> {
    return await this.uow.run(async () => {
      const ids = await this.index.replaceShots(scope, shots, modelId);
      const keep = new Set(shots.map((s) => s.thumbnailPath).filter((p): p is string => p !== null));
      this.uow.afterCommit(async () => await this.files.pruneShotThumbs(scope.videoId, keep));
      return ids;
    });
  }

  /**
   * Ends a stage: `write` (its last rows and what it records on the video) runs in one
   * transaction, and `video.content_changed` is delivered once that commits, so search reads
   * the stage's rows from then on.
   */
  async commitStage<T>(videoId: string, write: () => Promise<T>): Promise<T> {
    return await this.uow.run(async () => {
      const result = await write();
      this.bus.publish({ type: "video.content_changed", videoId });
      return result;
    });
  }

  /** A video's shots in order (a resumed run's enrichment stages need them). */
  async shotSpans(videoId: string): Promise<{ index: number; start: number; end: number }[]> {
    return await this.index.shotSpans(videoId);
  }

  /**
   * Deletes videos with everything derived from them. Per video, one transaction: the vectors
   * the database cannot cascade (vec0 tables), then the caller's `remove` (the video row, whose
   * foreign keys take frames, shots, transcript and OCR rows along); the video's folder once it
   * commits. `videos.deleted` names the videos that went, once all are gone. Returns them.
   */
  async deleteVideos(ids: string[], rows: VideoRowRemoval): Promise<string[]> {
    const gone: string[] = [];
    // One transaction per video on purpose: a failure must not undo the others, and each folder goes with its commit.
    for (const id of ids) {
      const deleted = await this.uow.run(async () => {
        if (!(await rows.has(id))) return false;
        await this.index.deleteVideoVectors(id);
        await rows.remove(id);
        this.uow.afterCommit(async () => await this.files.remove(id));
        return true;
      });
      if (deleted) gone.push(id);
    }
    if (gone.length) this.bus.publish({ type: "videos.deleted", videoIds: gone });
    return gone;
  }
}
