import type { ErrorCode } from "../core/error-codes.ts";
import { AppError } from "../core/errors.ts";
import { FairScheduler, WorkCancelled } from "../core/fair-scheduler.ts";
import { decodeLimits } from "../media/bounds.ts";
import { HDR_TO_SDR, jpegCodecArgs } from "../media/filters.ts";
import { type MediaBins, runTool } from "../media/process.ts";
import { probeMedia } from "../media/probe.ts";

/** Width and height of a JPEG from its start-of-frame marker (no decoding); null if not a JPEG. */
export function jpegSize(b: Uint8Array): { width: number; height: number } | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1];
    if (marker === 0xff) {
      i++;
      continue;
    }
    const len = (b[i + 2] << 8) | b[i + 3];
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (b[i + 5] << 8) | b[i + 6], width: (b[i + 7] << 8) | b[i + 8] };
    }
    i += 2 + len;
  }
  return null;
}

/** What a frame grab needs to know about its source, asked of ffprobe once per source. */
interface SourceFacts {
  hdr: boolean;
  codec: string | null;
  /** Longer side as stored, for the decoder's own downscale (`-lowres`). */
  side: number;
}

/** Decoders that can hand out 1/2, 1/4 or 1/8 of the picture without decoding the rest. */
const LOWRES_CODECS = new Set(["mjpeg", "jpeg2000"]);

export interface FrameGrabberOptions {
  /** Grabs running at once (all accounts); default 2. */
  concurrency?: number;
  /** Running and waiting grabs of one account; one more is 429. Default 4. */
  perAccount?: number;
  /** Waiting grabs of all accounts; one more is 503. Default 32. */
  maxWaiting?: number;
  timeoutMs?: number;
}

/**
 * Still pictures for agents: one decoded frame of a source video (`get_frame`) and clip thumbnails
 * shrunk to the inline size. Each is one short ffmpeg run, scheduled per account (core/fair-scheduler:
 * accounts take turns, at most `perAccount` each, past it 429) so a burst of tool calls from one
 * account can neither fork a decoder per call (a 4K decoder holds ~200 MB) nor make another
 * account's grab wait behind it. Decoded frames are bounded by `max_video_pixels`; an MJPEG or
 * JPEG 2000 source is decoded at 1/2–1/8 of its size when that still fills the picture asked for.
 */
export class FrameGrabber {
  private readonly slots: FairScheduler;
  private readonly timeoutMs: number;
  /** Facts about a source, by path: one ffprobe per video, not per frame. */
  private readonly facts = new Map<string, SourceFacts>();

  constructor(
    private readonly bins: MediaBins,
    opts: FrameGrabberOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.slots = new FairScheduler({
      what: "frame grab",
      concurrency: opts.concurrency ?? 2,
      perAccount: opts.perAccount ?? 4,
      maxWaiting: opts.maxWaiting ?? 32,
      busyCode: "SERVER_BUSY" satisfies ErrorCode,
    });
  }

  get stats() {
    return this.slots.stats;
  }

  /** Stops the grabs of deleted videos (tagged with their ids). */
  onVideosDeleted(videoIds: readonly string[]): void {
    this.slots.abortTagged(videoIds);
  }

  /**
   * The frame shown at `timestampSecs`, fitted inside maxSide × maxSide with square pixels
   * (rotation is applied by ffmpeg's autorotate, anamorphic pixels by the first scale) and HDR
   * tone-mapped to SDR as the thumbnails are (`hdr` undefined: ask ffprobe once per source).
   * Input seeking is exact and costs one GOP. Past the last frame there is nothing to decode;
   * the caller validates the time against the duration, and the last second is retried from the end.
   */
  async frame(
    accountId: string,
    source: string,
    timestampSecs: number,
    maxSide: number,
    opts: { hdr?: boolean; videoId?: string; signal?: AbortSignal } = {},
  ): Promise<Uint8Array> {
    return this.scheduled(
      accountId,
      async (signal) => {
        const facts = await this.factsOf(source, signal);
        const hdr = opts.hdr ?? facts.hdr;
        const filters = [
          "scale=w='trunc(iw*sar)':h=ih",
          "setsar=1",
          `scale=w='min(${maxSide},iw)':h='min(${maxSide},ih)':force_original_aspect_ratio=decrease`,
          // zimg (the HDR chain) refuses odd sizes in 4:2:0.
          ...(hdr ? ["scale=w='max(2,trunc(iw/2)*2)':h='max(2,trunc(ih/2)*2)'", HDR_TO_SDR] : []),
          "setsar=1",
        ];
        const out = [
          "-map",
          "0:v:0",
          "-vf",
          filters.join(","),
          "-frames:v",
          "1",
          ...jpegCodecArgs(85),
          "-f",
          "image2pipe",
          "pipe:1",
        ];
        const input = [...lowres(facts, maxSide), ...decodeLimits(this.bins)];
        let jpeg = await this.run([...input, "-ss", timestampSecs.toFixed(6), "-i", source, ...out], signal);
        // A time in the last frame's span can land after the last decodable timestamp: take the last frame.
        if (!jpeg.length)
          jpeg = await this.run(
            [
              ...input,
              "-sseof",
              "-1",
              "-i",
              source,
              ...out.filter((a, k) => a !== "-frames:v" && out[k - 1] !== "-frames:v"),
            ],
            signal,
            true,
          );
        if (!jpegSize(jpeg)) throw new AppError("DECODE_FAILED", "No frame could be decoded at that time");
        return jpeg;
      },
      opts,
    );
  }

