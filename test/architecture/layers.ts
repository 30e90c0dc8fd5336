/**
 * The layers of src/, the few upward imports allowed between them, and the files outside the
 * stores allowed to hold bun:sqlite (issue 10). Kept in step with docs/ARCHITECTURE.md ("Layers",
 * "The store seam").
 */
import type { AllowedUpward } from "./check-imports.ts";

/** From the bottom up. A new top-level folder goes into the lowest layer that holds all it imports. */
export const LAYERS: string[][] = [
  [
    "core/",
    "version.ts",
    "sql.d.ts",
    "config/",
    "observability/",
    "net/",
    "signing/",
    "store/",
    "vector/",
    "media/",
    "runtime/",
    "ocr/",
  ],
  ["inference/"],
  ["models/"],
  ["events/", "indexing/", "jobs/", "nodes/"],
  ["accounts/"],
  ["api-keys/", "collections/", "credits/", "webhooks/"],
  ["auth/", "videos/"],
  ["media-serving/", "upload/", "search/", "pipeline/", "system/", "backup/", "playback/"],
  ["agent/"],
  ["services.ts"],
  ["http/"],
  ["api/"],
  ["app.ts"],
  ["cli/"],
  ["commands/"],
  ["main.ts"],
];

export const ALLOW_UPWARD: AllowedUpward[] = [
  {
    from: "runtime/self-test.ts",
    to: "inference/",
    reason: "the self-test proves the embedded ONNX Runtime by running one session in a pool worker",
  },
  {
    from: "inference/host.ts",
    to: "models/",
    reason: "the host reads which model serves each role (ModelCatalog, a type) to probe devices and start pools",
  },
  {
    from: "api-keys/service.ts",
    to: "auth/",
    reason: "a key's permissions are checked against the caller, whose Principal type lives in auth/schema.ts",
  },
  { from: "accounts/deletion.ts", to: "videos/", reason: "deleting an account purges its videos and their files" },
  {
    from: "accounts/deletion.ts",
    to: "webhooks/",
    reason: "deleting an account delivers account.deleted, then drops its subscriptions",
  },
];

/**
 * Files outside the SQLite backend (store/sqlite/) that may import bun:sqlite, each with its
 * reason. None today: the sqlite-vec self-test opens its in-memory database through
 * store/sqlite/vec-check.ts.
 */
export const SQLITE_EXCEPTIONS: { file: string; reason: string }[] = [];
