import { concatBytes } from "../core/bytes.ts";
import type { MiddlewareHandler } from "hono";
import { AppError, ValidationError } from "../core/errors.ts";
import { JsonShapeMeter, MAX_FORM_FIELDS, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../core/json-shape.ts";
import type { AppEnv } from "./types.ts";

/**
 * Reads at most `limit` bytes of a request body; past that, 413 without reading the rest. With a
 * `meter`, each chunk is measured as it arrives and reading stops once the meter is over a limit
 * (the caller answers from the meter; the bytes returned are then incomplete): a deep body is
 * refused after its first chunk, not after its whole 1 MiB. The rest is left to the server, never
 * cancelled: after a cancelled body Bun.serve drops the answer when the client half-closes (see
 * EARLY_ANSWER_LINGER_SECS in serve-options.ts).
 */
export async function readBodyCapped(req: Request, limit: number, meter?: JsonShapeMeter): Promise<Uint8Array> {
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
      reader.releaseLock();
      throw tooLarge(limit);
    }
    chunks.push(value);
    if (meter && !meter.feed(value)) {
      reader.releaseLock();
      break;
    }
  }
  return concatBytes(chunks);
}

// The shape limits and their one-pass measure live in core/ (the stdio MCP transport uses them too).
export {
  JsonShapeMeter,
  jsonDepth,
  jsonShape,
  MAX_FORM_FIELDS,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
} from "../core/json-shape.ts";

/** Fields of a urlencoded body (`&`-separated) or parts of a multipart one (boundary lines; `ct` as sent: boundaries are case-sensitive). */
function fieldCount(ct: string, text: string | null, bytes: Uint8Array): number {
  if (text !== null) {
    let n = 1;
    for (let i = text.indexOf("&"); i >= 0 && n <= MAX_FORM_FIELDS; i = text.indexOf("&", i + 1)) n++;
    return n;
  }
  const boundary = /;\s*boundary="?([^";]+)"?/i.exec(ct)?.[1];
  if (!boundary) return 0;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const marker = Buffer.from(`--${boundary}`);
  let n = 0;
  for (let i = buf.indexOf(marker); i >= 0 && n <= MAX_FORM_FIELDS + 1; i = buf.indexOf(marker, i + marker.length)) n++;
  return n - 1; // the closing delimiter is not a part
}

const tooMany = (msg: string, max: number) =>
  new ValidationError([{ loc: ["body"], msg, type: "too_many_fields", ctx: { max } }]);

const tooLarge = (limit: number) => new AppError("PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`);
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The 422 for JSON past the shape limits (the meter says which). */
function jsonShapeError(meter: JsonShapeMeter): ValidationError {
  if (meter.depth > MAX_JSON_DEPTH)
    return new ValidationError([
      {
        loc: ["body"],
        msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
        type: "json_too_deep",
        ctx: { max_depth: MAX_JSON_DEPTH },
      },
    ]);
  return tooMany(`JSON with more than ${MAX_JSON_VALUES} values`, MAX_JSON_VALUES);
}

/**
 * Buffers a non-streaming body with a size cap and, for JSON, rejects bytes that are not UTF-8
 * (a lenient decoder would silently turn them into U+FFFD and store garbage). The validated
 * bytes are put in Hono's body cache so validators parse them without reading the stream again.
 */
export function bodyGuard(limit: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const ct = (c.req.header("content-type") ?? "").toLowerCase();
    const json = /^application\/([\w.-]+\+)?json/.test(ct);
    // JSON is measured while it streams in: a body over the shape limits is refused before the rest is read.
    const meter = json ? new JsonShapeMeter(MAX_JSON_DEPTH, MAX_JSON_VALUES) : undefined;
    const bytes = await readBodyCapped(c.req.raw, limit, meter);
    if (meter?.over) throw jsonShapeError(meter);
    if (json || ct.startsWith("application/x-www-form-urlencoded")) {
      let text: string;
      try {
        text = utf8.decode(bytes);
      } catch {
        throw new ValidationError([
          { loc: ["body"], msg: "Request body is not valid UTF-8", type: "unicode_decode_error" },
        ]);
      }
      if (!json && fieldCount(ct, text, bytes) > MAX_FORM_FIELDS) {
        throw tooMany(`More than ${MAX_FORM_FIELDS} form fields`, MAX_FORM_FIELDS);
      }
      (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
    } else if (
      ct.startsWith("multipart/form-data") &&
      fieldCount(c.req.header("content-type") ?? "", null, bytes) > MAX_FORM_FIELDS
    ) {
      throw tooMany(`More than ${MAX_FORM_FIELDS} multipart parts`, MAX_FORM_FIELDS);
    }
    (c.req.bodyCache as Record<string, unknown>).arrayBuffer = Promise.resolve(bytes.buffer as ArrayBuffer);
    return next();
  };
}
