import type { Config } from "../config/config.ts";
import { newId } from "../core/ids.ts";
import { errorJson } from "./errors.ts";

/** Multipart framing on top of the largest allowed upload. */
export const BODY_OVERHEAD_BYTES = 1024 * 1024;

/**
 * The Bun.serve options of `vsearch serve`, shared with the tests that start a real server so
 * they exercise exactly this wiring.
 *
 * `maxRequestBodySize` is far above the upload limit on purpose: Bun answers a declared
 * Content-Length over it with a bare 413 (empty body, no request id) before the app sees the
 * request. The app enforces every limit itself, in the documented error shape — the upload
 * stream and the body guard count bytes as they arrive; `declaredBodyGuard` in http/app.ts
 * refuses an oversized Content-Length up front.
 *
 * The server is passed to `fetch` as Hono's env so the socket peer address (`requestIP`) reaches
 * the rate limiter (http/client-address.ts).
 */
/** What the server hands requests to (the app built by createApp; a structural type, so the kit does not import the root). */
export interface FetchHandler {
  fetch(req: Request, server?: unknown): Response | Promise<Response>;
}

export function bunServeOptions(app: FetchHandler, config: Pick<Config, "host" | "port" | "maxUploadBytes">) {
  return {
    hostname: config.host,
    port: config.port,
    fetch: (req: Request, server: Bun.Server<unknown>) =>
      req.url.startsWith("http") ? app.fetch(req, server) : badHost(),
    maxRequestBodySize: Math.max(config.maxUploadBytes + BODY_OVERHEAD_BYTES, 2 ** 52),
    idleTimeout: 255,
    development: false,
  };
}

/**
 * Bun hands over a relative `req.url` when the Host header is missing (HTTP/1.0) or not a valid
 * authority; no URL can be built from it and routing would misread the path. HTTP/1.1 requires a
 * valid Host (RFC 9112 §3.2), so such a request is a 400 in the documented shape.
 */
function badHost(): Response {
  return errorJson("BAD_REQUEST", "Missing or invalid Host header", { "X-Request-Id": newId("req") });
}
