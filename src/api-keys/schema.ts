import { z } from "@hono/zod-openapi";
import { nameSchema } from "../accounts/schema.ts";

export const API_KEY_PREFIX = "vsk_";
/** `vsk_` + 40 base62 characters (SPEC §3). */
export const API_KEY_PATTERN = /^vsk_[0-9A-Za-z]{40}$/;

export const apiKeySchema = z
  .object({
    id: z.string().openapi({ example: "key_4f0c2b7d9a1e3c5b7d9a" }),
    user_id: z.string().openapi({ description: "Owning account" }),
    name: z.string(),
    prefix: z.string().openapi({ description: "First 12 characters of the key", example: "vsk_AbCdEfGh" }),
    permissions: z.enum(["all", "read_only"]),
    last_used_at: z.string().nullable(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .openapi("ApiKey");

export const createdApiKeySchema = apiKeySchema
  .extend({ key: z.string().openapi({ description: "The secret. Shown only in this response." }) })
  .openapi("CreatedApiKey");

export const createApiKeyInput = z
  .object({ name: nameSchema, permissions: z.enum(["all", "read_only"]).default("all") })
  .strict();

export type ApiKey = z.infer<typeof apiKeySchema>;
