import type { ErrorCode } from "../core/error-codes.ts";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { AppError, ValidationError } from "../core/errors.ts";
import { FairScheduler, WorkCancelled } from "../core/fair-scheduler.ts";
import { encodeTimeoutMs, scanTimeline } from "../media/bounds.ts";
import { probeMedia, type MediaBins } from "../media/index.ts";
import { encodeWebMp4 } from "../media/web-mp4.ts";
import type { VideoFiles } from "../videos/files.ts";
import type { VideoService } from "../videos/service.ts";
import type { PlaybackStore, TranscriptSegmentRow } from "./store.ts";
import { toSrt, toVtt, type Segment, type TranscriptFormat } from "./transcript-format.ts";

export interface ClipLinks {
  /** Presigned URL of a cached clip file and when it stops working. */
  clipUrl(videoId: string, file: string): { url: string; expiresAt: string };
}

export interface ClipExport {
  url: string;
  expires_at: string;
  start: number;
  end: number;
}

export interface ExportOptions {
  clipMaxSecs: number;
  clipCacheBytes: number;
  /** Clip encodes at once (default 2); more requests wait their turn instead of each starting an ffmpeg. */
  maxConcurrentEncodes?: number;
  /** Distinct clip encodes one account may have running and waiting (default 4); one more is 429. */
  encodesPerAccount?: number;
  /** Waiting clip encodes of all accounts (default 32); one more is 503. */
  maxWaitingEncodes?: number;
}

/** Clip files are named by their span in whole milliseconds: the cache key and the media path. */
export const CLIP_FILE = /^(\d{1,10})-(\d{1,10})\.mp4$/;

/**
 * Exports (SPEC §11): an MP4 of a span, cut on demand and cached under `videos/<id>/clips/`, and
 * the transcript as JSON, SRT or WebVTT. Both check the video belongs to the caller's account
 * (another account's id is a 404) through VideoService.
 */
export class ExportService {
  /**
   * Clip encodes, per account in turn (core/fair-scheduler.ts), keyed by file: a second request
   * for the same span joins the first, and an encode stops once every request waiting for it left.
   */
  private readonly encodes: FairScheduler;

  constructor(
    private readonly videos: VideoService,
    private readonly store: PlaybackStore,
    private readonly files: VideoFiles,
    private readonly bins: MediaBins,
    private readonly links: ClipLinks,
    private readonly opts: ExportOptions,
  ) {
    this.encodes = new FairScheduler({
      what: "clip export",
      concurrency: opts.maxConcurrentEncodes ?? 2,
      perAccount: opts.encodesPerAccount ?? 4,
      maxWaiting: opts.maxWaitingEncodes ?? 32,
      busyCode: "SERVER_BUSY" satisfies ErrorCode,
      retryAfterSecs: 2,
    });
  }

  get encodeStats() {
    return this.encodes.stats;
  }

  /** Stops the clip encodes of deleted videos (their folders are going). */
  onVideosDeleted(videoIds: readonly string[]): void {
    this.encodes.abortTagged(videoIds);
  }

