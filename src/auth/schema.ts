import { z } from "@hono/zod-openapi";

export type Permission = "all" | "read_only";

/** Who is calling. Every request that passes authentication carries one. */
export type Principal =
  | { kind: "api_key"; accountId: string; keyId: string; permissions: Permission }
  | { kind: "session"; accountId: string; sessionId: string; userId: string; role: "admin" | "member" };

/** Declared per route: what the caller must be. */
export type Access = "public" | "read_only" | "all" | "admin_session";

export const signInSchema = z
  .object({
    email: z.string().min(1).max(320).openapi({ example: "admin@example.com" }),
    password: z.string().min(1).max(1024),
  })
  .strict();

export const sessionSchema = z
  .object({ token: z.string().openapi({ description: "Session token; shown once." }), expires_at: z.string() })
  .openapi("Session");

export const SESSION_TOKEN_PREFIX = "vss_";
