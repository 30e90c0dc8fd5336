import { z } from "@hono/zod-openapi";

export type Permission = "all" | "read_only";

/** Who is calling. Every request that passes authentication carries one. */
export type Principal =
  | { kind: "api_key"; accountId: string; keyId: string; permissions: Permission }
  | {
      kind: "session";
      accountId: string;
      sessionId: string;
      userId: string;
      role: "admin" | "member";
      /** Signed in with a one-time password: may only change it (or sign out) until then. */
      mustChangePassword: boolean;
    };

/** Declared per route: what the caller must be. */
export type Access = "public" | "read_only" | "all" | "session" | "admin_session";

export const signInSchema = z
  .object({
    email: z.string().min(1).max(320).openapi({ example: "admin@example.com" }),
    password: z.string().min(1).max(1024),
  })
  .strict();

export const sessionSchema = z
  .object({
    token: z.string().openapi({ description: "Session token; shown once." }),
    expires_at: z.string(),
    must_change_password: z.boolean().openapi({
      description:
        "Signed in with a one-time password: until PUT /v1/auth/password sets a new one, every other route answers 403 PASSWORD_CHANGE_REQUIRED",
    }),
  })
  .openapi("Session");

export const SESSION_TOKEN_PREFIX = "vss_";
