/**
 * The one error type that crosses layers. Services throw it; the HTTP layer turns it into
 * `{"detail": {"code", "message"}}` with `status`, the CLI into a one-line message and exit 1.
 * Services never import Hono, so this lives in core/, not http/.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

/** A validation problem in the FastAPI `detail[]` shape; the HTTP layer answers 422. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export class ValidationError extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; "));
    this.name = "ValidationError";
  }
}

export const notFound = (code: string, what: string) => new AppError(404, code, `${what} not found`);
export const forbidden = (message = "This credential may not do that") => new AppError(403, "FORBIDDEN", message);
