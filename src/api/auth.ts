import { z } from "@hono/zod-openapi";
import { envelopeOf, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { defineRoute } from "../http/route.ts";
import { sessionSchema, signInSchema } from "../auth/schema.ts";

export function registerAuthRoutes(app: Api, deps: HttpDeps) {
  const signIn = defineRoute(deps, {
    method: "post",
    path: "/v1/auth/sessions",
    operationId: "createSession",
    tags: ["Auth"],
    summary: "Sign in with e-mail and password; returns a session token (shown once)",
    access: "public",
    rateGroup: "auth",
    request: { body: { required: true, content: { "application/json": { schema: signInSchema } } } },
    responses: {
      201: { description: "Signed in", content: { "application/json": { schema: envelopeOf(sessionSchema) } } },
      401: jsonError("Wrong e-mail or password (UNAUTHORIZED)"),
    },
  });
  app.openapi(signIn, async (c) => ok(c, await deps.auth.signIn(c.req.valid("json")), 201));

  const signOut = defineRoute(deps, {
    method: "delete",
    path: "/v1/auth/sessions/current",
    operationId: "deleteCurrentSession",
    tags: ["Auth"],
    summary: "End the current session",
    access: "read_only",
    responses: { 204: { description: "Signed out" }, 400: jsonError("The credential is an API key, not a session (NOT_A_SESSION)") },
  });
  app.openapi(signOut, (c) => {
    deps.auth.signOut(c.get("principal"));
    return c.body(null, 204);
  });

  const whoami = defineRoute(deps, {
    method: "get",
    path: "/v1/auth/whoami",
    operationId: "whoami",
    tags: ["Auth"],
    summary: "The account and credential of this request",
    access: "read_only",
    responses: {
      200: {
        description: "Caller",
        content: {
          "application/json": {
            schema: envelopeOf(z.object({ user_id: z.string(), credential: z.enum(["api_key", "session"]), permissions: z.string(), role: z.string().nullable() })),
          },
        },
      },
    },
  });
  app.openapi(whoami, (c) => {
    const p = c.get("principal");
    return ok(c, {
      user_id: p.accountId,
      credential: p.kind,
      permissions: p.kind === "api_key" ? p.permissions : "all",
      role: p.kind === "session" ? p.role : null,
    });
  });
}
