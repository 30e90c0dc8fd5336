import { configDefaults, defineConfig } from "vitest/config";
import { readFileSync } from "node:fs";
import { storeTestFiles } from "./test/pg/store-files.ts";
import { LongestFirstSequencer } from "./test/sequencer.ts";

// Bun imports `*.sql` with `{ type: "text" }`; vite does not know that attribute, so the test
// pipeline is taught the same thing: a .sql module's default export is its text.
const sqlAsText = {
  name: "sql-as-text",
  enforce: "pre" as const,
  load(id: string) {
    if (id.endsWith(".sql")) return `export default ${JSON.stringify(readFileSync(id, "utf8"))};`;
  },
};

/**
 * Tests of the store seam itself, for both backends in one file (test/store/conformance/): they run
 * in the `pg` project only, where a PostgreSQL is there (their SQLite half runs either way).
 */
const PG_ONLY = [
  "test/store/conformance/**/*.test.ts",
  "test/store/schema-parity.test.ts",
  "test/store/migrate-store.test.ts",
  "test/backup/pg-operations.test.ts",
  "test/cluster/two-servers.test.ts",
  "test/cluster/shared-port.test.ts",
  "test/storage/shared-media.test.ts",
  "test/storage/s3-media-nodes.test.ts",
  "test/workers/workers.test.ts",
];

/**
 * Files that open a store but test what only the embedded store has; each says why it is not run
 * on PostgreSQL (what stands for it there is named).
 */
const SQLITE_ONLY: Record<string, string> = {
  "test/store/unit-of-work.test.ts":
    "the SQLite unit of work (writer lock, BEGIN IMMEDIATE, reader connection); PostgreSQL's: conformance/transactions.test.ts",
  "test/store/store-errors.test.ts":
    "SQLite's error codes (SQLITE_FULL, SQLITE_BUSY); PostgreSQL's SQLSTATE mapping: conformance/pg-errors.test.ts",
  "test/backup/backup-restore.test.ts":
    "the embedded backup (a VACUUM INTO snapshot in the archive); PostgreSQL's (media and registry, rows by pg_dump): test/backup/pg-operations.test.ts",
  "test/backup/restore-outbox.test.ts":
    "the embedded restore's held deliveries; PostgreSQL's: test/backup/pg-operations.test.ts",
  "test/crash/kill9-stages.test.ts":
    "kill -9 of serve inside each ingest stage, then restarts: ~100 s of ffmpeg and model restarts a run, which CI's 30 minutes cannot hold twice (2026-11-29: 1 670 s with it on both); what it asks of the store — a killed task's lease given back, its rows not duplicated, the job resumed — PostgreSQL's runs in test/pipeline/crash-resume.test.ts, test/crash/kill9-writes.test.ts and test/workers/workers.test.ts",
  "test/storage/disk-full.test.ts":
    "fills the disk under the data dir, where the embedded database lives; PostgreSQL's disk is the server's (53100 disk_full → 507: conformance/pg-errors.test.ts)",
};

/**
 * The `pg` project: every test file that opens a store (test/pg/store-files.ts), on PostgreSQL
 * (VSEARCH_TEST_BACKEND=postgres: each app, CLI process and data dir gets a database copied from
 * the migrated template, test/pg/backend.ts), less SQLITE_ONLY. The files whose time goes to ffmpeg,
 * ONNX Runtime and OCR run here too (until issue 25's last step, 13 of them ran on SQLite only to fit
 * CI's 30 minutes; what made room: docs/POSTGRES.md, "Tests").
 */
const PG_FILES = storeTestFiles().filter((f) => !(f in SQLITE_ONLY));

export default defineConfig({
  plugins: [sqlAsText],
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    // Longest files first, both projects mixed: no long file starts near the end (test/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: { name: "sqlite", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...PG_ONLY] },
      },
      {
        extends: true,
        test: {
          name: "pg",
          // PG_ONLY too: a file there that opens no store (placeholders.test.ts) is in neither list otherwise.
          include: [...PG_FILES, ...PG_ONLY],
          env: { VSEARCH_TEST_BACKEND: "postgres" },
          globalSetup: ["test/pg/global-setup.ts"],
          setupFiles: ["test/pg/per-file.ts"],
          // A file may wait for the cluster the global setup starts in the background.
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
