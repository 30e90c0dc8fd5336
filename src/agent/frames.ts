import { AppError } from "../core/errors.ts";
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

/**
 * Still pictures for agents: one decoded frame of a source video (`get_frame`) and clip thumbnails
 * shrunk to the inline size. Each is one short ffmpeg run; at most `concurrency` run at once so a
 * burst of tool calls cannot fork a decoder per call (a 4K decoder holds ~200 MB).
 */
export class FrameGrabber {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  /** Whether a source is HDR (PQ/HLG), by path: one ffprobe per video, not per frame. */
  private readonly hdrOf = new Map<string, boolean>();

  constructor(
    private readonly bins: MediaBins,
    private readonly concurrency = 2,
    private readonly timeoutMs = 30_000,
  ) {}

  /**
   * The frame shown at `timestampSecs`, fitted inside maxSide × maxSide with square pixels
   * (rotation is applied by ffmpeg's autorotate, anamorphic pixels by the first scale) and HDR
   * tone-mapped to SDR as the thumbnails are (`hdr` undefined: ask ffprobe once per source).
   * Input seeking is exact and costs one GOP. Past the last frame there is nothing to decode;
   * the caller validates the time against the duration, and the last second is retried from the end.
   */
  async frame(
    source: string,
    timestampSecs: number,
    maxSide: number,
    opts: { hdr?: boolean } = {},
  ): Promise<Uint8Array> {
    const hdr = opts.hdr ?? (await this.isHdr(source));
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
    let jpeg = await this.run(["-ss", timestampSecs.toFixed(6), "-i", source, ...out]);
    // A time in the last frame's span can land after the last decodable timestamp: take the last frame.
    if (!jpeg.length)
      jpeg = await this.run(
        ["-sseof", "-1", "-i", source, ...out.filter((a, k) => a !== "-frames:v" && out[k - 1] !== "-frames:v")],
        true,
      );
    if (!jpegSize(jpeg)) throw new AppError("DECODE_FAILED", "No frame could be decoded at that time");
    return jpeg;
  }

  /** A stored JPEG no wider than `maxWidth` (re-encoded only when it is wider). */
  async fitWidth(jpeg: Uint8Array, path: string, maxWidth: number): Promise<Uint8Array | null> {
    const size = jpegSize(jpeg);
    if (!size) return null;
    if (size.width <= maxWidth) return jpeg;
    const out = await this.run([
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
    ]);
    return jpegSize(out) ? out : null;
  }

  private async isHdr(source: string): Promise<boolean> {
    let hdr = this.hdrOf.get(source);
    if (hdr === undefined) {
      await this.acquire();
      try {
        hdr = (await probeMedia(this.bins, source, { strict: false, timeoutMs: this.timeoutMs })).hdr;
      } catch {
        hdr = false; // the decode that follows reports a file it cannot read
      } finally {
        this.release();
      }
      if (this.hdrOf.size >= 1024) this.hdrOf.clear();
      this.hdrOf.set(source, hdr);
    }
    return hdr;
  }

  private async run(args: string[], lastOnly = false): Promise<Uint8Array> {
    await this.acquire();
    try {
      const exit = await runTool(
        this.bins.ffmpeg,
        ["-hide_banner", "-nostdin", "-nostats", "-v", "error", "-threads", "1", ...args],
        {
          timeoutMs: this.timeoutMs,
          maxStdoutBytes: 16 * 1024 * 1024,
        },
      );
      if (exit.code !== 0) throw new AppError("DECODE_FAILED", "The video could not be decoded at that time");
      return lastOnly ? lastJpeg(exit.stdout) : exit.stdout;
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.running < this.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  private release() {
    const next = this.queue.shift();
    if (next) next();
    else this.running--;
  }
}

/** image2pipe concatenates JPEGs; the last one starts at the last SOI marker that begins a frame. */
function lastJpeg(b: Uint8Array): Uint8Array {
  for (let i = b.length - 4; i >= 0; i--) {
    if (b[i] === 0xff && b[i + 1] === 0xd8 && b[i + 2] === 0xff && jpegSize(b.subarray(i))) return b.subarray(i);
  }
  return b;
}
