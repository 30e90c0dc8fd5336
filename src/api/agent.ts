import { z } from "@hono/zod-openapi";
import { ValidationError } from "../core/errors.ts";
import { dataResponse, defineRoute, jsonError, ok, RETRY_AFTER_HEADER } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";

/** HTTP function calling (SPEC §9): the tools' JSON Schemas, and one endpoint that calls any of them. */
export function registerAgentRoutes(app: Api, deps: HttpDeps) {
  const toolbox = deps.services.agent;
  const names = toolbox.tools.map((t) => t.name);

  app.openapi(
    defineRoute(deps, {
      method: "get",
      path: "/v1/agent/schema.json",
      operationId: "getAgentSchema",
      tags: ["Agent tools"],
      summary: "Function-calling JSON Schemas of the agent tools",
      description:
        "Draft 2020-12 JSON Schema of each tool's input (`parameters`) and output (`output_schema`), generated from the zod schemas that validate `POST /v1/agent/call`. Entries have the OpenAI-style `{type: \"function\", name, description, parameters}` shape; Anthropic's `input_schema` is `parameters`. No tenant data: public.",
      access: "public",
      responses: {
        200: {
          description: "The tools",
          content: {
            "application/json": {
              schema: z.object({
                $schema: z.string(),
                tools: z.array(
                  z
                    .object({
                      type: z.literal("function"),
                      name: z.string(),
                      description: z.string(),
                      parameters: z.record(z.string(), z.unknown()),
                      output_schema: z.record(z.string(), z.unknown()),
                    })
                    .passthrough(),
                ),
              }),
            },
          },
        },
      },
    }),
    (c) => c.json(toolbox.functionSchemas(), 200),
  );

  app.openapi(
    defineRoute(deps, {
      method: "post",
      path: "/v1/agent/call",
      operationId: "callAgentTool",
      tags: ["Agent tools"],
      summary: "Call an agent tool",
      description: `Body \`{tool, input}\`; the answer is the tool's output in the usual envelope. Tools: ${names.join(", ")}. All are reads: read_only keys may call every tool. Rate group \`agent\` (shared with /v1/mcp).`,
      access: "read_only",
      rateGroup: "agent",
      request: {
        body: {
          required: true,
          content: {
            "application/json": {
              schema: z
                .object({
                  tool: z.string().openapi({ example: "search_videos", description: `One of ${names.join(", ")}` }),
                  input: z
                    .record(z.string(), z.unknown())
                    .optional()
                    .openapi({
                      example: { query: "a dog on the beach", limit: 5 },
                      description: "The tool's input (see /v1/agent/schema.json); default {}",
                    }),
                })
                .strict(),
            },
          },
        },
      },
      responses: {
        200: dataResponse("The tool's output", z.record(z.string(), z.unknown())),
        402: jsonError("Out of credits (INSUFFICIENT_CREDITS; search_videos)"),
        404: jsonError(
          "A named collection, video or job is not in this account (COLLECTION_NOT_FOUND, VIDEO_NOT_FOUND, JOB_NOT_FOUND)",
        ),
        429: jsonError(
          "Rate limit exceeded (RATE_LIMIT_EXCEEDED), or get_frame / search thumbnails: this account already has 4 frame grabs running or waiting; see Retry-After",
        ),
        409: jsonError(
          "get_frame on a video not yet probed (VIDEO_NOT_READY), or whose file cannot be decoded at that time (DECODE_FAILED)",
        ),
        503: {
          ...jsonError(
            "search_videos: a requested mode's model is not installed (MODEL_NOT_INSTALLED), or the search index is still loading after a restart (SEARCH_UNAVAILABLE; see Retry-After); get_frame / thumbnails: too many frame grabs of all accounts are waiting (SERVER_BUSY; see Retry-After)",
          ),
          headers: RETRY_AFTER_HEADER,
        },
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      try {
        return ok(
          c,
          await toolbox.call(c.get("principal").accountId, body.tool, body.input, { signal: c.req.raw.signal }),
        );
      } catch (e) {
        // The toolbox names fields from the tool's point of view (`tool`, `input.limit`); here they sit in the body.
        if (e instanceof ValidationError)
          throw new ValidationError(e.issues.map((i) => ({ ...i, loc: ["body", ...i.loc] })));
        throw e;
      }
    },
  );
}
