import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ErrorCode, statusOf } from "../core/error-codes.ts";
import { AppError, ValidationError, type ValidationIssue } from "../core/errors.ts";
import { boundedEcho, MAX_ISSUES } from "../core/validate.ts";
import { insufficientStorage, isStorageError } from "../core/storage.ts";
import type { AppEnv } from "./types.ts";

/** Every 422 is bounded here, whoever built its issues: at most MAX_ISSUES, each `input` cut short. */
export function validationResponse(c: Context<AppEnv>, issues: ValidationIssue[]) {
  const detail = issues.slice(0, MAX_ISSUES).map((i) => ("input" in i ? { ...i, input: boundedEcho(i.input) } : i));
  return c.json({ detail }, 422);
}

/** The one place an error body is written: `{"detail": {"code", "message"}}` with the code's status. */
export function errorResponse(
  c: Context<AppEnv>,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
) {
  return errorWithStatus(c, statusOf(code), code, message, headers);
}

function errorWithStatus(
  c: Context<AppEnv>,
  status: number,
  code: ErrorCode,
  message: string,
  headers: Record<string, string>,
) {
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  return c.json({ detail: { code, message } }, status as ContentfulStatusCode);
}

/** The same body outside Hono (a request Bun cannot route). */
export function errorJson(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ detail: { code, message } }, { status: statusOf(code), headers });
}

/**
 * Every thrown error ends here. Known errors keep their status and code; anything else is logged
 * with its stack and answered 500 without one (no internals reach a client).
 */
export function handleError(err: Error, c: Context<AppEnv>) {
  if (c.req.raw.signal.aborted) {
    // The client went away mid-request (an abandoned upload): nothing failed on this side and
    // nobody is left to answer. Logged as what it is, counted as 499 (nginx's "client closed").
    c.get("log")?.info("client closed the connection", { err: err?.message });
    return errorResponse(
      c,
      "CLIENT_CLOSED_REQUEST",
      "The client closed the connection before the request was complete",
    );
  }
  if (err instanceof ValidationError) return validationResponse(c, err.issues);
  if (!(err instanceof AppError) && isStorageError(err)) {
    // A full disk is the operator's problem, not a bug: 507, and the write was rolled back.
    c.get("log")?.warn("write refused: disk full", { err: err?.message });
    err = insufficientStorage();
  }
  if (err instanceof AppError) return errorResponse(c, err.code, err.message, err.headers);
  if (err instanceof HTTPException) {
    // Hono's body validators: malformed JSON / form → 400, undeclared content type → 415.
    // Clients of this API get the FastAPI 422 shape for every body problem.
    if (err.status === 400) {
      return validationResponse(c, [
        { loc: ["body"], msg: err.message || "Malformed request body", type: "json_invalid" },
      ]);
    }
    if (err.status === 415) {
      const ct = c.req.header("content-type") ?? "";
      return validationResponse(c, [
        {
          loc: ["body"],
          msg: `Unsupported Content-Type${ct ? ` "${ct}"` : " (none sent)"}; see /v1/openapi.json for this route's body type`,
          type: "content_type",
          input: ct || null,
        },
      ]);
    }
    if (err.status === 404) return errorResponse(c, "NOT_FOUND", err.message || "Request failed");
    // The one code whose status is not the catalogue's: the framework's own 4xx, passed on.
    return errorWithStatus(c, err.status, "HTTP_ERROR", err.message || "Request failed", {});
  }
  c.get("log")?.error("unhandled error", {
    err: err?.message,
    name: err?.name,
    code: (err as { code?: string })?.code,
    stack: err?.stack,
  });
  return errorResponse(c, "INTERNAL_ERROR", `Internal error; quote request id ${c.get("requestId")} when reporting it`);
}

export const notFoundHandler = (c: Context<AppEnv>) =>
  errorResponse(c, "NOT_FOUND", `No route for ${c.req.method} ${new URL(c.req.url).pathname}`);
