import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError, ValidationError } from "../core/errors.ts";
import { FairScheduler, WorkCancelled } from "../core/fair-scheduler.ts";
import { runTool } from "../media/process.ts";
import { NetError } from "../net/errors.ts";
import { safeFetch } from "../net/safe-fetch.ts";
import { QUERY_IMAGE_SIDE } from "./embedder.ts";

/** SPEC §6: query images are JPEG or PNG, at most 10 MB, at least 64×64. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
export const MIN_IMAGE_SIDE = 64;
/**
 * Decompression-bomb guard, checked from the header before ffmpeg sees the file: ffmpeg holds
 * the whole decoded frame, so its memory is ~pixels × bytes per pixel + ~10 MB (measured: a
 * 10000×8000 RGB PNG of 254 kB took 258 MB, 6000×4000 took 87 MB). 96 MB of decoded frame is
 * a 32-megapixel JPEG or a 24-megapixel RGBA PNG — more than any query needs (it becomes 224×224).
 */
export const MAX_DECODED_BYTES = 96 * 1024 * 1024;
/** Decodes running at once; more wait, and past MAX_DECODE_WAITING the search is refused (503). */
export const MAX_PARALLEL_DECODES = 2;
export const MAX_DECODE_WAITING = 16;
/** Decodes one account may have running and waiting; one more is 429 (QueryImageDecoder). */
export const DECODES_PER_ACCOUNT = 4;
export const IMAGE_URL_TIMEOUT_MS = 10_000;
const DECODE_TIMEOUT_MS = 15_000;

export interface ImageHeader {
  format: "png" | "jpeg";
  width: number;
  height: number;
  /** Bytes of a decoded pixel: PNG from IHDR (channels × depth); JPEG 3 (4:4:4, the worst case). */
  bytesPerPixel: number;
}

const PNG_CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Format and size from the file header (PNG IHDR, JPEG SOFn); null when it is neither. */
export function readImageHeader(b: Uint8Array): ImageHeader | null {
  if (b.length >= 26 && PNG_MAGIC.every((x, i) => b[i] === x)) {
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    if (String.fromCharCode(b[12], b[13], b[14], b[15]) !== "IHDR") return null;
    const channels = PNG_CHANNELS[b[25]];
    if (!channels) return null;
    return {
      format: "png",
      width: dv.getUint32(16),
      height: dv.getUint32(20),
      bytesPerPixel: channels * Math.max(1, b[24] / 8),
    };
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) {
    let off = 2;
    while (off + 4 <= b.length) {
      if (b[off] !== 0xff) return null;
      let m = b[off + 1];
      while (m === 0xff && off + 2 < b.length) m = b[++off + 1]; // fill bytes
      off += 2;
      if (m === 0xd8 || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) continue; // no length
      if (m === 0xd9 || m === 0xda) return null; // end / scan data before any frame header
      if (off + 2 > b.length) return null;
      const len = (b[off] << 8) | b[off + 1];
      if (len < 2) return null;
      const isSof = m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
      if (isSof) {
        if (off + 7 > b.length) return null;
        return {
          format: "jpeg",
          height: (b[off + 3] << 8) | b[off + 4],
          width: (b[off + 5] << 8) | b[off + 6],
          bytesPerPixel: 3,
        };
      }
      off += len;
    }
  }
  return null;
}

const invalid = (loc: string, msg: string, type: string, ctx?: Record<string, unknown>) =>
  new ValidationError([{ loc: ["body", loc], msg, type, ...(ctx ? { ctx } : {}) }]);

/** Checks format, byte size and pixel size; the 422s name `loc` (`image` or `image_url`). */
export function checkImage(bytes: Uint8Array, loc: "image" | "image_url"): ImageHeader {
  if (bytes.byteLength === 0) throw invalid(loc, "The image is empty", "value_error");
  if (bytes.byteLength > MAX_IMAGE_BYTES) {
    throw invalid(loc, `The image is larger than ${MAX_IMAGE_BYTES} bytes`, "too_long", { max: MAX_IMAGE_BYTES });
  }
  const h = readImageHeader(bytes);
  if (!h) throw invalid(loc, "The image must be a JPEG or PNG file", "image_format");
  if (h.width < MIN_IMAGE_SIDE || h.height < MIN_IMAGE_SIDE) {
    throw invalid(
      loc,
      `The image is ${h.width}×${h.height}; at least ${MIN_IMAGE_SIDE}×${MIN_IMAGE_SIDE} is needed`,
      "image_too_small",
      {
        min: MIN_IMAGE_SIDE,
      },
    );
  }
  const decoded = h.width * h.height * h.bytesPerPixel;
  if (decoded > MAX_DECODED_BYTES) {
    const maxPixels = Math.floor(MAX_DECODED_BYTES / h.bytesPerPixel);
    throw invalid(
      loc,
      `The image is ${h.width}×${h.height}; at most ${(maxPixels / 1e6).toFixed(1)} megapixels of this kind can be decoded`,
      "image_too_large",
      {
        max_pixels: maxPixels,
      },
    );
  }
  return h;
}

