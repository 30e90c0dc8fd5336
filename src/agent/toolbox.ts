import { z } from "@hono/zod-openapi";
import { ValidationError } from "../core/errors.ts";
import { zodIssuesToValidation } from "../core/validate.ts";
import { type AgentDeps, type AgentTool, asInputError, type ToolContext, TOOLS } from "./tools.ts";

/** One function-calling entry of `GET /v1/agent/schema.json`. */
export interface FunctionSchema {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  output_schema: Record<string, unknown>;
  annotations: { readOnlyHint: true };
}

const DRAFT = "https://json-schema.org/draft/2020-12/schema";

/** JSON Schema (draft 2020-12) of a zod schema; `$schema` only on the document, not on each part. */
function jsonSchema(s: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, target: "draft-2020-12", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
}

/**
 * The agent tools behind every transport: `/v1/agent/call`, MCP over HTTP and MCP over stdio all
 * come here, so a tool behaves (validates, errs, answers) the same whichever way it is called.
 */
export class AgentToolbox {
  readonly tools: readonly AgentTool[] = TOOLS;
  private readonly byName = new Map(TOOLS.map((t) => [t.name, t]));
  /** Answers that depend only on the tools (their JSON Schemas), made once. */
  private readonly made = new Map<string, unknown>();

  constructor(private readonly deps: AgentDeps) {}

  tool(name: string): AgentTool | undefined {
    return this.byName.get(name);
  }

  /** Validates raw JSON input against the tool's schema (422 at `tool` / `input.<field>`) and runs it. */
  async call(
    accountId: string,
    name: unknown,
    input: unknown,
    ctx: ToolContext = {},
  ): Promise<Record<string, unknown>> {
    const t = typeof name === "string" ? this.byName.get(name) : undefined;
    if (!t) {
      throw new ValidationError([
        {
          loc: ["tool"],
          msg: `Unknown tool; one of ${[...this.byName.keys()].join(", ")}`,
          type: "enum",
          input: name,
          ctx: { expected: [...this.byName.keys()].join(", ") },
        },
      ]);
    }
    const parsed = t.input.safeParse(input ?? {});
    if (!parsed.success) throw new ValidationError(zodIssuesToValidation(parsed.error.issues, input ?? {}, "input"));
    return this.run(accountId, t, parsed.data, ctx);
  }

  /** Runs a tool on input its schema already parsed (the MCP SDK validates before calling). */
  async run(accountId: string, t: AgentTool, input: unknown, ctx: ToolContext = {}): Promise<Record<string, unknown>> {
    try {
      return (await t.run(this.deps, accountId, input, ctx)) as Record<string, unknown>;
    } catch (e) {
      throw asInputError(e);
    }
  }

  /** `make()` once per toolbox (e.g. MCP's tools/list: ~30 ms of schema conversion, once instead of per request). */
  once<T>(key: string, make: () => T): T {
    if (!this.made.has(key)) this.made.set(key, make());
    return this.made.get(key) as T;
  }

  /** Function-calling schemas: the inputs as the zod schemas accept them, the outputs as returned. */
  functionSchemas(): { $schema: string; tools: FunctionSchema[] } {
    return {
      $schema: DRAFT,
      tools: this.tools.map((t) => ({
        type: "function" as const,
        name: t.name,
        description: t.description,
        parameters: jsonSchema(t.input, "input"),
        output_schema: jsonSchema(t.output, "output"),
        annotations: { readOnlyHint: true as const },
      })),
    };
  }
}
