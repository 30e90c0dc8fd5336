import { renameSync, rmSync } from "node:fs";
import { AppError, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import type { EventStore } from "../events/store.ts";
import type { VideoContent } from "../indexing/content.ts";
import type { IndexStore } from "../indexing/store.ts";
import type { LeaseQueue } from "../jobs/lease-queue.ts";
import type { JobStore } from "../jobs/store.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { VideoFiles } from "./files.ts";
import type { VideoFilter, VideoStore } from "./store.ts";
import type { StageOutcome, Video, VideoDetail, VideoRow, VideoStatus, WebRendition } from "./schema.ts";

export interface MediaUrls {
  posterUrl(videoId: string): string;
  /** The web rendition when it is ready, else the source. */
  playbackUrl(videoId: string): Promise<string>;
  /** The web rendition's state (the playback domain's queue); null before the video is searchable. */
  rendition?(videoId: string): Promise<WebRendition | null>;
}

export interface NewVideo {
  accountId: string;
  collectionId: string;
  filename: string;
  /** Absolute path of the finished temp upload; moved into the video's folder. */
  tempFile: string;
  ext: string;
  container: string;
  mimeType: string;
  sizeBytes: number;
  /**
   * SHA-256 of the file (`vsearch ingest`); a collection that already holds these bytes refuses
   * it with 409 DUPLICATE_CONTENT and nothing is written. Null: not deduplicated (HTTP uploads).
   */
  contentHash?: string | null;
  /**
   * Held to the per-account cap on waiting work (HTTP uploads: 429 QUEUE_FULL past it). The
   * operator's `vsearch ingest` is not: it queues a whole folder on purpose.
   */
  capped?: boolean;
}

export class VideoService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: VideoStore,
    private readonly jobs: JobStore,
    private readonly events: EventStore,
    /** Model coverage reads (reindex, doctor). */
    private readonly index: IndexStore,
    private readonly files: VideoFiles,
    private readonly urls: MediaUrls,
    /** Deletes a video's derived content with it (rows, vectors, files; `videos.deleted`). */
    private readonly content: VideoContent,
    /** Where a video's ingest task is queued, with its job. */
    private readonly tasks: Pick<LeaseQueue, "enqueue" | "assertRoom">,
  ) {}

  /**
   * Turns a finished upload into a video + queued job (and its ingest task) + `video.created`
   * event in one transaction. The file is moved in first (and, with a bucket, copied there); if
   * that or the transaction fails it is removed again, and a crash in between leaves a folder the
   * start-up sweep deletes (an object without a row: `vsearch check` lists it). A row never names
   * a source the bucket does not have.
   */
  async createFromUpload(v: NewVideo): Promise<{ video_id: string; job_id: string; status: "queued" }> {
    const videoId = newId("vid");
    const jobId = newId("job");
    const at = nowIso();
    // Claimed before its folder exists, released once its row is committed: a node starting now
    // on a shared media root does not take the folder for a crash's leftover (VideoFiles.sweepOrphans).
    const claim = this.files.claimIncoming(videoId);
    // With a bucket: held against the node's cache bound until then (the file is the only copy until `publish`).
    const held = this.files.holdVideo(videoId);
    const dest = this.files.sourceFile(videoId, v.ext);
    try {
      this.files.ensureDir(videoId);
      renameSync(v.tempFile, dest);
      await this.files.publish([this.files.rel(dest)]);
      await this.uow.run(async () => {
        if (v.capped) await this.tasks.assertRoom(v.accountId); // exact here: the write lock is held
        const contentHash = v.contentHash ?? null;
        const existing = contentHash ? await this.store.findByContent(v.accountId, v.collectionId, contentHash) : null;
        if (existing)
          throw new AppError("DUPLICATE_CONTENT", `This collection already holds this file as video ${existing.id}`);
        await this.store.insert({
          id: videoId,
          account_id: v.accountId,
          collection_id: v.collectionId,
          filename: v.filename,
          status: "queued",
          progress_pct: 0,
          container: v.container,
          mime_type: v.mimeType,
          duration_secs: null,
          width: null,
          height: null,
          fps: null,
          codec: null,
          audio_codec: null,
          has_audio: 0,
          file_size_bytes: v.sizeBytes,
          storage_bytes: v.sizeBytes,
          source_path: this.files.rel(dest),
          poster_path: null,
          stages: "{}",
          error_code: null,
          error_message: null,
          content_hash: contentHash,
          created_at: at,
          updated_at: at,
        });
        await this.jobs.insert({ id: jobId, account_id: v.accountId, video_id: videoId, created_at: at });
        await this.tasks.enqueue({ kind: "ingest", accountId: v.accountId, videoId, jobId });
        await this.events.record(
          v.accountId,
          "video.created",
          { video_id: videoId, job_id: jobId, collection_id: v.collectionId, filename: v.filename },
          at,
        );
      }); // the duplicate check and the insert see the same state
    } catch (e) {
      // The bucket may be what failed: its half is left to `vsearch check` then, the folder goes anyway.
      await this.files.remove(videoId).catch(() => rmSync(this.files.dir(videoId), { recursive: true, force: true }));
      throw e;
    } finally {
      this.files.releaseIncoming(claim);
      held();
    }
    return { video_id: videoId, job_id: jobId, status: "queued" };
  }

  /** The video in this collection with exactly these bytes, if any. */
  async findByContent(accountId: string, collectionId: string, hash: string): Promise<VideoRow | null> {
    return await this.store.findByContent(accountId, collectionId, hash);
  }

  /** The collection's videos of exactly this size (duplicate candidates for an upload). */
  async sameSize(accountId: string, collectionId: string, sizeBytes: number): Promise<VideoRow[]> {
    return await this.store.sameSize(accountId, collectionId, sizeBytes);
  }

  /**
   * Remembers a source's SHA-256 (first computed when a same-size upload arrived). Two videos
   * with the same bytes from before uploads were checked keep one hash: the unique index refuses
   * the second, which then stays unhashed.
   */
  async rememberContentHash(id: string, hash: string): Promise<void> {
    try {
      await this.store.setContentHash(id, hash);
    } catch (e) {
      if (!/UNIQUE constraint/.test((e as Error).message)) throw e;
    }
  }

  /** The video's newest job (its current or last indexing run). */
  async latestJobId(accountId: string, videoId: string): Promise<string | null> {
    return (await this.jobs.list(accountId, { videoId }, 1, 0))[0]?.id ?? null;
  }

  /** Videos whose index was built with other models than the active ones (see IndexStore.staleVideos). */
  async staleForModels(
    active: { imageText: string | null; speech: string | null },
    accountId?: string,
  ): Promise<string[]> {
    return await this.index.staleVideos(active, accountId);
  }

  /** Per role: videos indexed without a model for it, and those `reindex` would change (IndexStore.modelCoverage). */
  async modelCoverage(active: { imageText: string | null; speech: string | null }, accountId?: string) {
    return await this.index.modelCoverage(active, accountId);
  }

  async allIds(accountId?: string): Promise<string[]> {
    return await this.store.allIds(accountId);
  }

  /** Queues a fresh ingest job for existing videos (`vsearch reindex`); returns the new job ids. */
  async requeue(ids: string[]): Promise<{ video_id: string; job_id: string; account_id: string }[]> {
    const out: { video_id: string; job_id: string; account_id: string }[] = [];
    await this.uow.run(async () => {
      // One video after another in the one unit of work: an operator's reindex of a handful of ids.
      for (const id of ids) {
        const v = await this.store.getById(id);
        if (!v) continue;
        const jobId = newId("job");
        await this.jobs.insert({ id: jobId, account_id: v.account_id, video_id: id, created_at: nowIso() });
        await this.tasks.enqueue({ kind: "ingest", accountId: v.account_id, videoId: id, jobId });
        await this.store.update(id, { status: "queued", progress_pct: 0 });
        out.push({ video_id: id, job_id: jobId, account_id: v.account_id });
      }
    });
    return out;
  }

  async require(accountId: string, id: string): Promise<VideoRow> {
    const row = await this.store.get(accountId, id);
    if (!row) throw notFound("VIDEO_NOT_FOUND", `Video ${id}`);
    return row;
  }

  async get(accountId: string, id: string): Promise<VideoDetail> {
    const row = await this.require(accountId, id);
    const rendition = (await this.urls.rendition?.(row.id)) ?? null;
    return {
      ...this.toVideo(row),
      playback_url: await this.urls.playbackUrl(row.id),
      has_web_rendition: rendition?.status === "ready",
      rendition,
      segments_count: await this.store.segmentsCount(row.id),
      stages: JSON.parse(row.stages) as Record<string, StageOutcome>,
      error: row.error_code ? { code: row.error_code, message: row.error_message ?? "" } : null,
    };
  }

  async list(accountId: string, filter: VideoFilter, page: Page): Promise<{ items: Video[]; total: number }> {
    return {
      items: (await this.store.list(accountId, filter, page.perPage, offsetOf(page))).map((r) => this.toVideo(r)),
      total: await this.store.count(accountId, filter),
    };
  }

  async delete(accountId: string, id: string): Promise<void> {
    await this.require(accountId, id);
    await this.purgeVideos(accountId, [id]);
  }

  /**
   * Rows, vectors, files and a `video.deleted` outbox event per video of this account, through the
   * content owner (indexing/content.ts); used by collection and account deletion too.
   */
  async purgeVideos(accountId: string, ids: string[]): Promise<void> {
    await this.content.deleteVideos(ids, {
      has: async (id) => Boolean(await this.store.get(accountId, id)),
      remove: async (id) => {
        const row = (await this.store.get(accountId, id))!;
        await this.store.delete(id); // frames, shots, transcript, OCR lines and jobs cascade
        await this.events.record(accountId, "video.deleted", { video_id: id, collection_id: row.collection_id });
      },
    });
  }

  toVideo(r: VideoRow): Video {
    return {
      id: r.id,
      filename: r.filename,
      collection_id: r.collection_id,
      user_id: r.account_id,
      status: r.status as VideoStatus,
      progress_pct: r.status === "ready" ? 100 : Math.round(r.progress_pct * 10) / 10,
      duration_secs: r.duration_secs,
      width: r.width,
      height: r.height,
      fps: r.fps,
      codec: r.codec,
      mime_type: r.mime_type,
      file_size_bytes: r.file_size_bytes,
      storage_bytes: r.storage_bytes,
      has_audio: r.has_audio === 1,
      thumbnail_url: r.poster_path ? this.urls.posterUrl(r.id) : null,
      warning: r.warning ?? null,
      created_at: r.created_at,
    };
  }
}
