/**
 * Issue 23: one error catalogue (src/core/error-codes.ts). A code the source answers with is a row
 * of it, a row is answered somewhere, no error body pairs a status with a code by hand, and the
 * OpenAPI document and the docs' tables name each code under its catalogue status (rules in
 * check-error-codes.ts). SPEC §2's codes are all rows, with SPEC's statuses.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ERROR_CODES } from "../../src/core/error-codes.ts";
import { startTestApp, type TestApp } from "../helpers/app.ts";
import { readTree, type SourceFile } from "./check-imports.ts";
import { checkCodes, checkDocTables, checkOpenApi, scanCodes } from "./check-error-codes.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** SPEC §2, "Every other error": each code with its status (copied: tests do not read ../shared). */
const SPEC_CODES: Record<string, number> = {
  UNAUTHORIZED: 401,
  INVALID_API_KEY: 401,
  SESSION_EXPIRED: 401,
  API_KEY_LIMIT_REACHED: 402,
  WEBHOOK_LIMIT_REACHED: 402,
  INSUFFICIENT_CREDITS: 402,
  FORBIDDEN: 403,
  COLLECTION_NOT_FOUND: 404,
  VIDEO_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  NOT_FOUND: 404,
  COLLECTION_NAME_TAKEN: 409,
  API_KEY_ALREADY_REVOKED: 409,
  UPLOAD_TOO_LARGE: 413,
  UNSUPPORTED_FORMAT: 415,
  RATE_LIMIT_EXCEEDED: 429,
  METHOD_NOT_ALLOWED: 405,
  INTERNAL_ERROR: 500,
  MODEL_NOT_INSTALLED: 503,
  SEARCH_UNAVAILABLE: 503,
  INSUFFICIENT_STORAGE: 507,
};

const docs = (): SourceFile[] => [
  { path: "README.md", text: readFileSync(join(ROOT, "README.md"), "utf8") },
  ...readdirSync(join(ROOT, "docs"))
    .filter((n) => n.endsWith(".md"))
    .map((n) => ({ path: `docs/${n}`, text: readFileSync(join(ROOT, "docs", n), "utf8") })),
];

describe("the error catalogue, on the real tree", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  test("every code answered in src/ is a row, every row is answered, no error body is written by hand", () => {
    const files = readTree(join(ROOT, "src"));
    // Vacuity guard: the walk found the tree and the scan found the codes it throws.
    expect(files.length).toBeGreaterThan(200);
    const { uses } = scanCodes(files);
    expect(uses.length).toBeGreaterThan(120);
    expect(new Set(uses.map((u) => u.code)).size).toBeGreaterThan(40);
    expect(checkCodes(files, ERROR_CODES)).toEqual([]);
  }, 180_000); // parses every file of src/: seconds idle, longer on a loaded machine

  test("SPEC §2's codes are rows with SPEC's statuses", () => {
    for (const [code, status] of Object.entries(SPEC_CODES))
      expect({ code, status: (ERROR_CODES as Record<string, { status: number }>)[code]?.status }).toEqual({
        code,
        status,
      });
  });

  test("the served OpenAPI document names each code under its catalogue status, and lists them", async () => {
    const doc = await (await t.request("GET", "/v1/openapi.json")).json();
    const listed = JSON.stringify(doc).match(/"x-error-codes"/g) ?? [];
    // Vacuity guard: the generated lists are there (one per documented error response with a code).
    expect(listed.length).toBeGreaterThan(150);
    expect(checkOpenApi(doc, ERROR_CODES)).toEqual([]);
  });

  test("the docs' code tables give each code its catalogue status", () => {
    const all = docs();
    // Vacuity guard: the tables are found (docs/ERRORS.md alone lists every row).
    const rows = all.flatMap((d) => d.text.split("\n").filter((l) => /^\|\s*`[A-Z][A-Z0-9_]+`\s*\|\s*\d{3}/.test(l)));
    expect(rows.length).toBeGreaterThan(Object.keys(ERROR_CODES).length);
    expect(checkDocTables(all, ERROR_CODES)).toEqual([]);
  });
});

