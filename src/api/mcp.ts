import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { buildMcpServer } from "../agent/mcp-server.ts";
import { z } from "@hono/zod-openapi";
import { readBodyCapped } from "../http/body-guard.ts";
import { defineRoute, jsonBody, RETRY_AFTER_HEADER } from "../http/index.ts";
import { RATE_LIMIT_HEADERS } from "../http/route.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { principalKey, rateHeaders } from "../http/rate-limit.ts";
import { JsonShapeMeter, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../core/json-shape.ts";
import { VERSION } from "../version.ts";

/**
 * MCP over streamable HTTP at /v1/mcp (SPEC §9), with the SDK's Web-standard transport (Bun serves
 * Request/Response). Stateless: each POST gets its own server + transport with JSON responses, so
 * there are no sessions to keep, expire or share between processes; the Bearer key is checked on
 * every request. GET (a server-initiated stream) and DELETE (ending a session) have nothing to
 * do in this mode: 405, which the SDK's client expects.
 *
 * Bounded like every other route (SPEC §8): the 1 MiB body cap and the JSON depth and value
 * guards (answered as JSON-RPC errors, HTTP 400), batches of at most MAX_BATCH messages, every
 * JSON-RPC message counted against the key's `agent` limit (shared with /v1/agent/call; the
 * handshake and tools/list included), and each tools/call stopped after `agent_call_timeout_secs`
 * (a TIMEOUT tool error). Over the limit a tools/call is a tool error RATE_LIMIT_EXCEEDED the
 * agent can read, another request a JSON-RPC error, and the HTTP response carries Retry-After.
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
      "JSON-RPC 2.0 messages of MCP (initialize, tools/list, tools/call) with the agent tools of /v1/agent/schema.json. Stateless: no Mcp-Session-Id; answers are JSON. Tool failures (404, 422, 429, 504 …) are tool results with isError and the text `CODE (status): message`. Every JSON-RPC message (batches: each one; at most 10 a batch) counts against the `agent` rate group shared with /v1/agent/call; over it nothing runs, tools/call gets a RATE_LIMIT_EXCEEDED tool error, other requests a JSON-RPC error, and the response carries Retry-After. A tools/call runs at most agent_call_timeout_secs (TIMEOUT). See docs/AGENTS.md.",
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
      400: {
        description:
          "Not JSON (JSON-RPC -32700), or nested deeper than 32 levels, more than 10 000 values, or a batch of more than 10 messages (JSON-RPC -32600). A refused body spends one message of the agent limit.",
      },
      429: {
        description:
          "A body that would be refused (400) while the key's agent limit is spent: JSON-RPC -32000 RATE_LIMIT_EXCEEDED, with Retry-After",
      },
      406: { description: "Accept must list application/json and text/event-stream (MCP streamable HTTP)" },
    },
  });
  // Registered with plain Hono: the SDK's transport validates JSON-RPC itself and answers in its terms.
  const { middleware, ...doc } = route;
  delete (doc.responses as Record<string, unknown>)[422]; // bad tool input is a tool result, not an HTTP 422
  // Every answer carries the agent limit's counters; an answer over it also Retry-After.
  const answered = (doc.responses as Record<string, { headers?: Record<string, unknown> }>)[200];
  answered.headers = { ...answered.headers, ...RATE_LIMIT_HEADERS, ...RETRY_AFTER_HEADER };
  (doc.responses as Record<string, unknown>)[413] = {
    description: "Body over 1 MiB (PAYLOAD_TOO_LARGE)",
    headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
  };
  app.openAPIRegistry.registerPath(doc as never);

  const [authorize] = middleware; // maxBody "stream" and no rate group: authentication only (the body is read capped below)
  const callTimeoutMs = deps.config.agentCallTimeoutSecs * 1000;
  app.post("/v1/mcp", authorize, async (c) => {
    const principal = c.get("principal");
    // The same counter as /v1/agent/call (per key; a session counts against its user).
    const who = principalKey(principal);
    // A refused body spends one message of the key's minute like any other: a flood of bad bodies
    // meets 429 with Retry-After once the minute is spent, as a flood of good ones does.
    const refuse = async (code: number, message: string) => {
      const r = await deps.limiter.take("agent", who, 1);
      const headers: Record<string, string> = rateHeaders(r);
      if (r.allowed) return c.json({ jsonrpc: "2.0", id: null, error: { code, message } }, 400, headers);
      headers["Retry-After"] = String(r.resetSecs);
      const text = `RATE_LIMIT_EXCEEDED (429): Rate limit of ${r.limit} MCP messages per minute exceeded (each JSON-RPC message counts); retry in ${r.resetSecs} s`;
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: text } }, 429, headers);
    };
    // The shape guard every JSON route has (body-guard.ts), measured while the body streams in:
    // past a limit the rest is not read, decoded or parsed.
    const meter = new JsonShapeMeter(MAX_JSON_DEPTH, MAX_JSON_VALUES);
    const bytes = await readBodyCapped(c.req.raw, deps.config.maxJsonBytes, meter);
    if (meter.depth > MAX_JSON_DEPTH)
      return refuse(-32600, `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (meter.values > MAX_JSON_VALUES)
      return refuse(-32600, `Invalid Request: JSON with more than ${MAX_JSON_VALUES} values`);
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return refuse(-32700, "Parse error: the body is not UTF-8");
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return refuse(-32700, "Parse error: the body is not JSON");
    }
    const messages = Array.isArray(body) ? body : [body];
    if (Array.isArray(body) && body.length > MAX_BATCH)
      return refuse(
        -32600,
        `Invalid Request: a batch may hold at most ${MAX_BATCH} messages (this one has ${body.length})`,
      );

    // Every message counts against the key's agent limit, batches included (SPEC §8): all of a
    // batch or none of it. Over the limit nothing runs; each request is answered the way MCP
    // clients read (a tool error for tools/call, a JSON-RPC error otherwise), with Retry-After.
    const r = await deps.limiter.take("agent", who, Math.max(1, messages.length));
    const headers: Record<string, string> = rateHeaders(r);
    if (!r.allowed) {
      headers["Retry-After"] = String(r.resetSecs);
      const text = `RATE_LIMIT_EXCEEDED (429): Rate limit of ${r.limit} MCP messages per minute exceeded (each JSON-RPC message counts); retry in ${r.resetSecs} s`;
      const answers = messages
        .filter(isRequest)
        .map((m) =>
          m.method === "tools/call"
            ? { jsonrpc: "2.0", id: m.id, result: { isError: true, content: [{ type: "text", text }] } }
            : { jsonrpc: "2.0", id: m.id, error: { code: -32000, message: text } },
        );
      if (!answers.length) return c.body(null, 202, headers);
      return c.json(Array.isArray(body) ? answers : answers[0], 200, headers);
    }

    // The request ends (its tools' work is told to stop) when the client leaves; each tools/call
    // also has its own deadline (callTimeoutMs): the whole request is bounded by it.
    const server = buildMcpServer(toolbox, {
      accountId: principal.accountId,
      version: VERSION,
      logger: c.get("log"),
      callTimeoutMs,
      signal: c.req.raw.signal,
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
      for (const [k, v] of Object.entries(headers)) out.headers.set(k, v);
      return out;
    } finally {
      await transport.close().catch(() => {});
      await server.close().catch(() => {});
    }
  });
}

/**
 * Most messages in one JSON-RPC batch. MCP 2025-06-18 dropped batching, but clients of 2025-03-26
 * may still send one; each message costs a full dispatch (the SDK allows 100: ~0.9 s of event loop
 * for 100 tools/list), and every message counts against the agent limit anyway, so a batch larger
 * than a third of the default minute (30) is refused whole rather than half-served.
 */
export const MAX_BATCH = 10;

const isRequest = (m: unknown): m is { id: string | number; method: string } =>
  typeof m === "object" &&
  m !== null &&
  typeof (m as { method?: unknown }).method === "string" &&
  (typeof (m as { id?: unknown }).id === "string" || typeof (m as { id?: unknown }).id === "number");
