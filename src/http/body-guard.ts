import { concatBytes } from "../core/bytes.ts";
import type { MiddlewareHandler } from "hono";
import { AppError, ValidationError } from "../core/errors.ts";
import type { AppEnv } from "./types.ts";

/** Reads at most `limit` bytes of a request body; past that, 413 without reading the rest. */
export async function readBodyCapped(req: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/**
 * No request body of this API nests deeper than a few levels. Tens of thousands of levels made
 * the parse, the validation and the 422's `input` echo cost ~0.5 s of event loop each and
 * overflowed the stack (a 500); the depth is measured on the text before any of that runs.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Nesting depth of JSON text, stopping as soon as it passes `stopAt`: one pass over char codes,
 * strings skipped (with their escapes). Malformed text is left to JSON.parse to reject.
 */
export function jsonDepth(text: string, stopAt = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped char
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return max;
}

const tooLarge = (limit: number) => new AppError(413, "PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`);
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Buffers a non-streaming body with a size cap and, for JSON, rejects bytes that are not UTF-8
 * (a lenient decoder would silently turn them into U+FFFD and store garbage). The validated
 * bytes are put in Hono's body cache so validators parse them without reading the stream again.
 */
export function bodyGuard(limit: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const bytes = await readBodyCapped(c.req.raw, limit);
    const ct = (c.req.header("content-type") ?? "").toLowerCase();
    if (/^application\/([\w.-]+\+)?json/.test(ct) || ct.startsWith("application/x-www-form-urlencoded")) {
      let text: string;
      try {
        text = utf8.decode(bytes);
      } catch {
        throw new ValidationError([{ loc: ["body"], msg: "Request body is not valid UTF-8", type: "unicode_decode_error" }]);
      }
      if (ct.startsWith("application/") && ct.includes("json")) {
        const depth = jsonDepth(text, MAX_JSON_DEPTH);
        if (depth > MAX_JSON_DEPTH) {
          throw new ValidationError([
            { loc: ["body"], msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, type: "json_too_deep", ctx: { max_depth: MAX_JSON_DEPTH } },
          ]);
        }
      }
      (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
    }
    (c.req.bodyCache as Record<string, unknown>).arrayBuffer = Promise.resolve(bytes.buffer as ArrayBuffer);
    return next();
  };
}
