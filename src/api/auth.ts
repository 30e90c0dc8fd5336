import { z } from "@hono/zod-openapi";
import { envelopeOf, jsonBody, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { defineRoute, RATE_LIMIT_HEADERS } from "../http/route.ts";
import { rateExceeded, rateHeaders } from "../http/rate-limit.ts";
import { AppError } from "../core/errors.ts";
import type { RateGroup } from "../config/config.ts";
import { sessionSchema, signInSchema } from "../auth/schema.ts";

export function registerAuthRoutes(app: Api, deps: HttpDeps) {
  const signIn = defineRoute(deps, {
    method: "post",
    path: "/v1/auth/sessions",
    operationId: "createSession",
    tags: ["Auth"],
    summary: "Sign in with e-mail and password; returns a session token (shown once)",
    access: "public",
    request: { body: jsonBody(signInSchema) },
    responses: {
      // The handler counts attempts itself (per address, per e-mail), so the rate headers are declared here.
      201: {
        description: "Signed in",
        headers: RATE_LIMIT_HEADERS,
        content: { "application/json": { schema: envelopeOf(sessionSchema) } },
      },
      401: { ...jsonError("Wrong e-mail or password (UNAUTHORIZED)"), headers: RATE_LIMIT_HEADERS },
      429: {
        ...jsonError(
          "Too many sign-in attempts for this e-mail or from this address (RATE_LIMIT_EXCEEDED); see Retry-After",
        ),
        headers: RATE_LIMIT_HEADERS,
      },
    },
  });
  app.openapi(signIn, async (c) => {
    const body = c.req.valid("json");
    const { limiter } = deps;
    const address = c.get("clientAddress");
    const email = body.email.trim().toLowerCase();
    // Every attempt counts against the address (spraying many e-mails, argon2 time); guesses
    // count per (address, e-mail) and per e-mail — counted before the slow verify so parallel
    // attempts cannot slip past, and taken back when the password was right.
    const perAddress = await limiter.take("auth_address", address, 1);
    if (!perAddress.allowed)
      throw rateExceeded(perAddress, `Too many sign-in attempts from this address; retry in ${perAddress.resetSecs} s`);
    const guesses: [RateGroup, string][] = [
      ["auth", `${address}\u0000${email}`],
      ["auth_email", email],
    ];
    let tightest = perAddress;
    for (const [group, who] of guesses) {
      const r = await limiter.take(group, who, 1);
      if (!r.allowed) throw rateExceeded(r, `Too many failed sign-ins for this e-mail; retry in ${r.resetSecs} s`);
      if (r.remaining < tightest.remaining) tightest = r;
    }
    // X-RateLimit-* on every answer (SPEC §8): the limit closest to running out.
    let session;
    try {
      session = await deps.auth.signIn(body);
    } catch (e) {
      if (e instanceof AppError) Object.assign(e.headers, rateHeaders(tightest));
      throw e;
    }
    for (const [group, who] of guesses) await limiter.refund(group, who);
    for (const [k, v] of Object.entries(rateHeaders(perAddress))) c.header(k, v);
    return ok(c, session, 201);
  });

  const signOut = defineRoute(deps, {
    method: "delete",
    path: "/v1/auth/sessions/current",
    operationId: "deleteCurrentSession",
    tags: ["Auth"],
    summary: "End the current session",
    access: "read_only",
    beforePasswordChange: true,
    responses: {
      204: { description: "Signed out" },
      400: jsonError("The credential is an API key, not a session (NOT_A_SESSION)"),
    },
  });
  app.openapi(signOut, async (c) => {
    await deps.auth.signOut(c.get("principal"));
    return c.body(null, 204);
  });

  const whoami = defineRoute(deps, {
    method: "get",
    path: "/v1/auth/whoami",
    operationId: "whoami",
    tags: ["Auth"],
    summary: "The account and credential of this request",
    access: "read_only",
    beforePasswordChange: true,
    responses: {
      200: {
        description: "Caller",
        content: {
          "application/json": {
            schema: envelopeOf(
              z
                .object({
                  user_id: z.string(),
                  credential: z.enum(["api_key", "session"]),
                  permissions: z.string(),
                  role: z.string().nullable(),
                  member_id: z
                    .string()
                    .nullable()
                    .openapi({ description: "The signed-in user (`mbr_…`); null for an API key" }),
                  email: z
                    .string()
                    .nullable()
                    .openapi({ description: "The signed-in user's e-mail; null for an API key" }),
                  must_change_password: z
                    .boolean()
                    .openapi({ description: "Signed in with a one-time password: choose a new one first" }),
                })
                .openapi("Whoami"),
            ),
          },
        },
      },
    },
  });
  app.openapi(whoami, async (c) => {
    const p = c.get("principal");
    const user = p.kind === "session" ? await deps.services.users.find(p.accountId, p.userId) : null;
    return ok(c, {
      user_id: p.accountId,
      credential: p.kind,
      permissions: p.kind === "api_key" ? p.permissions : "all",
      role: p.kind === "session" ? p.role : null,
      member_id: user?.id ?? null,
      email: user?.email ?? null,
      must_change_password: p.kind === "session" && p.mustChangePassword,
    });
  });
}