describe("the checker, on synthetic files", () => {
  const catalogue = {
    VIDEO_NOT_FOUND: { status: 404 },
    JOB_NOT_FOUND: { status: 404 },
    MODEL_DOWNLOAD_INTERRUPTED: { status: 502 },
    MODEL_DOWNLOAD_FAILED: { status: 502 },
    NOT_FOUND: { status: 404 },
    FORBIDDEN: { status: 403 },
  };
  const clean: SourceFile = {
    path: "videos/service.ts",
    text: [
      'throw new AppError("VIDEO_NOT_FOUND", "gone");',
      'if (!row) throw notFound("JOB_NOT_FOUND", `Job ${id}`);',
      'export const INTERRUPTED = "MODEL_DOWNLOAD_INTERRUPTED" satisfies ErrorCode;',
      'throw new AppError(res.status >= 500 ? INTERRUPTED : "MODEL_DOWNLOAD_FAILED", msg);',
      'return errorResponse(c, "NOT_FOUND", "No route");',
      'return errorJson("FORBIDDEN", "no");',
      'throw new MediaError("DECODE_FAILED", "not an AppError: a job failure code");',
    ].join("\n"),
  };

  test("a tree answering every row, through the helpers, passes", () => {
    expect(checkCodes([clean], catalogue)).toEqual([]);
  });

  test("a code missing from the catalogue fails, however it is passed", () => {
    const bad: SourceFile = {
      path: "jobs/service.ts",
      text: [
        'throw new AppError("JOB_NOT_FOUDN" as any, "typo");',
        'throw new AppError(x ? "VIDEO_NOT_FOUND" : "NO_SUCH_CODE", "m");',
      ].join("\n"),
    };
    expect(checkCodes([clean, bad], catalogue)).toEqual([
      "jobs/service.ts:1: JOB_NOT_FOUDN is not in the error catalogue (src/core/error-codes.ts)",
      "jobs/service.ts:2: NO_SUCH_CODE is not in the error catalogue (src/core/error-codes.ts)",
    ]);
  });

  test("a row nothing answers fails, so the catalogue only holds what is real", () => {
    expect(checkCodes([clean], { ...catalogue, UNUSED_CODE: { status: 409 } })).toEqual([
      "src/core/error-codes.ts: UNUSED_CODE is answered nowhere; remove its row (or throw it where it happens)",
    ]);
  });

  test("an error body written by hand fails outside src/http/errors.ts", () => {
    const raw: SourceFile = {
      path: "api/things.ts",
      text: 'return c.json({ detail: { code: "NOT_FOUND", message: "x" } }, 409);',
    };
    expect(checkCodes([clean, raw], catalogue)).toEqual([
      "api/things.ts:1: an error body (NOT_FOUND) written by hand; use errorResponse/errorJson (src/http/errors.ts) so its status is the catalogue's",
    ]);
    expect(checkCodes([clean, { ...raw, path: "http/errors.ts" }], catalogue)).toEqual([]);
  });

  test("a code documented under another status, or unknown, fails in the OpenAPI document and in docs tables", () => {
    const doc = {
      paths: {
        "/v1/videos/{video_id}": {
          get: {
            responses: {
              "200": { description: "The video (VIDEO_NOT_FOUND is a 404)" },
              "404": { description: "No such video (VIDEO_NOT_FOUND)", "x-error-codes": ["VIDEO_NOT_FOUND"] },
              "409": { description: "Not ready (VIDEO_NOT_FOUND, VIDEO_NOT_READDY)" },
            },
          },
        },
      },
    };
    expect(checkOpenApi(doc, catalogue)).toEqual([
      "GET /v1/videos/{video_id} 409: VIDEO_NOT_FOUND is documented under 409; the catalogue answers it with 404",
      "GET /v1/videos/{video_id} 409: VIDEO_NOT_READDY is not in the error catalogue",
    ]);
    const md: SourceFile = {
      path: "docs/X.md",
      text: "| code | status |\n|---|---|\n| `VIDEO_NOT_FOUND` | 404 | ok |\n| `FORBIDDEN` | 400/403 | two |\n| `GONE_CODE` | 410 | x |\n| `VIDEO_NOT_FOUND` | not a status |",
    };
    expect(checkDocTables([md], catalogue)).toEqual([
      "docs/X.md:4: FORBIDDEN is listed as 400/403; the catalogue answers it with 403",
      "docs/X.md:5: GONE_CODE is not in the error catalogue",
    ]);
  });
});
