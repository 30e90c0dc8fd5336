/**
 * Issue 10: one direction through the house. Domain folders never import an edge (api/,
 * commands/, http/, cli/, app.ts, Hono), and top-level folders import only downward through the
 * layers below, except the few allow-listed imports (also listed in docs/ARCHITECTURE.md). Only
 * the SQLite backend (store/sqlite/) holds bun:sqlite and only the PostgreSQL one (store/pg/)
 * holds postgres; stores take an Executor, the rest go through the store seam.
 */
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { checkImports, edgesOf, readTree, type Rules, type SourceFile } from "./check-imports.ts";
import { ALLOW_UPWARD, LAYERS, SQLITE_EXCEPTIONS } from "./layers.ts";

const SRC = join(import.meta.dirname, "..", "..", "src");
const RULES: Rules = { layers: LAYERS, allowUpward: ALLOW_UPWARD, sqliteExceptions: SQLITE_EXCEPTIONS };

describe("src/ import rules", () => {
  test("the real tree keeps them", () => {
    const files = readTree(SRC);
    // The walk found the tree (a wrong root would pass vacuously).
    expect(files.some((f) => f.path === "app.ts")).toBe(true);
    expect(edgesOf(files).length).toBeGreaterThan(300);
    // The backends really do hold their drivers (the seam rule is not passing on an empty set).
    expect(edgesOf(files).filter((e) => e.spec === "bun:sqlite").length).toBeGreaterThanOrEqual(4);
    expect(edgesOf(files).filter((e) => e.spec === "postgres").length).toBeGreaterThanOrEqual(4);
    expect(checkImports(files, RULES)).toEqual([]);
  });
});

