import { z } from "@hono/zod-openapi";
import { nameSchema } from "../accounts/schema.ts";

export const collectionSchema = z
  .object({
    id: z.string().openapi({ example: "col_8Hq2mZ0aP4xR7tY1uW3e" }),
    user_id: z.string().openapi({ description: "Owning account" }),
    name: z.string().openapi({ example: "Trailers" }),
    created_at: z.string(),
    video_count: z.number().int(),
    thumbnail_urls: z.array(z.string()).openapi({ description: "Up to 4 presigned poster URLs" }),
  })
  .openapi("Collection");

export const collectionDetailSchema = collectionSchema
  .extend({
    total_duration_secs: z.number(),
    storage_bytes: z.number().int(),
  })
  .openapi("CollectionDetail");

export const collectionInputSchema = z.object({ name: nameSchema.openapi({ example: "Trailers" }) }).strict();

export type Collection = z.infer<typeof collectionSchema>;
export type CollectionDetail = z.infer<typeof collectionDetailSchema>;
