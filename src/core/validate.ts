import type { z } from "@hono/zod-openapi";
import { ValidationError, type ValidationIssue } from "./errors.ts";

type ZodIssue = z.core.$ZodIssue;

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = data;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
}

/** FastAPI/pydantic-style `type` for a zod issue, so clients written for that shape work. */
function issueType(issue: ZodIssue, input: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      return input === undefined ? "missing" : `${issue.expected}_type`;
    case "too_small":
      return issue.origin === "string" ? "string_too_short" : issue.origin === "array" ? "too_short" : "greater_than_equal";
    case "too_big":
      return issue.origin === "string" ? "string_too_long" : issue.origin === "array" ? "too_long" : "less_than_equal";
    case "invalid_value":
      return "enum";
    case "unrecognized_keys":
      return "extra_forbidden";
    case "invalid_format":
      return "value_error";
    default:
      return "value_error";
  }
}

export function zodIssuesToValidation(issues: readonly ZodIssue[], data: unknown, root: string): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        out.push({ loc: [root, ...(path as (string | number)[])], msg: "Extra inputs are not permitted", type: "extra_forbidden", input: valueAt(data, path) });
      }
      continue;
    }
    const input = valueAt(data, issue.path);
    const type = issueType(issue, input);
    const entry: ValidationIssue = {
      loc: [root, ...(issue.path as (string | number)[])],
      msg: type === "missing" ? "Field required" : issue.message,
      type,
    };
    if (input !== undefined) entry.input = input;
    if (issue.code === "too_small") entry.ctx = { min: Number(issue.minimum) };
    if (issue.code === "too_big") entry.ctx = { max: Number(issue.maximum) };
    if (issue.code === "invalid_value") entry.ctx = { expected: issue.values.map(String).join(", ") };
    out.push(entry);
  }
  return out;
}

/** Parses service input with the same schemas the HTTP layer documents; 422 on failure. */
export function parseInput<S extends z.ZodType>(schema: S, data: unknown, root = "body"): z.output<S> {
  const r = schema.safeParse(data);
  if (!r.success) throw new ValidationError(zodIssuesToValidation(r.error.issues, data, root));
  return r.data;
}
