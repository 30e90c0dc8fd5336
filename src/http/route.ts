import { createRoute, type RouteConfig, type z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { RateGroup } from "../config/config.ts";
import { ERROR_CODES, type ErrorCode, isErrorCode, statusOf } from "../core/error-codes.ts";
import type { Access } from "../auth/schema.ts";
import { authorize } from "./auth.ts";
import { bodyGuard } from "./body-guard.ts";
import { rateLimit } from "./rate-limit.ts";
import { envelopeOf, errorSchema, validationErrorSchema } from "./envelope.ts";
import type { HttpDeps } from "./deps.ts";
import type { AppEnv } from "./types.ts";

export interface RouteSpec extends Omit<RouteConfig, "middleware"> {
  /** Stable and unique: generated clients name their methods after it. */
  operationId: string;
  /** Who may call it; enforced by `authorize`, documented in the OpenAPI `security`. */
  access: Access;
  rateGroup?: RateGroup;
  /** Body cap in bytes; `"stream"` leaves the body unread for routes that stream it themselves. */
  maxBody?: number | "stream";
  /**
   * Catalogue codes the handler can answer (src/core/error-codes.ts). Each is documented under its
   * status: in a response written here when there is none for that status (its description lists
   * the codes and their meanings), and in every error response's `x-error-codes`. The codes of the
   * answers `defineRoute` adds itself (401, 403, 413, 429, 500, 507) need not be listed.
   */
  errors?: readonly ErrorCode[];
  /** Open to a session signed in with a one-time password (whoami, sign-out, choosing a new password). */
  beforePasswordChange?: boolean;
}

const jsonError = (description: string, schema = errorSchema) => ({
  description,
  content: { "application/json": { schema } },
});

/** A success answer: `schema` as the `data` of the `{data, meta}` envelope. */
export const dataResponse = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { "application/json": { schema: envelopeOf(schema) } },
});

/** A required JSON request body. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true as const,
  content: { "application/json": { schema } },
});

/** Response headers, as `#/components/headers/…` (registered once in api/app.ts: `RESPONSE_HEADERS`). */
const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
export const RESPONSE_HEADERS = {
  RequestId: {
    description:
      "The caller's X-Request-Id when it is 1–128 of [A-Za-z0-9._:-], else a new `req_…` id (also `meta.request_id`)",
    schema: { type: "string" },
  },
  RateLimitLimit: {
    description: "Requests allowed per minute for this credential and route group",
    schema: { type: "integer" },
  },
  RateLimitRemaining: { description: "Requests left in the current window", schema: { type: "integer" } },
  RateLimitReset: { description: "Seconds until the window resets", schema: { type: "integer" } },
  RetryAfter: { description: "Seconds to wait before retrying", schema: { type: "integer" } },
} as const;

/** X-RateLimit-* as header refs, for a route that counts requests itself (sign-in). */
export const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": ref("RateLimitLimit"),
  "X-RateLimit-Remaining": ref("RateLimitRemaining"),
  "X-RateLimit-Reset": ref("RateLimitReset"),
};

/** Retry-After as a header ref, for a 503 that says when to come back (search while its index loads). */
export const RETRY_AFTER_HEADER = { "Retry-After": ref("RetryAfter") };

/** Which headers a response of `status` carries, given the route's limiter. */
function headersFor(status: string, limited: boolean): Record<string, { $ref: string }> {
  const h: Record<string, { $ref: string }> = { "X-Request-Id": ref("RequestId") };
  // 401/403 are answered before the limiter runs, so they carry no rate headers.
  if (limited && status !== "401" && status !== "403") {
    Object.assign(h, RATE_LIMIT_HEADERS);
  }
  if (status === "429") h["Retry-After"] = ref("RetryAfter");
  return h;
}

