/**
 * Resumable HTTP download of one file into a `.part` file. The `.part` file survives an
 * interrupted run; the next attempt asks for the rest with `Range: bytes=<have>-`. Whether the
 * bytes are right is the caller's business (size and sha256 against the manifest).
 */
import { open, rm, stat } from "node:fs/promises";
import type { ErrorCode } from "../core/error-codes.ts";
import { AppError } from "../core/errors.ts";

export type FetchImpl = (input: string, init?: RequestInit) => Promise<Response>;

export interface DownloadOptions {
  url: string;
  partFile: string;
  /** From the manifest; null when unknown. */
  expectedSize: number | null;
  fetchImpl: FetchImpl;
  /** Abort when no byte arrives for this long. */
  stallMs: number;
  /**
   * Ceiling for a file whose size neither the manifest nor the server gives (an endless body
   * wrote 2.4 GB in 25 s without one). Default DEFAULT_MAX_UNKNOWN_BYTES.
   */
  maxUnknownBytes?: number;
  /**
   * Redirects to another origin this GET may still follow (same-origin ones: up to 5). The hub's
   * one cross-origin hop (to its CDN) was already taken by its HEAD, so its CDN GETs pass 0; a
   * mirror's file may move once (1, the default).
   */
  crossOriginHops?: number;
  /** Bytes written since the last call (for progress); `have` is the size already on disk. */
  onBytes?: (delta: number, have: number, total: number | null) => void;
}

/** 8 GiB: larger than any one file of the models vsearch runs (a ViT-L/14 fp32 image tower is ~1.2 GB). */
export const DEFAULT_MAX_UNKNOWN_BYTES = 8 * 1024 ** 3;

const MAX_SAME_ORIGIN_REDIRECTS = 5;

/**
 * A request whose redirects are followed only as docs/MODELS.md says: within the origin (at most
 * 5), and to another origin at most `crossOriginHops` times. Bodies are never decompressed
 * (`decompress: false`): what is counted and hashed is what was sent. A redirect that goes
 * further is an error naming where it pointed.
 */
export async function fetchFollowing(
  fetchImpl: FetchImpl,
  url: string,
  init: RequestInit,
  crossOriginHops: number,
): Promise<{ res: Response; url: string }> {
  let hopsLeft = crossOriginHops;
  for (let same = 0; ; ) {
    const res = await fetchImpl(url, { ...init, redirect: "manual", decompress: false } as RequestInit);
    if (res.status < 300 || res.status >= 400 || res.status === 304) return { res, url };
    await res.body?.cancel().catch(() => {});
    const loc = res.headers.get("location");
    if (!loc) throw failed(`${init.method ?? "GET"} ${url}: HTTP ${res.status} without a Location`);
    const next = new URL(loc, url);
    if (next.origin === new URL(url).origin) {
      if (++same > MAX_SAME_ORIGIN_REDIRECTS)
        throw failed(`${init.method ?? "GET"} ${url}: more than ${MAX_SAME_ORIGIN_REDIRECTS} redirects`);
    } else if (hopsLeft-- <= 0) {
      throw failed(
        `${init.method ?? "GET"} ${url}: redirected to another host (${next.origin}); only the hub's one redirect to its CDN is followed (docs/MODELS.md)`,
      );
    }
    url = next.toString();
  }
}

/** A failure worth another attempt (network, 5xx, connection closed early); the `.part` is kept. */
export const INTERRUPTED = "MODEL_DOWNLOAD_INTERRUPTED" satisfies ErrorCode;

const interrupted = (msg: string) => new AppError(INTERRUPTED, msg);
const failed = (msg: string) => new AppError("MODEL_DOWNLOAD_FAILED", msg);

