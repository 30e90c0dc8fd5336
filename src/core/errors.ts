import { ERROR_CODES, type ErrorCode, statusOf } from "./error-codes.ts";

/**
 * The one error type that crosses layers. Services throw it; the HTTP layer turns it into
 * `{"detail": {"code", "message"}}` with `status`, the CLI into a one-line message and exit 1.
 * The status is the code's, from the catalogue (src/core/error-codes.ts).
 * Services never import Hono, so this lives in core/, not http/.
 */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers (e.g. Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
    this.status = statusOf(code);
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

/** A 404 with `code` (one of the catalogue's 404 codes): "<what> not found". */
export const notFound = (code: NotFoundCode, what: string) => new AppError(code, `${what} not found`);
export const forbidden = (message = "This credential may not do that") => new AppError("FORBIDDEN", message);

/** The catalogue's codes answered with 404. */
export type NotFoundCode = { [C in ErrorCode]: (typeof ERROR_CODES)[C]["status"] extends 404 ? C : never }[ErrorCode];

/**
 * The media's bucket failed or could not be reached (MEDIA_STORE_UNAVAILABLE): nothing is wrong
 * with the video, so a background task that meets it is handed back and runs again later, as one
 * that meets an unreachable database is (jobs/lease-queue.ts).
 */
export const isMediaStoreUnavailable = (e: unknown): boolean =>
  e instanceof AppError && e.code === "MEDIA_STORE_UNAVAILABLE";