/** Declared codes grouped by their catalogue status, in the order given. */
function byStatus(codes: readonly ErrorCode[]): Map<number, ErrorCode[]> {
  const m = new Map<number, ErrorCode[]>();
  for (const c of codes) m.set(statusOf(c), [...(m.get(statusOf(c)) ?? []), c]);
  return m;
}

/**
 * A response's codes: those its (hand-written) description names, then the declared ones of its
 * status, each once. A named code of another status is not listed here; the architecture test
 * (test/architecture/error-codes.test.ts) fails on it instead.
 */
export function errorCodesOf(status: number, description: string, declared: readonly ErrorCode[]): ErrorCode[] {
  const tokens: string[] = description.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b/g) ?? [];
  const named = tokens.filter(isErrorCode);
  const all = [...named, ...declared].filter((c) => statusOf(c) === status);
  return [...new Set(all)];
}

/**
 * Builds an OpenAPI route whose middleware chain is always, in order: authentication +
 * permission, rate limit, body cap. Validation (from the same zod schemas that generate the
 * document) runs after these, so an anonymous caller gets 401, not 422.
 */
export function defineRoute<R extends RouteSpec>(deps: HttpDeps, spec: R) {
  const { access, rateGroup, maxBody, errors = [], beforePasswordChange, ...route } = spec;
  const middleware: MiddlewareHandler<AppEnv>[] = [authorize(deps.auth, access, { beforePasswordChange })];
  if (rateGroup) middleware.push(rateLimit(deps.limiter, rateGroup));
  if (maxBody !== "stream") middleware.push(bodyGuard(maxBody ?? deps.config.maxJsonBytes));
  const responses: RouteConfig["responses"] = { ...route.responses };
  for (const [status, codes] of byStatus(errors)) {
    responses[status] ??= jsonError(codes.map((c) => `${c}: ${ERROR_CODES[c].meaning}`).join(" "));
  }
  responses[422] ??= {
    description: "Validation error",
    content: { "application/json": { schema: validationErrorSchema } },
  };
  if (access !== "public") {
    responses[401] ??= jsonError(
      "Missing, invalid or revoked credential (UNAUTHORIZED, INVALID_API_KEY, SESSION_EXPIRED)",
    );
    responses[403] ??= jsonError(
      "Credential lacks the permission (FORBIDDEN), or the session signed in with a one-time password must change it first (PASSWORD_CHANGE_REQUIRED)",
    );
  }
  if (rateGroup) responses[429] ??= jsonError("Rate limit exceeded (RATE_LIMIT_EXCEEDED); see Retry-After");
  if (route.method !== "get")
    responses[507] ??= jsonError("The server's disk is full (INSUFFICIENT_STORAGE); nothing was written");
  // The body guard reads every body but GET/HEAD ones; a streamed route documents its own cap.
  if (maxBody !== "stream" && route.method !== "get" && route.method !== "head")
    responses[413] ??= jsonError("Body over the route's cap (PAYLOAD_TOO_LARGE)");
  responses[500] ??= jsonError("Unexpected error (INTERNAL_ERROR); the server log has it under the request id");
  for (const [status, r] of Object.entries(responses)) {
    if (r && !("$ref" in r)) {
      const codes = errorCodesOf(Number(status), r.description ?? "", errors);
      responses[status] = {
        ...r,
        headers: { ...headersFor(status, !!rateGroup), ...(r.headers as object | undefined) },
        ...(codes.length ? { "x-error-codes": codes } : {}),
      } as typeof r;
    }
  }
  return createRoute({
    ...route,
    responses,
    security:
      access === "public"
        ? []
        : access === "admin_session" || access === "session"
          ? [{ sessionToken: [] }]
          : [{ apiKey: [] }, { sessionToken: [] }],
    middleware,
  } as unknown as RouteConfig) as unknown as Omit<R, "access" | "rateGroup" | "maxBody" | "errors"> & {
    middleware: MiddlewareHandler<AppEnv>[];
  };
}

export { jsonError };
