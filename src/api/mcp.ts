import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { buildMcpServer } from "../agent/mcp-server.ts";
import { AppError } from "../core/errors.ts";
import { z } from "@hono/zod-openapi";
import { readBodyCapped } from "../http/body-guard.ts";
import { defineRoute, jsonBody } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { principalKey } from "../http/rate-limit.ts";
import { VERSION } from "../version.ts";

/**
 * MCP over streamable HTTP at /v1/mcp (SPEC §9), with the SDK's Web-standard transport (Bun serves
 * Request/Response). Stateless: each POST gets its own server + transport with JSON responses, so
 * there are no sessions to keep, expire or share between processes; the Bearer key is checked on
 * every request. GET (a server-initiated stream) and DELETE (ending a session) have nothing to
 * do in this mode: 405, which the SDK's client expects.
 *
 * Rate limit (group `agent`, shared with /v1/agent/call): each tools/call counts one; the
 * handshake and tools/list are free. Over the limit the call is a tool error
 * RATE_LIMIT_EXCEEDED the agent can read, and the HTTP response carries Retry-After.
 */
export function registerMcpRoutes(app: Api, deps: HttpDeps) {
  const toolbox = deps.services.agent;

  app.on(["GET", "DELETE"], "/v1/mcp", (c) =>
    c.json(
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32000, message: "Method not allowed: this server is stateless; POST JSON-RPC messages" },
      },
      405,
      { Allow: "POST" },
    ),
  );

  const route = defineRoute(deps, {
    method: "post",
    path: "/v1/mcp",
    operationId: "mcp",
    tags: ["Agent tools"],
    summary: "Model Context Protocol (streamable HTTP, stateless)",
    description:
      "JSON-RPC 2.0 messages of MCP (initialize, tools/list, tools/call) with the agent tools of /v1/agent/schema.json. Stateless: no Mcp-Session-Id; answers are JSON. Tool failures (404, 422, 429 …) are tool results with isError and the text `CODE (status): message`; each tools/call counts against the `agent` rate group shared with /v1/agent/call, and over it the response carries Retry-After. See docs/AGENTS.md.",
    access: "read_only",
    maxBody: "stream",
    request: {
      body: jsonBody(
        z
          .object({
            jsonrpc: z.literal("2.0"),
            method: z.string(),
            id: z.union([z.string(), z.number()]).optional(),
            params: z.record(z.string(), z.unknown()).optional(),
          })
          .passthrough(),
      ),
    },
    responses: {
      200: {
        description: "The JSON-RPC response (or 202 for a notification)",
        content: { "application/json": { schema: z.record(z.string(), z.unknown()) } },
      },
      400: { description: "Not JSON (JSON-RPC parse error)" },
      406: { description: "Accept must list application/json and text/event-stream (MCP streamable HTTP)" },
    },
  });
  // Registered with plain Hono: the SDK's transport validates JSON-RPC itself and answers in its terms.
  const { middleware, ...doc } = route;
  delete (doc.responses as Record<string, unknown>)[422]; // bad tool input is a tool result, not an HTTP 422
  (doc.responses as Record<string, unknown>)[413] = {
    description: "Body over 1 MiB (PAYLOAD_TOO_LARGE)",
    headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
  };
  app.openAPIRegistry.registerPath(doc as never);

  const [authorize] = middleware; // maxBody "stream" and no rate group: authentication only (the body is read capped below)
  app.post("/v1/mcp", authorize, async (c) => {
    const principal = c.get("principal");
    // The same counter as /v1/agent/call (per key; a session counts against its user).
    const who = principalKey(principal);
    const bytes = await readBodyCapped(c.req.raw, deps.config.maxJsonBytes);
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      return c.json(
        { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not JSON" } },
        400,
      );
    }

    let limitHeaders: Record<string, string> = {};
    const server = buildMcpServer(toolbox, {
      accountId: principal.accountId,
      version: VERSION,
      logger: c.get("log"),
      beforeCall: () => {
        const r = deps.limiter.hit("agent", who);
        limitHeaders = {
          "X-RateLimit-Limit": String(r.limit),
          "X-RateLimit-Remaining": String(r.remaining),
          "X-RateLimit-Reset": String(r.resetSecs),
        };
        if (!r.allowed) {
          limitHeaders["Retry-After"] = String(r.resetSecs);
          throw new AppError(
            "RATE_LIMIT_EXCEEDED",
            `Rate limit of ${r.limit} tool calls per minute exceeded; retry in ${r.resetSecs} s`,
          );
        }
      },
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const res = await transport.handleRequest(c.req.raw, { parsedBody: body });
      // The JSON answer is complete once handleRequest resolves; copy it so headers can be added.
      const out = new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
      for (const [k, v] of Object.entries(limitHeaders)) out.headers.set(k, v);
      return out;
    } finally {
      await transport.close().catch(() => {});
      await server.close().catch(() => {});
    }
  });
}
