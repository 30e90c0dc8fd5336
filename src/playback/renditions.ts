import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../core/logger.ts";
import type { JobError } from "../jobs/failure.ts";
import type { LeaseQueue, TaskContext, TaskHandler } from "../jobs/lease-queue.ts";
import type { TaskRow } from "../jobs/task-store.ts";
import { MediaError } from "../media/errors.ts";
import { isMediaError, probeMedia, type MediaBins } from "../media/index.ts";
import { encodeTimeoutMs, scanTimeline } from "../media/bounds.ts";
import { encodeWebMp4 } from "../media/web-mp4.ts";
import type { VideoFiles } from "../videos/files.ts";
import { decideRendition } from "./decision.ts";
import type { PlaybackStore } from "./store.ts";

export interface RenditionTaskOptions {
  logger: Logger;
  now?: () => number;
}

/**
 * Makes web renditions (SPEC §11) after a video is searchable: the `rendition` kind of the one
 * lease queue (jobs/lease-queue.ts), claimed fairly across accounts like every task, in its own
 * lane of one slot that claims only while this node indexes nothing, so an encode never competes
 * with making videos searchable for more than one core's worth of ffmpeg. The record users read
 * is the `renditions` row (migration 007). The encode writes to a temp name and renames, so a
 * task run again after a crash replaces and never duplicates; deleting the video stops it (the
 * queue aborts the task, which kills ffmpeg).
 */
export class RenditionTask implements TaskHandler {
  private readonly now: () => number;

  constructor(
    private readonly store: PlaybackStore,
    private readonly files: VideoFiles,
    private readonly bins: MediaBins,
    private readonly tasks: Pick<LeaseQueue, "enqueue">,
    private readonly opts: RenditionTaskOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * The video is searchable (inside that transaction): its rendition record and task are queued,
   * unless it has one already (a re-indexed video keeps a finished rendition).
   */
  async queue(videoId: string, accountId: string): Promise<void> {
    if (await this.store.enqueue(videoId, accountId, new Date(this.now()).toISOString()))
      await this.tasks.enqueue({ kind: "rendition", accountId, videoId });
  }

  async claimed(task: TaskRow): Promise<void> {
    await this.store.markProcessing(task.video_id);
  }

  async run(task: TaskRow, ctx: TaskContext): Promise<() => Promise<void> | void> {
    const videoId = task.video_id;
    const log = this.opts.logger.child({ video_id: videoId, rendition: true });
    const source = await this.store.sourcePath(videoId);
    if (!source) return () => {}; // the video was deleted meanwhile; its row went with it
    const dir = this.files.dir(videoId);
    const tmp = join(dir, "web.mp4.tmp");
    // Held until the encode and its publish are done: the cache's bound (media-cache.ts) spares this video's files.
    const release = this.files.hold(source);
    try {
      // With a bucket: fetched into this node's cache first (and the finished file put back, below).
      const local = await this.files.local(source);
      const info = await probeMedia(this.bins, local, { strict: false, decodeCheck: false });
      const decision = decideRendition({
        container: info.container,
        videoCodec: info.videoCodec,
        pixFmt: info.pixFmt,
        audioCodec: info.audioCodec,
      });
      if (!decision.needed)
        return () => void this.store.finish(videoId, { status: "not_needed", reason: decision.reason });
      const started = this.now();
      // Bounded by the frames the file has, not by the span its timestamps claim (media/bounds.ts).
      const { frames } = await scanTimeline(this.bins, local);
      const timeoutMs = encodeTimeoutMs(frames, (info.width ?? 1920) * (info.height ?? 1080));
      await encodeWebMp4(this.bins, local, tmp, {
        hdr: info.hdr,
        hasAudio: info.hasAudio,
        maxBitRate: info.bitRate,
        timeoutMs,
        signal: ctx.signal,
      });
      if (ctx.signal.aborted) throw new MediaError("TOOL_FAILED", "stopped");
      const out = join(dir, "web.mp4");
      renameSync(tmp, out);
      const size = statSync(out).size;
      await this.files.publish([this.files.rel(out)]); // before the row names it
      return async () => {
        if (
          await this.store.finish(videoId, {
            status: "ready",
            reason: decision.reason,
            path: this.files.rel(out),
            sizeBytes: size,
          })
        )
          log.info("web rendition ready", { took_ms: this.now() - started, bytes: size, why: decision.reason });
        else await this.files.removeFile(this.files.rel(out)); // deleted meanwhile (the row cascaded away)
      };
    } catch (e) {
      if (ctx.signal.aborted) throw e; // stopping or cancelled: the queue knows what to do
      if (!existsSync(dir)) return () => {}; // deleted while encoding
      if (!isMediaError(e)) throw e; // logged by the queue; `fail` records it
      log.warn("rendition failed", { err: e.message });
      return () => void this.store.finish(videoId, { status: "failed", reason: e.message });
    } finally {
      rmSync(tmp, { force: true });
      release();
    }
  }

  async fail(task: TaskRow, error: JobError): Promise<void> {
    await this.store.finish(task.video_id, {
      status: "failed",
      reason:
        error.code === "CRASHED_REPEATEDLY" ? `the encoder ${error.message}` : "the rendition failed unexpectedly",
    });
  }
}
