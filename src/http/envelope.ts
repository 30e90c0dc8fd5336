import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./types.ts";

export interface MetaExtra {
  total?: number | null;
  page?: number | null;
  per_page?: number | null;
  facets?: Record<string, Record<string, number>> | null;
}

export const metaSchema = z
  .object({
    request_id: z.string(),
    took_ms: z.number(),
    total: z.number().int().nullable().optional(),
    page: z.number().int().nullable().optional(),
    per_page: z.number().int().nullable().optional(),
    facets: z.record(z.string(), z.record(z.string(), z.number().int())).nullable().optional(),
  })
  .openapi("Meta");

/** `{data, meta}` response schema for the OpenAPI document. */
export const envelopeOf = <T extends z.ZodType>(data: T) => z.object({ data, meta: metaSchema });

export const tookMs = (c: Context<AppEnv>): number => Math.round((performance.now() - c.get("startedAt")) * 100) / 100;

/** The success envelope of SPEC §2. */
export function ok<T>(c: Context<AppEnv>, data: T): ReturnType<typeof envelopeJson<T, 200>>;
export function ok<T, S extends ContentfulStatusCode>(
  c: Context<AppEnv>,
  data: T,
  status: S,
  meta?: MetaExtra,
): ReturnType<typeof envelopeJson<T, S>>;
export function ok<T>(c: Context<AppEnv>, data: T, status: ContentfulStatusCode = 200, meta: MetaExtra = {}) {
  return envelopeJson(c, data, status, meta);
}

function envelopeJson<T, S extends ContentfulStatusCode>(c: Context<AppEnv>, data: T, status: S, meta: MetaExtra) {
  return c.json({ data, meta: { request_id: c.get("requestId"), took_ms: tookMs(c), ...meta } }, status);
}

export const validationErrorSchema = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])),
        msg: z.string(),
        type: z.string(),
        input: z.any().optional(),
        ctx: z.record(z.string(), z.any()).optional(),
      }),
    ),
  })
  .openapi("HTTPValidationError");

export const errorSchema = z
  .object({ detail: z.object({ code: z.string().openapi({ example: "NOT_FOUND" }), message: z.string() }) })
  .openapi("Error");