  /**
   * An MP4 of [start, end] (cached). `signal`: the caller leaving; its encode stops unless another
   * request waits for the same span.
   */
  async clip(
    accountId: string,
    videoId: string,
    start: number,
    end: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ClipExport> {
    const video = await this.videos.require(accountId, videoId);
    if (video.status !== "ready" || video.duration_secs === null) {
      throw new AppError("VIDEO_NOT_READY", `Video ${videoId} is ${video.status}; clips can be cut once it is ready`);
    }
    const duration = video.duration_secs;
    const startMs = Math.round(start * 1000);
    // An end a rounding hair past the duration (a player's currentTime) is the end.
    const endMs = Math.min(Math.round(end * 1000), Math.floor(duration * 1000));
    const issue = (field: string, msg: string, type: string, input: number, ctx: Record<string, unknown>) =>
      new ValidationError([{ loc: ["query", field], msg, type, input, ctx }]);
    if (start < 0) throw issue("start", "start must not be negative", "greater_than_equal", start, { ge: 0 });
    if (startMs >= Math.floor(duration * 1000))
      throw issue("start", `start must be before the end of the video (${duration} s)`, "less_than", start, {
        lt: duration,
      });
    if (end > duration + 0.5)
      throw issue("end", `end is past the end of the video (${duration} s)`, "less_than_equal", end, { le: duration });
    if (endMs <= startMs) throw issue("end", "end must be after start", "greater_than", end, { gt: start });
    if (endMs - startMs > this.opts.clipMaxSecs * 1000) {
      throw issue("end", `a clip may be at most ${this.opts.clipMaxSecs} s long`, "less_than_equal", end, {
        le: start + this.opts.clipMaxSecs,
      });
    }

    const dir = join(this.files.dir(videoId), "clips");
    const name = `${startMs}-${endMs}.mp4`;
    const file = join(dir, name);
    if (existsSync(file)) {
      const t = new Date();
      utimesSync(file, t, t); // recently used: last to be evicted
    } else if (!(this.files.bucket && (await this.files.has(this.files.rel(file))))) {
      // (With a bucket, a clip another node cut is there already: its link serves it from the bucket.)
      try {
        await this.encodes.run(
          accountId,
          (signal) => this.encode(videoId, dir, file, startMs / 1000, (endMs - startMs) / 1000, signal),
          { key: file, tag: videoId, signal: opts.signal },
        );
      } catch (e) {
        if (!(e instanceof WorkCancelled)) throw e;
        if (opts.signal?.aborted)
          throw new AppError("CLIENT_CLOSED_REQUEST", "The client left before the clip was ready");
        throw new AppError("VIDEO_NOT_FOUND", `Video ${videoId} was deleted while its clip was being cut`);
      }
    }
    const link = this.links.clipUrl(videoId, name);
    return { url: link.url, expires_at: link.expiresAt, start: startMs / 1000, end: endMs / 1000 };
  }

  /**
   * One clip: up to `clip_max_secs` of re-encoding, timed out in proportion to the frames it
   * really decodes (the span's packets and the GOP before it; media/bounds.ts), killed when
   * `signal` aborts (nobody waits any more, or the video was deleted).
   */
  private async encode(
    videoId: string,
    dir: string,
    file: string,
    start: number,
    duration: number,
    signal: AbortSignal,
  ): Promise<void> {
    const sourceRel = await this.store.sourcePath(videoId);
    if (!sourceRel) throw new AppError("VIDEO_NOT_FOUND", `Video ${videoId} not found`);
    // Held while ffmpeg reads it: the node's media cache (media-cache.ts) evicts nothing of this video meanwhile.
    const release = this.files.hold(sourceRel);
    try {
      const source = await this.files.local(sourceRel);
      const info = await probeMedia(this.bins, source, { strict: false, decodeCheck: false, signal });
      const span = await scanTimeline(this.bins, source, { start, duration, timeoutMs: 60_000 });
      if (signal.aborted) return;
      mkdirSync(dir, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      try {
        await encodeWebMp4(this.bins, source, tmp, {
          hdr: info.hdr,
          hasAudio: info.hasAudio,
          start,
          duration,
          timeoutMs: encodeTimeoutMs(span.frames, (info.width ?? 1920) * (info.height ?? 1080)),
          signal,
        });
        if (signal.aborted) return;
        renameSync(tmp, file);
      } finally {
        rmSync(tmp, { force: true });
      }
    } finally {
      release();
    }
    // With a bucket the clip's link may reach another server: it serves the clip from there.
    await this.files.publish([this.files.rel(file)]);
    await this.evict(file);
  }

  /**
   * Keeps every cached clip together under the bound: least recently used go first (never `keep`).
   * With a bucket, an evicted clip's object goes too: each node bounds the clips it cut.
   */
  private async evict(keep: string): Promise<void> {
    const root = this.files.videosRoot;
    if (!existsSync(root)) return;
    const all: { path: string; size: number; used: number }[] = [];
    for (const v of readdirSync(root)) {
      const dir = join(root, v, "clips");
      if (!existsSync(dir)) continue;
      for (const f of readdirSync(dir)) {
        if (!CLIP_FILE.test(f)) continue;
        const st = statSync(join(dir, f), { throwIfNoEntry: false });
        if (st) all.push({ path: join(dir, f), size: st.size, used: st.mtimeMs });
      }
    }
    let total = all.reduce((n, c) => n + c.size, 0);
    for (const c of all.sort((a, b) => a.used - b.used)) {
      if (total <= this.opts.clipCacheBytes) break;
      if (c.path === keep) continue;
      await this.files.removeFile(this.files.rel(c.path));
      total -= c.size;
    }
  }

  /** The video's transcript segments in order, as stored (what the export formats and the agent's get_transcript pages through). */
  async segments(accountId: string, videoId: string): Promise<TranscriptSegmentRow[]> {
    await this.videos.require(accountId, videoId);
    return await this.store.transcript(videoId);
  }

  async transcript(
    accountId: string,
    videoId: string,
    format: TranscriptFormat,
  ): Promise<{ contentType: string; body: string } | { json: { video_id: string; segments: Segment[] } }> {
    const segments = (await this.segments(accountId, videoId)).map((s) => ({
      start: round(s.start_secs),
      end: round(s.end_secs),
      text: s.text.trim(),
    }));
    if (format === "srt") return { contentType: "application/x-subrip; charset=utf-8", body: toSrt(segments) };
    if (format === "vtt") return { contentType: "text/vtt; charset=utf-8", body: toVtt(segments) };
    return { json: { video_id: videoId, segments } };
  }
}

const round = (t: number) => Math.round(t * 1000) / 1000;
