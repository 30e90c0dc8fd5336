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

/**
 * Lingering close of an early answer (nginx's `lingering_close`). A client still sending its body
 * when the answer comes (a 413 over the upload limit, a 401 on an upload, any error) must be able
 * to read that answer: a server that closes over unread bytes sends a reset, and the client's
 * stack then throws away the answer it had not read yet ("broken pipe", 0 bytes).
 *
 * What Bun.serve (1.4) does, measured with raw sockets (test/security/early-answer.test.ts): once
 * the answer is sent it reads and discards the rest of the body itself, in native code, however
 * long it is — a client declaring 10 GB was read to the end; JavaScript sees none of those bytes
 * (the body stream reports its end). Two things are left to the app:
 * - never cancel a body it stops reading (body-guard.ts, upload/multipart-stream.ts release it):
 *   after a cancel, a client that half-closes once it has sent everything got the connection
 *   closed with 0 bytes of the answer (6 of 6 tries on a bare Bun.serve, 6 of 20 through the app);
 * - bound the discarding: `server.timeout(req, EARLY_ANSWER_LINGER_SECS)` on an error answer to a
 *   request with a body closes the connection if the body has not ended by then. Bun counts
 *   socket timeouts in 4 s ticks (uSockets: ⌈secs / 4⌉ ticks from the current one), so 8 means
 *   "after 4 to 8 s" — a client always has more than 4 s to finish; the discarded bytes do not
 *   restart the timer. A body that ends in time leaves a normal keep-alive connection: the next
 *   request resets the timeout.
 * The bound is in seconds only: the bytes Bun discards never reach JavaScript to be counted (on
 * loopback here it discarded 0.3–1.2 GB/s; over a network, what the link carries in those seconds).
 */
export const EARLY_ANSWER_LINGER_SECS = 8;

const declaresBody = (req: Request) =>
  req.headers.has("transfer-encoding") || Number(req.headers.get("content-length") ?? 0) > 0;

export function bunServeOptions(app: FetchHandler, config: Pick<Config, "host" | "port" | "maxUploadBytes">) {
  return {
    hostname: config.host,
    port: config.port,
    fetch: async (req: Request, server: Bun.Server<unknown>) => {
      if (!req.url.startsWith("http")) return badHost();
      const res = await app.fetch(req, server);
      if (res.status >= 400 && declaresBody(req)) server.timeout(req, EARLY_ANSWER_LINGER_SECS);
      return res;
    },
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
  return errorJson("BAD_REQUEST", "Missing or invalid Host header", {
    "X-Request-Id": newId("req"),
    "X-Content-Type-Options": "nosniff",
  });
}