  /** A stored JPEG no wider than `maxWidth` (re-encoded only when it is wider). */
  async fitWidth(
    accountId: string,
    jpeg: Uint8Array,
    path: string,
    maxWidth: number,
    opts: { videoId?: string; signal?: AbortSignal } = {},
  ): Promise<Uint8Array | null> {
    const size = jpegSize(jpeg);
    if (!size) return null;
    if (size.width <= maxWidth) return jpeg;
    const out = await this.scheduled(
      accountId,
      (signal) =>
        this.run(
          [
            ...decodeLimits(this.bins),
            "-i",
            path,
            "-vf",
            `scale=w=${maxWidth}:h=-2`,
            "-frames:v",
            "1",
            ...jpegCodecArgs(85),
            "-f",
            "image2pipe",
            "pipe:1",
          ],
          signal,
        ),
      opts,
    );
    return jpegSize(out) ? out : null;
  }

  private async scheduled<T>(
    accountId: string,
    work: (signal: AbortSignal) => Promise<T>,
    opts: { videoId?: string; signal?: AbortSignal },
  ): Promise<T> {
    try {
      return await this.slots.run(accountId, work, { tag: opts.videoId, signal: opts.signal });
    } catch (e) {
      if (e instanceof WorkCancelled) {
        if (opts.signal?.aborted)
          throw new AppError("CLIENT_CLOSED_REQUEST", "The caller left before the frame was ready");
        throw new AppError("VIDEO_NOT_FOUND", "The video was deleted while its frame was being read");
      }
      throw e;
    }
  }

  private async factsOf(source: string, signal: AbortSignal): Promise<SourceFacts> {
    let facts = this.facts.get(source);
    if (facts === undefined) {
      try {
        const info = await probeMedia(this.bins, source, { strict: false, timeoutMs: this.timeoutMs, signal });
        facts = { hdr: info.hdr, codec: info.videoCodec, side: Math.max(info.width ?? 0, info.height ?? 0) };
      } catch (e) {
        if (signal.aborted) throw e;
        facts = { hdr: false, codec: null, side: 0 }; // the decode that follows reports a file it cannot read
      }
      if (this.facts.size >= 1024) this.facts.clear();
      this.facts.set(source, facts);
    }
    return facts;
  }

  private async run(args: string[], signal: AbortSignal, lastOnly = false): Promise<Uint8Array> {
    const exit = await runTool(
      this.bins.ffmpeg,
      ["-hide_banner", "-nostdin", "-nostats", "-v", "error", "-threads", "1", ...args],
      {
        timeoutMs: this.timeoutMs,
        maxStdoutBytes: 16 * 1024 * 1024,
        signal,
      },
    );
    if (signal.aborted) throw new AppError("CLIENT_CLOSED_REQUEST", "stopped");
    if (exit.code !== 0) throw new AppError("DECODE_FAILED", "The video could not be decoded at that time");
    return lastOnly ? lastJpeg(exit.stdout) : exit.stdout;
  }
}

/** `-lowres k`: the decoder's own 1/2^k picture, when the source's codec has one and it still covers `maxSide`. */
function lowres(facts: SourceFacts, maxSide: number): string[] {
  if (!facts.codec || !LOWRES_CODECS.has(facts.codec) || !facts.side) return [];
  let k = 0;
  while (k < 3 && facts.side >> (k + 1) >= maxSide) k++;
  return k ? ["-lowres", String(k)] : [];
}

/** image2pipe concatenates JPEGs; the last one starts at the last SOI marker that begins a frame. */
function lastJpeg(b: Uint8Array): Uint8Array {
  for (let i = b.length - 4; i >= 0; i--) {
    if (b[i] === 0xff && b[i + 1] === 0xd8 && b[i + 2] === 0xff && jpegSize(b.subarray(i))) return b.subarray(i);
  }
  return b;
}
