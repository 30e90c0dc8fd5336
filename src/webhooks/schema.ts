import { z } from "@hono/zod-openapi";
import { EVENT_TYPES } from "../events/schema.ts";

export const webhookSchema = z
  .object({
    id: z.string().openapi({ example: "wh_9sKq2LmN4pR6tV8xZ0bC" }),
    user_id: z.string().openapi({ description: "Owning account" }),
    url: z.string(),
    events: z.array(z.enum(EVENT_TYPES)),
    is_active: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Webhook");

export const createdWebhookSchema = webhookSchema
  .extend({ secret: z.string().openapi({ description: "`whsec_…` signing secret. Shown only in this response." }) })
  .openapi("CreatedWebhook");

const eventsField = z
  .array(z.enum(EVENT_TYPES))
  .min(1, "subscribe to at least one event")
  .max(EVENT_TYPES.length)
  .refine((a) => new Set(a).size === a.length, { message: "events must not repeat" });
const urlField = z.string().trim().min(1).max(2048).openapi({ example: "https://hooks.example.com/vsearch" });

export const createWebhookInput = z.object({ url: urlField, events: eventsField }).strict();
export const updateWebhookInput = z
  .object({ url: urlField.optional(), events: eventsField.optional(), is_active: z.boolean().optional() })
  .strict()
  .refine((o) => Object.keys(o).length > 0, { message: "send at least one of url, events, is_active" })
  .openapi({ minProperties: 1 });

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed"] as const;

export const deliverySchema = z
  .object({
    id: z.string().openapi({ example: "del_3hJ5kL7mN9pQ1rS3tU5v" }),
    webhook_id: z.string(),
    event_id: z.string(),
    event: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    response_status: z.number().int().nullable(),
    response_excerpt: z.string().nullable(),
    error: z.string().nullable(),
    next_attempt_at: z.string().nullable(),
    created_at: z.string(),
    delivered_at: z.string().nullable(),
  })
  .openapi("WebhookDelivery");

export type Webhook = z.infer<typeof webhookSchema>;
export type Delivery = z.infer<typeof deliverySchema>;
