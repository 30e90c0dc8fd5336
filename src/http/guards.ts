import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { Config } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import { ClientAddressResolver } from "./client-address.ts";
import { errorResponse } from "./errors.ts";
import { BODY_OVERHEAD_BYTES } from "./serve-options.ts";
import type { AppEnv } from "./types.ts";

/**
 * Request guards that apply to every route, before routing-specific middleware: who is calling
 * (client address), a declared body size no route could accept, and CORS.
 */

interface PeerServer {
  requestIP(req: Request): { address: string } | null;
}

/** Sets `clientAddress`: the socket peer, or the X-Forwarded-For hop the trusted proxies vouch for. */
export function clientAddress(trustedProxies: readonly string[]): MiddlewareHandler<AppEnv> {
  const resolver = new ClientAddressResolver(trustedProxies);
  return async (c, next) => {
    const server = c.env as PeerServer | undefined;
    const peer = typeof server?.requestIP === "function" ? server.requestIP(c.req.raw)?.address : null;
    c.set("clientAddress", resolver.resolve(peer, c.req.header("x-forwarded-for")));
    return next();
  };
}

/**
 * A declared Content-Length larger than any route accepts is refused before anything reads the
 * body, in the documented shape (Bun's own limit is set out of the way; see serve-options.ts).
 */
export function declaredBodyLimit(config: Pick<Config, "maxUploadBytes">): MiddlewareHandler<AppEnv> {
  const max = config.maxUploadBytes + BODY_OVERHEAD_BYTES;
  return async (c, next) => {
    const cl = c.req.header("content-length");
    if (cl && /^\d+$/.test(cl) && Number(cl) > max) {
      throw new AppError(
        "UPLOAD_TOO_LARGE",
        `The request body (${cl} bytes declared) exceeds the upload limit of ${config.maxUploadBytes} bytes`,
      );
    }
    return next();
  };
}

/** CORS for the origins the operator named; none (the default) means no CORS headers at all. */
export function corsFor(origins: readonly string[]): MiddlewareHandler<AppEnv> | null {
  if (!origins.length) return null;
  const allowed = new Set(origins);
  return cors({
    origin: (origin) => (allowed.has(origin) ? origin : null),
    allowMethods: ["GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"],
    allowHeaders: [
      "Authorization",
      "Content-Type",
      "X-Request-Id",
      "Range",
      "If-None-Match",
      "If-Range",
      "Idempotency-Key",
    ],
    exposeHeaders: [
      "X-Request-Id",
      "X-RateLimit-Limit",
      "X-RateLimit-Remaining",
      "X-RateLimit-Reset",
      "Retry-After",
      "Content-Range",
      "ETag",
      "Allow",
    ],
    maxAge: 600,
  }) as MiddlewareHandler<AppEnv>;
}

/**
 * 405 for a path that exists under other methods (SPEC §2: `METHOD_NOT_ALLOWED` + `Allow`).
 * Hono only knows "no handler"; the registered routes are compiled once into patterns.
 */
export function methodMatcher(routes: () => readonly { path: string; method: string }[]) {
  let compiled: { re: RegExp; method: string }[] | null = null;
  return (method: string, path: string): string[] | null => {
    compiled ??= routes()
      .filter((r) => r.method !== "ALL" && r.path !== "*" && r.path !== "/*")
      .map((r) => ({ re: patternOf(r.path), method: r.method.toUpperCase() }));
    const methods = new Set(compiled.filter((r) => r.re.test(path)).map((r) => r.method));
    if (!methods.size || methods.has(method.toUpperCase())) return null;
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };
}

function patternOf(path: string): RegExp {
  const body = path
    .split("/")
    .map((seg) => {
      if (seg === "*") return ".*";
      const m = /^:[A-Za-z0-9_]+(\{(.+)\})?(\?)?$/.exec(seg);
      if (m) return m[2] ? `(?:${m[2]})` : "[^/]+";
      return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return new RegExp(`^${body}/?$`);
}

export function methodNotAllowed(c: Context<AppEnv>, allow: string[]) {
  return errorResponse(c, "METHOD_NOT_ALLOWED", `${c.req.method} is not allowed here; use ${allow.join(", ")}`, {
    Allow: allow.join(", "),
  });
}
