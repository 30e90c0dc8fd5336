import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
} from "@modelcontextprotocol/sdk/types.js";
import { AppError, ValidationError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { AgentTool } from "./tools.ts";
import type { AgentToolbox } from "./toolbox.ts";

export interface McpServerOptions {
  /** The tenant every call acts for (from the Bearer key over HTTP, from `--account` over stdio). */
  accountId: string;
  version: string;
  logger: Logger;
  /**
   * Longest a tools/call may take; past it the call is the tool error `TIMEOUT (504)` and its work
   * is told to stop (the signal the tool gets aborts).
   */
  callTimeoutMs: number;
  /** The request or session this server answers ending (client gone): every call's work is told to stop. */
  signal?: AbortSignal;
}

const INSTRUCTIONS =
  "vsearch finds moments in this account's videos. Start with search_videos (query = what is seen or said); " +
  "cite clips as [filename mm:ss–mm:ss]; check a hit with get_frame (look at the picture) or get_moment / get_transcript (read what is said). " +
  "list_collections / list_videos show what is indexed.";

/** A tool failure as MCP wants it: a result with isError, its text `CODE: message` as REST would say it. */
export function toolError(e: unknown, logger: Logger): CallToolResult {
  let text: string;
  if (e instanceof ValidationError) {
    text = `VALIDATION_ERROR (422): ${e.issues.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; ")}`;
  } else if (e instanceof AppError) {
    text = `${e.code} (${e.status}): ${e.message}`;
  } else {
    logger.error("agent tool failed", { err: (e as Error)?.message, stack: (e as Error)?.stack });
    text = "INTERNAL_ERROR (500): Internal error";
  }
  return { isError: true, content: [{ type: "text", text }] };
}

/** What an answer looks like over MCP: the summary first, then its pictures, and the structured part. */
export function toolResult(t: AgentTool, out: Record<string, unknown>): CallToolResult {
  const split = t.images ? t.images(out as never) : { structured: out, images: [] };
  return {
    content: [
      { type: "text", text: t.summary(out as never) },
      ...split.images.flatMap((img, k) => [
        { type: "text" as const, text: `image ${k + 1}: ${img.caption}` },
        { type: "image" as const, data: img.data, mimeType: "image/jpeg" },
      ]),
    ],
    structuredContent: split.structured as Record<string, unknown>,
  };
}

/**
 * One MCP server over the agent toolbox. Every tool is registered with its zod input and output
 * schemas (the SDK lists them as JSON Schema; clients validate structuredContent against them)
 * and annotated read-only. Cheap to build: the HTTP transport builds one per request (stateless).
 *
 * tools/call is then answered by the toolbox itself rather than the SDK's handler, so a bad input
 * or an unknown tool is the same 422 as on /v1/agent/call (`VALIDATION_ERROR (422): input.limit: …`)
 * instead of the SDK's own wording, and the rate limit counts unknown tools too.
 */
export function buildMcpServer(toolbox: AgentToolbox, opts: McpServerOptions): McpServer {
  const annotations = (t: AgentTool) => ({
    title: t.title,
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  });
  const server = new McpServer({ name: "vsearch", version: opts.version }, { instructions: INSTRUCTIONS });
  for (const t of toolbox.tools) {
    server.registerTool(
      t.name,
      {
        title: t.title,
        description: t.description,
        inputSchema: t.input as never,
        outputSchema: t.output as never,
        annotations: annotations(t),
      },
      // Not reached while the handler below answers tools/call; a complete tool all the same.
      (async (args: unknown) => toolResult(t, await toolbox.run(opts.accountId, t, args))) as never,
    );
  }
  // tools/list is the same for every caller: converted to JSON Schema once per toolbox, as the SDK
  // would (~30 ms of event loop per request before; a batch of 100 was ~0.9 s).
  const list = toolbox.once(
    "mcp:tools/list",
    (): ListToolsResult => ({
      tools: toolbox.tools.map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: toJsonSchemaCompat(t.input as never, { strictUnions: true, pipeStrategy: "input" }) as never,
        outputSchema: toJsonSchemaCompat(t.output as never, { strictUnions: true, pipeStrategy: "output" }) as never,
        annotations: annotations(t),
      })),
    }),
  );
  server.server.setRequestHandler(ListToolsRequestSchema, () => list);
  // Replaces the handler registerTool installed (the tests over both transports pin this down).
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const deadline = AbortSignal.timeout(opts.callTimeoutMs);
    const signal = AbortSignal.any([deadline, extra.signal, ...(opts.signal ? [opts.signal] : [])]);
    let stop = () => {};
    const stopped = new Promise<never>((_, reject) => {
      stop = () =>
        reject(
          deadline.aborted
            ? new AppError("TIMEOUT", `The tool call ran past ${opts.callTimeoutMs / 1000} s and was stopped`)
            : new AppError("CLIENT_CLOSED_REQUEST", "The client went away"),
        );
      signal.addEventListener("abort", stop, { once: true });
    });
    stopped.catch(() => {}); // settled by the race below, or never
    try {
      const out = await Promise.race([
        toolbox.call(opts.accountId, request.params.name, request.params.arguments ?? {}, { signal }),
        stopped,
      ]);
      return toolResult(toolbox.tool(request.params.name)!, out);
    } catch (e) {
      return toolError(e, opts.logger);
    } finally {
      signal.removeEventListener("abort", stop);
    }
  });
  return server;
}