/**
 * Query-image decodes, scheduled per account (core/fair-scheduler.ts): MAX_PARALLEL_DECODES run at
 * once, accounts take turns, one account holds at most DECODES_PER_ACCOUNT running and waiting
 * (one more: 429 with Retry-After), and all accounts together at most MAX_DECODE_WAITING waiting
 * (one more: 503 SEARCH_UNAVAILABLE with Retry-After). One account's burst of 24 images used to
 * fill the one shared queue and make every other account's image search wait up to 55 s or fail.
 */
export class QueryImageDecoder {
  private readonly slots = new FairScheduler({
    what: "query image decode",
    concurrency: MAX_PARALLEL_DECODES,
    perAccount: DECODES_PER_ACCOUNT,
    maxWaiting: MAX_DECODE_WAITING,
    busyCode: "SEARCH_UNAVAILABLE",
  });

  constructor(
    private readonly ffmpeg: string,
    private readonly tmpDir: () => string,
  ) {}

  get stats() {
    return this.slots.stats;
  }

  async decode(
    accountId: string,
    bytes: Uint8Array,
    loc: "image" | "image_url",
    signal?: AbortSignal,
  ): Promise<Uint8Array> {
    try {
      return await this.slots.run(accountId, (s) => decodeImageRgb(this.ffmpeg, this.tmpDir(), bytes, loc, s), {
        signal,
      });
    } catch (e) {
      if (e instanceof WorkCancelled)
        throw new AppError("CLIENT_CLOSED_REQUEST", "The client left before its image was decoded");
      throw e;
    }
  }
}

/**
 * A checked JPEG/PNG → 224×224 RGB24 the way frames are prepared for CLIP: shortest side scaled
 * to 224 (bicubic), centre crop. ffmpeg reads it from a temp file in the data dir's upload temp
 * folder (swept at start-up), which is removed again at once. Unscheduled: QueryImageDecoder
 * is what a search goes through.
 */
export async function decodeImageRgb(
  ffmpeg: string,
  tmpDir: string,
  bytes: Uint8Array,
  loc: "image" | "image_url",
  signal?: AbortSignal,
): Promise<Uint8Array> {
  const s = QUERY_IMAGE_SIDE;
  const file = join(tmpDir, `query-${process.pid}-${randomBytes(8).toString("hex")}.img`);
  writeFileSync(file, bytes, { mode: 0o600 });
  try {
    const vf = `scale=w='max(${s},ceil(${s}*dar))':h='max(${s},ceil(${s}/dar))':flags=bicubic+accurate_rnd+full_chroma_int,crop=${s}:${s},setsar=1`;
    const run = await runTool(
      ffmpeg,
      [
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-threads",
        "1",
        // The header check above is the bound; this is the decoder's own, should a header lie.
        "-max_pixels",
        String(Math.floor(MAX_DECODED_BYTES / 3)),
        "-i",
        file,
        "-frames:v",
        "1",
        "-vf",
        vf,
        "-pix_fmt",
        "rgb24",
        "-f",
        "rawvideo",
        "pipe:1",
      ],
      { timeoutMs: DECODE_TIMEOUT_MS, maxStdoutBytes: s * s * 3 + 1, signal },
    ).catch(() => null);
    if (!run || run.code !== 0 || run.stdout.byteLength !== s * s * 3) {
      throw invalid(loc, "The image could not be decoded", "image_decode");
    }
    return run.stdout;
  } finally {
    rmSync(file, { force: true });
  }
}
/**
 * `image_url`: one GET through the outbound rules (public targets only unless the operator opened
 * a network; the checked address is the one connected to; redirects are not followed), with a
 * time and size limit. Every way it can fail is the caller's input: a 422 on `image_url`.
 */
export async function fetchImageUrl(url: string, allowNetworks: readonly string[]): Promise<Uint8Array> {
  let res;
  try {
    res = await safeFetch(url, {
      method: "GET",
      headers: { accept: "image/jpeg, image/png" },
      allowNetworks,
      timeoutMs: IMAGE_URL_TIMEOUT_MS,
      maxResponseBytes: MAX_IMAGE_BYTES,
      onOversize: "error",
    });
  } catch (e) {
    if (!(e instanceof NetError)) throw e;
    const why: Record<string, [string, string]> = {
      INVALID_URL: ["url_parsing", "image_url is not a valid http(s) URL"],
      TARGET_FORBIDDEN: [
        "url_forbidden",
        `image_url points at an address that may not be fetched${e.reason ? ` (${e.reason})` : ""}`,
      ],
      DNS_FAILED: ["url_unreachable", "image_url's host name did not resolve"],
      CONNECT_FAILED: ["url_unreachable", "image_url could not be reached"],
      TLS_FAILED: ["url_unreachable", "image_url's TLS connection failed"],
      TIMEOUT: ["url_timeout", `image_url did not answer within ${IMAGE_URL_TIMEOUT_MS} ms`],
      RESPONSE_TOO_LARGE: ["too_long", `image_url's body is larger than ${MAX_IMAGE_BYTES} bytes`],
    };
    const [type, msg] = why[e.code] ?? ["url_unreachable", "image_url could not be fetched"];
    throw invalid("image_url", msg, type);
  }
  if (res.status >= 300 && res.status < 400)
    throw invalid("image_url", `image_url answered ${res.status}; redirects are not followed`, "url_redirect");
  if (res.status !== 200) throw invalid("image_url", `image_url answered HTTP ${res.status}`, "url_status");
  return res.body;
}
