import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { buildMcpServer } from "../agent/mcp-server.ts";
import { AppError } from "../core/errors.ts";
import { authorize } from "../http/auth.ts";
import { readBodyCapped } from "../http/body-guard.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
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
    c.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "Method not allowed: this server is stateless; POST JSON-RPC messages" } }, 405, { Allow: "POST" }),
  );

  app.post("/v1/mcp", authorize(deps.auth, "read_only"), async (c) => {
    const principal = c.get("principal");
    const who = principal.kind === "api_key" ? principal.keyId : principal.sessionId;
    const bytes = await readBodyCapped(c.req.raw, deps.config.maxJsonBytes);
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not JSON" } }, 400);
    }

    let limitHeaders: Record<string, string> = {};
    const server = buildMcpServer(toolbox, {
      accountId: principal.accountId,
      version: VERSION,
      logger: c.get("log"),
      beforeCall: () => {
        const r = deps.limiter.hit("agent", who);
        limitHeaders = { "X-RateLimit-Limit": String(r.limit), "X-RateLimit-Remaining": String(r.remaining), "X-RateLimit-Reset": String(r.resetSecs) };
        if (!r.allowed) {
          limitHeaders["Retry-After"] = String(r.resetSecs);
          throw new AppError(429, "RATE_LIMIT_EXCEEDED", `Rate limit of ${r.limit} tool calls per minute exceeded; retry in ${r.resetSecs} s`);
        }
      },
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
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
