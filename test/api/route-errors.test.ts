/**
 * Issue 23: a route declares the catalogue codes it can answer (`errors`), and `defineRoute`
 * documents each under its status: a response it writes when the route has none for that status
 * (codes and meanings in the description), and `x-error-codes` on every error response, with the
 * codes a hand-written description names. Hand-written descriptions are kept as they are.
 */
import { describe, expect, test } from "vitest";
import { ERROR_CODES } from "../../src/core/error-codes.ts";
import type { HttpDeps } from "../../src/http/deps.ts";
import { defineRoute, jsonError } from "../../src/http/route.ts";

// defineRoute only closes over these for the middleware it builds; no request is made here.
const deps = { config: { maxJsonBytes: 1024 } } as HttpDeps;

type Doc = { description: string; "x-error-codes"?: string[] };
const responsesOf = (r: { responses: unknown }) => r.responses as Record<string, Doc>;

describe("defineRoute's error documentation", () => {
  test("declared codes get a response per status, with their meanings, and x-error-codes", () => {
    const r = responsesOf(
      defineRoute(deps, {
        method: "post",
        path: "/v1/things/{thing_id}/retry",
        operationId: "retryThing",
        access: "all",
        errors: ["JOB_NOT_FOUND", "JOB_NOT_RETRYABLE", "VIDEO_NOT_READY"],
        responses: { 202: { description: "Queued again" } },
      }),
    );
    expect(r[404].description).toBe(`JOB_NOT_FOUND: ${ERROR_CODES.JOB_NOT_FOUND.meaning}`);
    expect(r[404]["x-error-codes"]).toEqual(["JOB_NOT_FOUND"]);
    expect(r[409].description).toBe(
      `JOB_NOT_RETRYABLE: ${ERROR_CODES.JOB_NOT_RETRYABLE.meaning} VIDEO_NOT_READY: ${ERROR_CODES.VIDEO_NOT_READY.meaning}`,
    );
    expect(r[409]["x-error-codes"]).toEqual(["JOB_NOT_RETRYABLE", "VIDEO_NOT_READY"]);
    // The answers defineRoute adds itself carry their codes too; a success and the 422 carry none.
    expect(r[401]["x-error-codes"]).toEqual(["UNAUTHORIZED", "INVALID_API_KEY", "SESSION_EXPIRED"]);
    // A session on a one-time password may only choose a new one (issue 22): every other route's 403.
    expect(r[403]["x-error-codes"]).toEqual(["FORBIDDEN", "PASSWORD_CHANGE_REQUIRED"]);
    expect(r[413]["x-error-codes"]).toEqual(["PAYLOAD_TOO_LARGE"]);
    expect(r[500]["x-error-codes"]).toEqual(["INTERNAL_ERROR"]);
    expect(r[507]["x-error-codes"]).toEqual(["INSUFFICIENT_STORAGE"]);
    expect(r[202]["x-error-codes"]).toBeUndefined();
    expect(r[422]["x-error-codes"]).toBeUndefined();
  });

  test("a hand-written response keeps its description; x-error-codes adds the declared codes it does not name", () => {
    const r = responsesOf(
      defineRoute(deps, {
        method: "get",
        path: "/v1/videos/{video_id}/thing",
        operationId: "getThing",
        access: "public",
        errors: ["NOT_FOUND", "VIDEO_NOT_READY"],
        responses: {
          200: { description: "The thing" },
          404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
        },
      }),
    );
    expect(r[404].description).toBe("No such video in this account (VIDEO_NOT_FOUND)");
    expect(r[404]["x-error-codes"]).toEqual(["VIDEO_NOT_FOUND", "NOT_FOUND"]);
    expect(r[409]["x-error-codes"]).toEqual(["VIDEO_NOT_READY"]);
    // A public GET route: no 401/403/413/507 answers, so none documented.
    expect(Object.keys(r).sort()).toEqual(["200", "404", "409", "422", "500"]);
  });
});
