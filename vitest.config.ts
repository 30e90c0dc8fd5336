import { configDefaults, defineConfig } from "vitest/config";
import { readFileSync } from "node:fs";

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
 * Tests of the store seam that need PostgreSQL (a throw-away cluster, test/pg/). When the domain
 * moves onto the async seam (issue 24), the `pg` project takes the whole suite, with the few
 * SQLite-only files excluded and said so.
 */
const PG_ONLY = ["test/store/conformance/**/*.test.ts", "test/store/schema-parity.test.ts"];

export default defineConfig({
  plugins: [sqlAsText],
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: "sqlite", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...PG_ONLY] },
      },
      {
        extends: true,
        test: {
          name: "pg",
          include: PG_ONLY,
          globalSetup: ["test/pg/global-setup.ts"],
          setupFiles: ["test/pg/per-file.ts"],
          // A file may wait for the cluster the global setup starts in the background.
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
