import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { RateGroup } from "../config/config.ts";
import type { Access } from "../auth/schema.ts";
import { authorize } from "./auth.ts";
import { bodyGuard } from "./body-guard.ts";
import { rateLimit } from "./rate-limit.ts";
import { errorSchema, validationErrorSchema } from "./envelope.ts";
import type { HttpDeps } from "./deps.ts";
import type { AppEnv } from "./types.ts";

export interface RouteSpec extends Omit<RouteConfig, "middleware"> {
  /** Who may call it; enforced by `authorize`, documented in the OpenAPI `security`. */
  access: Access;
  rateGroup?: RateGroup;
  /** Body cap in bytes; `"stream"` leaves the body unread for routes that stream it themselves. */
  maxBody?: number | "stream";
}

const jsonError = (description: string, schema = errorSchema) => ({ description, content: { "application/json": { schema } } });

/**
 * Builds an OpenAPI route whose middleware chain is always, in order: authentication +
 * permission, rate limit, body cap. Validation (from the same zod schemas that generate the
 * document) runs after these, so an anonymous caller gets 401, not 422.
 */
export function defineRoute<R extends RouteSpec>(deps: HttpDeps, spec: R) {
  const { access, rateGroup, maxBody, ...route } = spec;
  const middleware: MiddlewareHandler<AppEnv>[] = [authorize(deps.auth, access)];
  if (rateGroup) middleware.push(rateLimit(deps.limiter, rateGroup));
  if (maxBody !== "stream") middleware.push(bodyGuard(maxBody ?? deps.config.maxJsonBytes));
  const responses: RouteConfig["responses"] = { ...route.responses };
  responses[422] ??= { description: "Validation error", content: { "application/json": { schema: validationErrorSchema } } };
  if (access !== "public") {
    responses[401] ??= jsonError("Missing, invalid or revoked credential (UNAUTHORIZED, INVALID_API_KEY, SESSION_EXPIRED)");
    responses[403] ??= jsonError("Credential lacks the permission (FORBIDDEN)");
  }
  if (rateGroup) responses[429] ??= jsonError("Rate limit exceeded (RATE_LIMIT_EXCEEDED); see Retry-After");
  if (route.method !== "get") responses[507] ??= jsonError("The server's disk is full (INSUFFICIENT_STORAGE); nothing was written");
  return createRoute({
    ...route,
    responses,
    security: access === "public" ? [] : access === "admin_session" ? [{ sessionToken: [] }] : [{ apiKey: [] }, { sessionToken: [] }],
    middleware,
  } as unknown as RouteConfig) as unknown as Omit<R, "access" | "rateGroup" | "maxBody"> & { middleware: MiddlewareHandler<AppEnv>[] };
}

export { jsonError };