describe("the checker, on a synthetic tree", () => {
  const rules: Rules = {
    layers: [["core/"], ["videos/", "jobs/"], ["http/"], ["api/"], ["app.ts"]],
    allowUpward: [],
  };
  const tree = (extra: SourceFile[] = []): SourceFile[] => [
    { path: "core/ids.ts", text: "export const id = 1;" },
    {
      path: "videos/service.ts",
      text: 'import { id } from "../core/ids.ts";\nimport type { Job } from "../jobs/store.ts";',
    },
    { path: "videos/schema.ts", text: 'import { z } from "@hono/zod-openapi";' },
    { path: "jobs/store.ts", text: "export interface Job {}" },
    { path: "http/route.ts", text: 'import type { Context } from "hono";' },
    {
      path: "api/videos.ts",
      text: 'import { ok } from "../http/route.ts";\nimport type { VideoService } from "../videos/service.ts";',
    },
    { path: "app.ts", text: 'import { register } from "./api/videos.ts";' },
    ...extra,
  ];

  test("a clean tree passes", () => {
    expect(checkImports(tree(), rules)).toEqual([]);
  });

  test("a domain importing http/, api/ or Hono fails; a schema.ts may use @hono/zod-openapi only", () => {
    const problems = checkImports(
      tree([
        { path: "videos/routes.ts", text: 'import { ok } from "../http/route.ts";' },
        { path: "jobs/service.ts", text: 'import {\n  register,\n} from "../api/videos.ts";' },
        { path: "videos/store.ts", text: 'import { Hono } from "hono";' },
        { path: "jobs/schema.ts", text: 'import { HTTPException } from "hono/http-exception";' },
        { path: "jobs/types.ts", text: 'import { z } from "@hono/zod-openapi";' },
      ]),
      rules,
    );
    const domainLines = problems.filter((p) => p.includes(": domain folder "));
    expect(domainLines).toHaveLength(5);
    // The two edge imports also point upward through the layers; the hono ones are packages.
    expect(problems.filter((p) => p.includes("upward import")).map((p) => p.split(":")[0])).toEqual([
      "videos/routes.ts",
      "jobs/service.ts",
    ]);
    expect(problems).toHaveLength(7);
    expect(domainLines[0]).toMatch(/^videos\/routes\.ts: domain folder videos\/ imports \.\.\/http\/route\.ts/);
    expect(problems.some((p) => p.startsWith("jobs/service.ts: domain folder jobs/ imports ../api/videos.ts"))).toBe(
      true,
    );
    expect(problems.some((p) => p.startsWith("videos/store.ts:") && p.includes("hono"))).toBe(true);
    expect(problems.some((p) => p.startsWith("jobs/schema.ts:") && p.includes("hono/http-exception"))).toBe(true);
    expect(problems.some((p) => p.startsWith("jobs/types.ts:") && p.includes("@hono/zod-openapi"))).toBe(true);
  });

  test("an upward import fails, also as a dynamic import, unless allow-listed; an unused entry fails", () => {
    const up = tree([{ path: "core/late.ts", text: 'const m = await import("../videos/service.ts");' }]);
    expect(checkImports(up, rules)).toEqual([
      "core/late.ts: upward import core/ → videos/ (../videos/service.ts); turn it around or add it to the allow-list with a reason",
    ]);
    const allow = { from: "core/late.ts", to: "videos/", reason: "test" };
    expect(checkImports(up, { ...rules, allowUpward: [allow] })).toEqual([]);
    expect(checkImports(tree(), { ...rules, allowUpward: [allow] })).toEqual([
      "allow-list entry core/late.ts → videos/ matches no upward import any more: remove it",
    ]);
  });

  test("a cycle inside a layer fails; a folder in no layer fails", () => {
    const cyc = tree([{ path: "jobs/runner.ts", text: 'export * from "../videos/service.ts";' }]);
    expect(checkImports(cyc, rules)).toEqual(["import cycle inside a layer among jobs/, videos/"]);
    const stray = tree([{ path: "ocr/service.ts", text: "export {};" }]);
    expect(checkImports(stray, rules)).toEqual([
      "ocr/ is in no layer: place it in LAYERS (test/architecture/layers.ts) and docs/ARCHITECTURE.md",
    ]);
  });

  test("only app.ts reads app.internals", () => {
    const leak = tree([{ path: "api/doctor.ts", text: "export const f = (app: any) => app.internals.db;" }]);
    expect(checkImports(leak, rules)).toEqual([
      "api/doctor.ts: reads app.internals (a benchmark seam only; use services)",
    ]);
  });

  test("only store/sqlite/ imports bun:sqlite and only store/pg/ postgres, unless excepted; only stores and app.ts import store/database.ts", () => {
    const stores = tree([
      { path: "store/sqlite/database.ts", text: 'import { Database } from "bun:sqlite";' },
      { path: "store/sqlite/executor.ts", text: 'import type { Database } from "bun:sqlite";' },
      { path: "store/pg/open.ts", text: 'import postgres from "postgres";' },
      { path: "store/database.ts", text: 'import { openSqliteStore } from "./sqlite/database.ts";' },
      { path: "jobs/store.ts", text: 'import type { Executor } from "../store/executor.ts";' },
      {
        path: "videos/feedback-store.ts",
        text: 'import type { Executor } from "../store/executor.ts";\nimport { openStore } from "../store/database.ts";',
      },
      // The composition root (replacing the plain app.ts) opens the store.
      {
        path: "app.ts",
        text: 'import { register } from "./api/videos.ts";\nimport { openStore } from "./store/database.ts";',
      },
    ]).filter((f) => f.path !== "app.ts" || f.text.includes("openStore"));
    const layered: Rules = { ...rules, layers: [["core/", "store/"], ...rules.layers.slice(1)] };
    expect(checkImports(stores, layered)).toEqual([]);

    const leaky = tree([
      { path: "store/database.ts", text: "export const openStore = 1;" },
      { path: "jobs/store.ts", text: 'import type { Database } from "bun:sqlite";' },
      { path: "jobs/service.ts", text: 'import type { Database } from "bun:sqlite";' },
      { path: "videos/purge.ts", text: 'const { Database } = await import("bun:sqlite");' },
      { path: "videos/store.ts", text: 'import postgres from "postgres";' },
      { path: "jobs/runner.ts", text: 'import { openStore } from "../store/database.ts";' },
    ]);
    const outside = (f: string) =>
      `${f}: imports bun:sqlite outside the SQLite backend (store/sqlite/); stores take an Executor (store/executor.ts), services a UnitOfWork`;
    expect(checkImports(leaky, layered)).toEqual([
      outside("jobs/store.ts"),
      outside("jobs/service.ts"),
      outside("videos/purge.ts"),
      "videos/store.ts: imports postgres outside the PostgreSQL backend (store/pg/); stores take an Executor (store/executor.ts)",
      "jobs/runner.ts: imports the database handle (store/database.ts); only stores and the composition root (app.ts) may",
    ]);
    const excepted = {
      ...layered,
      sqliteExceptions: [
        { file: "jobs/store.ts", reason: "test" },
        { file: "jobs/service.ts", reason: "test" },
        { file: "videos/purge.ts", reason: "test" },
      ],
    };
    expect(checkImports(leaky, excepted)).toEqual([
      "videos/store.ts: imports postgres outside the PostgreSQL backend (store/pg/); stores take an Executor (store/executor.ts)",
      "jobs/runner.ts: imports the database handle (store/database.ts); only stores and the composition root (app.ts) may",
    ]);
    expect(
      checkImports(tree(), { ...layered, sqliteExceptions: [{ file: "jobs/service.ts", reason: "test" }] }),
    ).toEqual(["bun:sqlite exception jobs/service.ts matches no import any more: remove it"]);
  });
});
