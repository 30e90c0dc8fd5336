/**
 * Issue 23: no floating promises (rule in check-floating.ts). Every Promise an expression statement
 * makes is awaited, returned, assigned, passed on or explicitly voided with a comment saying why
 * it may run on; the safety net for store methods turning async. The real tree is checked with
 * the TypeScript checker over tsconfig.json's files (src/, test/, bench/, scripts/, build.ts): one
 * program, ~50 s of CPU (13 s to build it, 37 s to walk; measured on this 2-core machine at load
 * 32), so its timeout is generous.
 */
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, test } from "vitest";
import { findFloating, floatingIn, programOf } from "./check-floating.ts";

const ROOT = join(import.meta.dirname, "..", "..");

describe("floating promises", () => {
  test("none in src/, test/, bench/, scripts/ and build.ts", () => {
    const program = programOf(join(ROOT, "tsconfig.json"));
    const ours = program.getSourceFiles().filter((f) => !f.fileName.includes("/node_modules/"));
    // Vacuity guard: the program holds the tree (a wrong tsconfig or root would pass vacuously).
    expect(ours.filter((f) => f.fileName.startsWith(join(ROOT, "src"))).length).toBeGreaterThan(250);
    expect(ours.filter((f) => f.fileName.startsWith(join(ROOT, "test"))).length).toBeGreaterThan(150);
    const found = findFloating(program, ROOT, ["src", "test", "bench", "scripts", "build.ts"]);
    expect(found.map((f) => `${f.file}:${f.line}: ${f.text}`)).toEqual([]);
  }, 600_000);
});

describe("the checker, on a synthetic file", () => {
  const FILE = join(ROOT, "test", "architecture", "__floating_probe__.ts");
  const SOURCE = [
    "async function work(): Promise<number> { return 1; }", // 1
    "declare function lazy(): PromiseLike<number>;",
    "class Store { async save(): Promise<void> {} get(): number { return 1; } }",
    "const s = new Store();",
    "export async function main(flag: boolean): Promise<number> {", // 5
    "  work();", // floating call
    "  work().then((n) => n + 1);", // floating .then()
    "  s.save();", // a promise-returning method on a class
    "  lazy();", // any thenable
    "  flag ? work() : undefined;", // 10: a promise on one branch
    "  (async () => {})();", // a floating async IIFE
    "  [1, 2].forEach(async () => { work(); });", // the inner call floats
    "  await work();",
    "  void work(); // settled elsewhere",
    "  const p = work();", // 15
    "  let q: Promise<number>;",
    "  q = work();",
    "  [1].map(() => work());",
    "  s.get();",
    "  work().catch(() => 0);", // 20: rejection handled
    "  work().then(() => 0, () => 0);",
    "  await Promise.all([p, q]);",
    "  return work();",
    "}",
  ].join("\n");

  function probe() {
    const options: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], strict: true };
    const host = ts.createCompilerHost(options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, lang, ...rest) =>
      name === FILE ? ts.createSourceFile(name, SOURCE, lang, true) : getSourceFile(name, lang, ...rest);
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => name === FILE || fileExists(name);
    const program = ts.createProgram({ rootNames: [FILE], options, host });
    return floatingIn(program.getTypeChecker(), program.getSourceFile(FILE)!, ROOT);
  }

  test("catches a floating call, .then(), class method, thenable, branch, IIFE and callback body; accepts the rest", () => {
    expect(probe().map((f) => `${f.line}: ${f.text}`)).toEqual([
      "6: work();",
      "7: work().then((n) => n + 1);",
      "8: s.save();",
      "9: lazy();",
      "10: flag ? work() : undefined;",
      "11: (async () => {})();",
      "12: work();",
    ]);
  }, 60_000);
});
