/**
 * Only src/config reads the environment (issue 23): every setting is a row of
 * src/config/settings.ts, read by loadConfig from the `env` the entry point (src/main.ts) passes
 * it once. A module reading process.env / Bun.env by itself would be a setting outside the table.
 */
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { readTree, type SourceFile } from "./check-imports.ts";

const ROOT = join(import.meta.dirname, "..", "..");
/** Where the environment may be read: the entry point hands it to the CLI; config parses it. */
const READERS = new Set([
  "main.ts",
  "config/config.ts",
  // The pdeathsig guard's source runs in its own child process and hands that process's
  // environment to execve unchanged: it reads no setting.
  "media/child-guard.ts",
]);

function envReaders(files: SourceFile[]): string[] {
  return files
    .filter((f) => !READERS.has(f.path))
    .flatMap((f) =>
      f.text
        .split("\n")
        .flatMap((line, i) =>
          /\b(process\.env|Bun\.env|import\.meta\.env)\b/.test(line.replace(/\/\/.*$|^\s*\*.*$/, ""))
            ? [`${f.path}:${i + 1}: reads the environment; add a row to src/config/settings.ts instead`]
            : [],
        ),
    );
}

describe("the environment", () => {
  test("is read only by src/config (and handed over once by src/main.ts)", () => {
    const files = readTree(join(ROOT, "src"));
    // Vacuity guard: the entry point is where the rule says, and it does read the environment.
    expect(files.find((f) => f.path === "main.ts")?.text).toContain("process.env");
    expect(envReaders(files)).toEqual([]);
  });

  test("a module reading it is caught; a comment naming it is not", () => {
    const files: SourceFile[] = [
      { path: "videos/service.ts", text: "const x = process.env.VSEARCH_X;\n// process.env is read in config\n" },
      { path: "search/indexes.ts", text: 'const y = Bun.env["VSEARCH_Y"];' },
      { path: "main.ts", text: "runCli(process.argv, process.env);" },
    ];
    expect(envReaders(files)).toEqual([
      "videos/service.ts:1: reads the environment; add a row to src/config/settings.ts instead",
      "search/indexes.ts:1: reads the environment; add a row to src/config/settings.ts instead",
    ]);
  });
});