async function partSize(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

// "bytes 100-199/200" gives {start: 100, total: 200}; "bytes (star)/200" (a 416 answer) gives {start: null, total: 200}.
function contentRange(v: string | null): { start: number | null; total: number | null } | null {
  const m = v?.match(/^bytes (?:(\d+)-\d+|\*)\/(\d+|\*)$/);
  if (!m) return null;
  return { start: m[1] === undefined ? null : Number(m[1]), total: m[2] === "*" ? null : Number(m[2]) };
}

/** Returns once `partFile` holds the whole file (as far as the server and manifest can tell). */
export async function downloadResumable(o: DownloadOptions): Promise<void> {
  let have = await partSize(o.partFile);
  if (o.expectedSize !== null && have > o.expectedSize) {
    await rm(o.partFile, { force: true }); // longer than the file: not a prefix of it
    have = 0;
  }
  if (o.expectedSize !== null && have === o.expectedSize) return;

  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => ac.abort(new Error(`no data for ${o.stallMs / 1000} s`)), o.stallMs);
  };
  arm();
  try {
    let res: Response;
    try {
      ({ res } = await fetchFollowing(
        o.fetchImpl,
        o.url,
        {
          headers:
            have > 0 ? { range: `bytes=${have}-`, "accept-encoding": "identity" } : { "accept-encoding": "identity" },
          signal: ac.signal,
        },
        o.crossOriginHops ?? 1,
      ));
    } catch (e) {
      if (e instanceof AppError) throw e;
      throw interrupted(`GET ${o.url}: ${(e as Error).message}`);
    }
    // `identity` was asked: a compressed body's length and bytes are not the file's (a gzip bomb
    // wrote 7.2 GB in 60 s when it was decoded on the fly). Refused, not decoded.
    const encoding = res.headers.get("content-encoding");
    if (encoding && encoding.trim().toLowerCase() !== "identity") {
      await res.body?.cancel().catch(() => {});
      throw failed(
        `GET ${o.url}: the server sent Content-Encoding "${encoding.slice(0, 40)}" although identity was asked; vsearch stores files exactly as sent and will not decode them`,
      );
    }

    if (res.status === 416 && have > 0) {
      // The range starts at or past the end: the .part is complete when its size is the total.
      await res.body?.cancel();
      const total = contentRange(res.headers.get("content-range"))?.total ?? null;
      if (total === have) return;
      await rm(o.partFile, { force: true });
      throw interrupted(`GET ${o.url}: the server refused to resume at byte ${have}; starting over`);
    }
    let append = false;
    let total: number | null;
    if (res.status === 206 && have > 0) {
      const cr = contentRange(res.headers.get("content-range"));
      if (cr?.start !== have) {
        await res.body?.cancel();
        throw failed(
          `GET ${o.url}: asked for bytes ${have}- and got ${res.headers.get("content-range") ?? "no Content-Range"}`,
        );
      }
      append = true;
      total = cr.total;
    } else if (res.status === 200) {
      have = 0; // the server ignores Range: start over
      const len = res.headers.get("content-length");
      total = len === null ? null : Number(len);
    } else {
      await res.body?.cancel();
      const msg = `GET ${o.url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
      throw res.status >= 500 || res.status === 408 || res.status === 429 ? interrupted(msg) : failed(msg);
    }
    if (total !== null && o.expectedSize !== null && total !== o.expectedSize) {
      await res.body?.cancel();
      throw new AppError(
        "MODEL_HASH_MISMATCH",
        `${o.url}: the server has ${total} bytes, the manifest says ${o.expectedSize}`,
      );
    }
    if (!res.body) throw interrupted(`GET ${o.url}: empty response`);

    const limit = total ?? o.expectedSize;
    const ceiling = o.maxUnknownBytes ?? DEFAULT_MAX_UNKNOWN_BYTES;
    const out = await open(o.partFile, append ? "a" : "w");
    let got = 0;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        arm();
        if (limit !== null && have + got + chunk.length > limit) {
          throw new AppError("MODEL_HASH_MISMATCH", `${o.url}: the server sent more than the ${limit} bytes announced`);
        }
        if (limit === null && have + got + chunk.length > ceiling) {
          throw failed(
            `GET ${o.url}: more than ${ceiling} bytes and no size announced (manifest or Content-Length); stopped (--max-file-bytes raises the ceiling)`,
          );
        }
        await out.write(chunk);
        got += chunk.length;
        o.onBytes?.(chunk.length, have + got, limit);
      }
    } catch (e) {
      if (e instanceof AppError) {
        await out.close();
        await rm(o.partFile, { force: true });
        throw e;
      }
      throw interrupted(
        `GET ${o.url}: connection lost after ${have + got} bytes (${ac.signal.aborted ? String(ac.signal.reason?.message) : (e as Error).message})`,
      );
    } finally {
      await out.close().catch(() => {});
    }
    if (limit !== null && have + got < limit) {
      throw interrupted(`GET ${o.url}: connection closed after ${have + got} of ${limit} bytes`);
    }
  } finally {
    clearTimeout(timer);
  }
}
