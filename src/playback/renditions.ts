import { randomBytes } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../core/logger.ts";
import { isMediaError, probeMedia, type MediaBins } from "../media/index.ts";
import { encodeTimeoutMs, scanTimeline } from "../media/bounds.ts";
import { encodeWebMp4 } from "../media/web-mp4.ts";
import type { VideoFiles } from "../videos/files.ts";
import { decideRendition } from "./decision.ts";
import type { PlaybackStore, RenditionRow } from "./store.ts";

export interface RenditionWorkerOptions {
  logger: Logger;
  now?: () => number;
  leaseMs?: number;
  pollMs?: number;
  /** A rendition whose encoder died this many times is failed instead of retried forever. */
  maxAttempts?: number;
  /** false while ingest jobs run (or the disk is full): renditions wait, so they never slow down making videos searchable. */
  idle?: () => boolean;
}

/**
 * Makes web renditions (SPEC §11) after a video is searchable: its own durable queue (the
 * `renditions` table, migration 007), claimed with a lease like ingest jobs, one encode at a time
 * so it never competes with indexing for more than one core's worth of ffmpeg. Nothing is kept
 * only in memory: a row interrupted by a crash or stop is claimed again after a restart, and the
 * encode writes to a temp name and renames, so a re-run replaces and never duplicates.
 */
export class RenditionWorker {
  readonly owner = `rendition-${process.pid}-${randomBytes(4).toString("hex")}`;
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private current: { abort: AbortController; done: Promise<void> } | null = null;
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly maxAttempts: number;

  constructor(
    private readonly store: PlaybackStore,
    private readonly files: VideoFiles,
    private readonly bins: MediaBins,
    private readonly opts: RenditionWorkerOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.leaseMs = opts.leaseMs ?? 120_000;
    this.pollMs = opts.pollMs ?? 2000;
    this.maxAttempts = opts.maxAttempts ?? 3;
  }

  /** Starts claiming; returns how many rows a previous process left mid-encode (queued again). */
  start(): number {
    this.stopped = false;
    this.wake(); // claims on the next tick, after the release below
    return this.store.releaseAllLeases();
  }

  /** Called when a video becomes searchable, so its rendition starts now instead of at the next poll. */
  wake(): void {
    if (this.stopped || this.current) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.next(), 0);
  }

  private next(): void {
    this.timer = null;
    if (this.stopped || this.current) return;
    if (this.opts.idle && !this.opts.idle()) {
      this.timer = setTimeout(() => this.next(), this.pollMs);
      return;
    }
    const row = this.store.claim(this.owner, this.leaseMs, this.now());
    if (!row) {
      this.timer = setTimeout(() => this.next(), this.pollMs);
      return;
    }
    const abort = new AbortController();
    const done = this.run(row, abort.signal).finally(() => {
      this.current = null;
      this.wake();
    });
    this.current = { abort, done };
  }

  private async run(row: RenditionRow, signal: AbortSignal): Promise<void> {
    const log = this.opts.logger.child({ video_id: row.video_id, rendition: true });
    if (row.attempts > this.maxAttempts) {
      this.store.finish(row.video_id, this.owner, {
        status: "failed",
        reason: `the encoder stopped unexpectedly ${row.attempts - 1} times`,
      });
      return;
    }
    const beat = setInterval(
      () => this.store.renew(row.video_id, this.owner, this.now() + this.leaseMs),
      Math.max(1000, this.leaseMs / 3),
    );
    const dir = this.files.dir(row.video_id);
    const tmp = join(dir, "web.mp4.tmp");
    try {
      const source = this.store.sourcePath(row.video_id);
      if (!source) return; // the video was deleted meanwhile; its row went with it
      const info = await probeMedia(this.bins, this.files.abs(source), { strict: false, decodeCheck: false });
      const decision = decideRendition({
        container: info.container,
        videoCodec: info.videoCodec,
        pixFmt: info.pixFmt,
        audioCodec: info.audioCodec,
      });
      if (!decision.needed) {
        this.store.finish(row.video_id, this.owner, { status: "not_needed", reason: decision.reason });
        return;
      }
      const started = this.now();
      // Bounded by the frames the file has, not by the span its timestamps claim (media/bounds.ts).
      const { frames } = await scanTimeline(this.bins, this.files.abs(source));
      const timeoutMs = encodeTimeoutMs(frames, (info.width ?? 1920) * (info.height ?? 1080));
      await encodeWebMp4(this.bins, this.files.abs(source), tmp, {
        hdr: info.hdr,
        hasAudio: info.hasAudio,
        maxBitRate: info.bitRate,
        timeoutMs,
        signal,
      });
      if (signal.aborted) return;
      const out = join(dir, "web.mp4");
      renameSync(tmp, out);
      const size = statSync(out).size;
      if (
        !this.store.finish(row.video_id, this.owner, {
          status: "ready",
          reason: decision.reason,
          path: this.files.rel(out),
          sizeBytes: size,
        })
      ) {
        rmSync(out, { force: true }); // deleted meanwhile (the row cascaded away)
        return;
      }
      log.info("web rendition ready", { took_ms: this.now() - started, bytes: size, why: decision.reason });
    } catch (e) {
      if (signal.aborted) return; // stopping: the row is queued again at the next start
      if (!existsSync(dir)) return; // deleted while encoding
      const message = isMediaError(e) ? e.message : "the rendition failed unexpectedly";
      if (!isMediaError(e)) log.error("rendition crashed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
      else log.warn("rendition failed", { err: e.message });
      this.store.finish(row.video_id, this.owner, { status: "failed", reason: message });
    } finally {
      clearInterval(beat);
      rmSync(tmp, { force: true });
    }
  }

  /** Stops claiming and waits for the encode in flight (its row is released at the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const c = this.current;
    if (c) {
      c.abort.abort();
      await c.done.catch(() => {});
    }
  }
}
