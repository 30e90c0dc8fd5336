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
      return issue.origin === "string"
        ? "string_too_short"
        : issue.origin === "array"
          ? "too_short"
          : "greater_than_equal";
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

/** A 422 lists at most this many problems; a body with 100 000 wrong items is not echoed 100 000 times. */
export const MAX_ISSUES = 50;
const ECHO_STRING = 256;
const ECHO_ITEMS = 20;
const ECHO_DEPTH = 3;

/**
 * The `input` a 422 echoes back: the offending value, cut to a bounded size (strings to 256
 * characters, 20 items or keys per level, 3 levels) so an answer never costs more than the request.
 * Applied once, where the 422 is written (http/errors.ts validationResponse).
 */
export function boundedEcho(v: unknown, depth = 0): unknown {
  if (typeof v === "string") return v.length > ECHO_STRING ? `${v.slice(0, ECHO_STRING)}…` : v;
  if (v === null || typeof v !== "object")
    return typeof v === "bigint" || typeof v === "function" || typeof v === "symbol" ? String(v) : v;
  if (depth >= ECHO_DEPTH) return Array.isArray(v) ? "[…]" : "{…}";
  if (Array.isArray(v)) {
    const out = v.slice(0, ECHO_ITEMS).map((x) => boundedEcho(x, depth + 1));
    if (v.length > ECHO_ITEMS) out.push(`… ${v.length - ECHO_ITEMS} more`);
    return out;
  }
  if (v instanceof Blob) return `<file ${v.size} bytes>`;
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (n++ === ECHO_ITEMS) {
      out["…"] = "more keys";
      break;
    }
    out[k.length > ECHO_STRING ? `${k.slice(0, ECHO_STRING)}…` : k] = boundedEcho(
      (v as Record<string, unknown>)[k],
      depth + 1,
    );
  }
  return out;
}

export function zodIssuesToValidation(issues: readonly ZodIssue[], data: unknown, root: string): ValidationIssue[] {
  const out = convertIssues(issues.slice(0, MAX_ISSUES), data, root);
  return out.length > MAX_ISSUES ? out.slice(0, MAX_ISSUES) : out;
}

function convertIssues(issues: readonly ZodIssue[], data: unknown, root: string): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        out.push({
          loc: [root, ...(path as (string | number)[])],
          msg: "Extra inputs are not permitted",
          type: "extra_forbidden",
          input: valueAt(data, path),
        });
        if (out.length > MAX_ISSUES) return out;
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
