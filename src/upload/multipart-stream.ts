/**
 * A streaming multipart/form-data reader (RFC 7578): parts are handed over chunk by chunk as
 * they arrive, so a multi-gigabyte upload never sits in memory. Only the bytes that might be
 * the start of a boundary are kept between chunks.
 *
 * Why hand-written rather than busboy (issue 10 asked for the swap; it was made and measured):
 * busboy behind this same interface (bench/lib/multipart-busboy.ts) passes test/upload, but
 * costs ~3× the CPU per byte — 884 vs 281 ms per GiB, 1 158 vs 3 644 MiB/s on 64 KiB chunks
 * (bench/multipart-parse.ts, BENCHMARKS.md) — on a two-core appliance that also decodes video.
 * End to end (bench/upload-rss.ts, 1 GiB) both are bound by the socket, with the same RSS growth
 * (~50 MB). The bug busboy would have avoided — `filename*=UTF-8''%ZZ` threw a URIError, a 500 —
 * is fixed below and the reader is property-tested on arbitrary bytes in arbitrary chunks
 * (test/security/properties.ts): any input ends in parts or a MultipartError.
 */
export interface PartHeaders {
  name: string;
  filename: string | null;
  contentType: string | null;
}

export interface PartHandlers {
  onPartStart(part: PartHeaders): void | Promise<void>;
  /** Awaited before the next chunk is read: slow disks push back on the client. */
  onPartData(chunk: Uint8Array): void | Promise<void>;
  onPartEnd(): void | Promise<void>;
}

export class MultipartError extends Error {
  override name = "MultipartError";
}

const MAX_HEADER_BYTES = 16 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");

export function boundaryOf(contentType: string | null | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : null;
}

/** RFC 8187 `filename*` value; a bad percent-escape is the client's mistake (a 422), never a throw. */
function decodeExtValue(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    throw new MultipartError("a part's filename* is not valid percent-encoded UTF-8");
  }
}

function parseHeaders(raw: string): PartHeaders {
  let name: string | null = null;
  let filename: string | null = null;
  let contentType: string | null = null;
  for (const line of raw.split("\r\n")) {
    const idx = line.indexOf(":");
    if (idx < 0) continue;
    const key = line.slice(0, idx).trim().toLowerCase();
    const value = line.slice(idx + 1).trim();
    if (key === "content-disposition") {
      name = /;\s*name="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? /;\s*name=([^;\s]+)/i.exec(value)?.[1] ?? null;
      const star = /;\s*filename\*=UTF-8''([^;]+)/i.exec(value)?.[1];
      filename = star ? decodeExtValue(star) : (/;\s*filename="((?:[^"\\]|\\.)*)"/i.exec(value)?.[1] ?? null);
    } else if (key === "content-type") {
      contentType = value;
    }
  }
  if (name === null) throw new MultipartError("a part has no Content-Disposition name");
  return { name, filename, contentType };
}

export async function readMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  h: PartHandlers,
): Promise<void> {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // Pretend the body starts with CRLF so the first boundary looks like every other delimiter.
  let buf: Buffer = Buffer.from("\r\n");
  type State = "preamble" | "after-delim" | "headers" | "body" | "done";
  let state = "preamble" as State;
  const reader = body.getReader();
  let ended = false;

  const step = async (): Promise<boolean> => {
    switch (state) {
      case "preamble": {
        const i = buf.indexOf(delimiter);
        if (i < 0) {
          if (buf.length > delimiter.length) buf = buf.subarray(buf.length - delimiter.length);
          return false;
        }
        buf = buf.subarray(i + delimiter.length);
        state = "after-delim";
        return true;
      }
      case "after-delim": {
        if (buf.length < 2) return false;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = "done";
          return false;
        }
        const eol = buf.indexOf("\r\n");
        if (eol < 0) {
          if (buf.length > 256) throw new MultipartError("malformed boundary line");
          return false;
        }
        buf = buf.subarray(eol + 2); // transport padding before CRLF is allowed
        state = "headers";
        return true;
      }
      case "headers": {
        const end = buf.indexOf(CRLF2);
        if (end < 0) {
          if (buf.length > MAX_HEADER_BYTES) throw new MultipartError("part headers too large");
          return false;
        }
        await h.onPartStart(parseHeaders(buf.subarray(0, end).toString("utf8")));
        buf = buf.subarray(end + 4);
        state = "body";
        return true;
      }
      case "body": {
        const i = buf.indexOf(delimiter);
        if (i >= 0) {
          if (i > 0) await h.onPartData(buf.subarray(0, i));
          await h.onPartEnd();
          buf = buf.subarray(i + delimiter.length);
          state = "after-delim";
          return true;
        }
        // Everything except a possible partial delimiter at the end is part data.
        const safe = buf.length - (delimiter.length - 1);
        if (safe > 0) {
          await h.onPartData(buf.subarray(0, safe));
          buf = buf.subarray(safe);
        }
        return false;
      }
      default:
        return false;
    }
  };

  try {
    const finished = () => state === "done";
    while (!finished()) {
      while (await step()) {}
      if (finished()) break;
      if (ended) throw new MultipartError("the multipart body ended before its closing boundary");
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        continue;
      }
      // A view, not a copy: a stream hands each chunk over to its reader.
      const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
      if (buf.length === 0) buf = chunk;
      else if (state === "body" && buf.length < delimiter.length && chunk.length >= delimiter.length) {
        // The leftover is only a possible delimiter prefix. Check the junction alone instead of
        // concatenating: copying every chunk of a multi-gigabyte file is what makes memory grow.
        const junction = Buffer.concat([buf, chunk.subarray(0, delimiter.length)]);
        const at = junction.indexOf(delimiter);
        if (at >= 0 && at < buf.length) buf = Buffer.concat([buf, chunk]);
        else {
          await h.onPartData(buf);
          buf = chunk;
        }
      } else buf = Buffer.concat([buf, chunk]);
    }
  } finally {
    // Stopped early (an error, a limit): the unread rest is the server's to discard. Cancelling it
    // made Bun.serve drop the answer when the client then half-closed (serve-options.ts).
    if (!ended) reader.releaseLock();
  }
}
