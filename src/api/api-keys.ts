import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, idParam, jsonBody, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { apiKeySchema, createApiKeyInput, createdApiKeySchema } from "../api-keys/schema.ts";

/** Key management: admin session tokens only (an API key, even an `all` one, gets 403). */
export function registerApiKeyRoutes(app: Api, deps: HttpDeps) {
  const keys = deps.services.apiKeys;
  const base = { tags: ["API keys"], access: "admin_session" as const, rateGroup: "api_keys" as const };

  app.openapi(
    defineRoute(deps, {
      ...base,
      method: "post",
      path: "/v1/api_keys",
      operationId: "createApiKey",
      summary: "Create an API key (the secret is in this response only)",
      request: { body: jsonBody(createApiKeyInput) },
      responses: {
        201: dataResponse("Created", createdApiKeySchema),
        402: jsonError("Plan's active-key limit reached (API_KEY_LIMIT_REACHED)"),
      },
    }),
    async (c) => ok(c, await keys.create(c.get("principal").accountId, c.req.valid("json")), 201),
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      method: "get",
      path: "/v1/api_keys",
      operationId: "listApiKeys",
      summary: "List every key of the account, revoked ones included, never with the secret",
      responses: { 200: dataResponse("Keys", z.array(apiKeySchema)) },
    }),
    async (c) => {
      const items = await keys.list(c.get("principal").accountId);
      return ok(c, items, 200, { total: items.length });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      method: "delete",
      path: "/v1/api_keys/{key_id}",
      operationId: "revokeApiKey",
      summary: "Revoke a key: immediate and permanent; it stays listed",
      request: { params: idParam("key_id", "key_4f0c2b7d9a1e3c5b7d9a") },
      responses: {
        204: { description: "Revoked" },
        404: jsonError("No such key in this account (API_KEY_NOT_FOUND)"),
        409: jsonError("Already revoked (API_KEY_ALREADY_REVOKED)"),
      },
    }),
    async (c) => {
      await keys.revoke(c.get("principal").accountId, c.req.valid("param").key_id);
      return c.body(null, 204);
    },
  );
}
