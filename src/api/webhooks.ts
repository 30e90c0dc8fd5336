import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, idParam, jsonBody, jsonError, ok, pageQuery } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import {
  createdWebhookSchema,
  createWebhookInput,
  deliverySchema,
  updateWebhookInput,
  webhookSchema,
} from "../webhooks/schema.ts";

const webhookId = idParam("webhook_id", "wh_9sKq2LmN4pR6tV8xZ0bC");
const notFound = { 404: jsonError("No such webhook in this account (WEBHOOK_NOT_FOUND)") };

/** Webhook management: writes need an `all` credential; listing is a read (SPEC §3). */
export function registerWebhookRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.webhooks;
  const read = { tags: ["Webhooks"], access: "read_only" as const, rateGroup: "webhooks" as const };
  const write = { tags: ["Webhooks"], access: "all" as const, rateGroup: "webhooks" as const };
  const account = (c: { get(k: "principal"): { accountId: string } }) => c.get("principal").accountId;

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "post",
      path: "/v1/webhooks",
      operationId: "createWebhook",
      summary: "Register an endpoint (the signing secret is in this response only)",
      request: { body: jsonBody(createWebhookInput) },
      responses: {
        201: dataResponse("Created", createdWebhookSchema),
        402: jsonError("Plan's active-endpoint limit reached (WEBHOOK_LIMIT_REACHED)"),
      },
    }),
    async (c) => ok(c, await svc.create(account(c), c.req.valid("json")), 201),
  );

  app.openapi(
    defineRoute(deps, {
      ...read,
      method: "get",
      path: "/v1/webhooks",
      operationId: "listWebhooks",
      summary: "List the account's endpoints (never with secrets)",
      responses: { 200: dataResponse("Endpoints", z.array(webhookSchema)) },
    }),
    async (c) => {
      const items = await svc.list(account(c));
      return ok(c, items, 200, { total: items.length });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...read,
      method: "get",
      path: "/v1/webhooks/{webhook_id}",
      operationId: "getWebhook",
      summary: "Get an endpoint",
      request: { params: webhookId },
      responses: { 200: dataResponse("Endpoint", webhookSchema), ...notFound },
    }),
    async (c) => ok(c, await svc.get(account(c), c.req.valid("param").webhook_id)),
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "patch",
      path: "/v1/webhooks/{webhook_id}",
      operationId: "updateWebhook",
      summary: "Update url, events or is_active",
      request: { params: webhookId, body: jsonBody(updateWebhookInput) },
      responses: {
        200: dataResponse("Updated", webhookSchema),
        402: jsonError("Re-activation would exceed the plan's limit (WEBHOOK_LIMIT_REACHED)"),
        ...notFound,
      },
    }),
    async (c) => ok(c, await svc.update(account(c), c.req.valid("param").webhook_id, c.req.valid("json"))),
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "delete",
      path: "/v1/webhooks/{webhook_id}",
      operationId: "deleteWebhook",
      summary: "Delete an endpoint and its delivery history",
      request: { params: webhookId },
      responses: { 204: { description: "Deleted" }, ...notFound },
    }),
    async (c) => {
      await svc.delete(account(c), c.req.valid("param").webhook_id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "post",
      path: "/v1/webhooks/{webhook_id}/test",
      operationId: "testWebhook",
      summary: "Send a `webhook.ping` through the normal signing and delivery path",
      request: { params: webhookId },
      responses: {
        202: dataResponse("Queued", z.object({ event_id: z.string(), webhook_id: z.string() })),
        409: jsonError("The endpoint is inactive (WEBHOOK_INACTIVE)"),
        ...notFound,
      },
    }),
    async (c) => ok(c, await svc.ping(account(c), c.req.valid("param").webhook_id), 202),
  );

  app.openapi(
    defineRoute(deps, {
      ...read,
      method: "get",
      path: "/v1/webhooks/{webhook_id}/deliveries",
      operationId: "listWebhookDeliveries",
      summary: "Delivery history, newest first",
      request: { params: webhookId, query: pageQuery(100, 20) },
      responses: { 200: dataResponse("Deliveries", z.array(deliverySchema)), ...notFound },
    }),
    async (c) => {
      const { page, per_page } = c.req.valid("query");
      const { items, total } = await svc.deliveries(account(c), c.req.valid("param").webhook_id, {
        page,
        perPage: per_page,
      });
      return ok(c, items, 200, { total, page, per_page });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "post",
      path: "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
      operationId: "retryWebhookDelivery",
      summary: "Redeliver a failed delivery now (one attempt)",
      request: {
        params: z.object({
          webhook_id: z
            .string()
            .min(1)
            .max(64)
            .openapi({ param: { name: "webhook_id", in: "path" } }),
          delivery_id: z
            .string()
            .min(1)
            .max(64)
            .openapi({ param: { name: "delivery_id", in: "path" } }),
        }),
      },
      responses: {
        202: dataResponse("Queued", deliverySchema),
        404: jsonError("No such webhook or delivery (WEBHOOK_NOT_FOUND, DELIVERY_NOT_FOUND)"),
        409: jsonError(
          "Only failed deliveries can be retried (DELIVERY_NOT_FAILED); the endpoint is inactive (WEBHOOK_INACTIVE)",
        ),
      },
    }),
    async (c) => {
      const p = c.req.valid("param");
      return ok(c, await svc.retry(account(c), p.webhook_id, p.delivery_id), 202);
    },
  );
}
