/**
 * Which test files the `pg` vitest project runs: every file that opens a store — an app
 * (test/helpers/app.ts, server.ts), a CLI process (cli.ts), the test stores (stores.ts), or the
 * store itself — through any chain of relative imports inside test/. A file that never opens one
 * (vector math, media decoding, inference, config parsing, docs) cannot change with the backend:
 * it runs once, in the `sqlite` project. Read from the files' import lines, so a new test that
 * starts an app is on both backends without being listed.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..", "..");
/** Modules whose importers open a store. */
const OPENERS = [
  "test/helpers/app.ts",
  "test/helpers/server.ts",
  "test/helpers/stores.ts",
  "test/helpers/cli.ts",
  "src/app.ts",
  "src/main.ts",
  "src/store/database.ts",
].map((p) => join(ROOT, p));

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+["'](\.{1,2}\/[^"']+)["']/g;

function testFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "fixtures" && e.name !== "node_modules") testFiles(p, out);
    } else if (e.name.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

const memo = new Map<string, boolean>();

/** Whether `file` reaches an opener through relative imports (only files under test/ are followed). */
function opensStore(file: string, stack = new Set<string>()): boolean {
  const known = memo.get(file);
  if (known !== undefined) return known;
  if (stack.has(file)) return false;
  stack.add(file);
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return false;
  }
  let found = false;
  for (const m of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), m[1]);
    if (OPENERS.includes(target)) found = true;
    else if (target.startsWith(join(ROOT, "test")) && target.endsWith(".ts")) found = opensStore(target, stack);
    if (found) break;
  }
  stack.delete(file);
  memo.set(file, found);
  return found;
}

/** Test files (relative to the repo root) that open a store. */
export function storeTestFiles(): string[] {
  return testFiles(join(ROOT, "test"))
    .filter((f) => opensStore(f))
    .map((f) => relative(ROOT, f))
    .sort();
}
