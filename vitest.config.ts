import { defineConfig } from "vitest/config";
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

export default defineConfig({
  plugins: [sqlAsText],
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
  },
});
