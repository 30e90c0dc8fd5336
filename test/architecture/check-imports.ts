/**
 * The import rules of src/ (issue 10), as a pure checker over a list of files so that it can be
 * tested on a synthetic tree as well as run on the real one (imports.test.ts).
 *
 * Nodes are the top-level entries of src/: a folder ("search/") or a root file ("app.ts").
 * Rules:
 *  1. A domain folder (one holding service.ts or store.ts) never imports api/, commands/, http/,
 *     cli/, app.ts or Hono; a schema.ts may import @hono/zod-openapi (OpenAPI metadata).
 *  2. Every node sits in a layer; an import from a lower layer to a higher one is "upward" and
 *     fails unless its file is in the allow-list (each entry says why). Imports inside one layer
 *     are fine as long as they form no cycle between nodes.
 *  3. Allow-list entries that no import uses any more fail too, so the list only shrinks.
 *  4. Only the composition root (app.ts) reads `app.internals` (the benchmark seam; test/ has its own rule, check-tests.ts).
 *  5. The store seam (issue 24): only the SQLite backend (store/sqlite/) imports bun:sqlite and
 *     only the PostgreSQL backend (store/pg/) imports postgres, unless named in
 *     `sqliteExceptions` with a reason (unused entries fail, as in 3). Stores take an Executor
 *     (store/executor.ts) and never a driver; only they and app.ts import store/database.ts (the
 *     opener). Everything else gets a UnitOfWork and stores, so a second backend changes nothing
 *     above the stores.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import ts from "typescript";

export interface SourceFile {
  /** Path relative to src/, with forward slashes. */
  path: string;
  text: string;
}

export interface AllowedUpward {
  /** The importing file, relative to src/. */
  from: string;
  /** The node it reaches up to ("videos/"). */
  to: string;
  reason: string;
}

export interface Rules {
  /** Nodes from the bottom layer up. */
  layers: string[][];
  allowUpward: AllowedUpward[];
  /** Files outside the stores allowed to import bun:sqlite, each with its reason. */
  sqliteExceptions?: { file: string; reason: string }[];
}

export interface Edge {
  file: string;
  spec: string;
  from: string;
  /** Node for a relative import inside src/; null for a package or a path outside src/. */
  to: string | null;
  /** The imported path relative to src/ for a relative import inside src/ ("store/database.ts"). */
  target: string | null;
}

const EDGE_FOLDERS = new Set(["api/", "commands/", "http/", "cli/", "app.ts"]);

export function readTree(root: string): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|tsx|mts)$/.test(name))
        out.push({ path: relative(root, p).split("\\").join("/"), text: readFileSync(p, "utf8") });
    }
  };
  walk(root);
  return out;
}

export function nodeOf(path: string): string {
  const i = path.indexOf("/");
  return i < 0 ? path : path.slice(0, i + 1);
}

/** Static imports, re-exports, `import type` and dynamic `import("…")`, as the compiler sees them. */
export function importSpecs(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

export function edgesOf(files: SourceFile[]): Edge[] {
  const edges: Edge[] = [];
  for (const f of files) {
    for (const spec of importSpecs(f.text)) {
      let to: string | null = null;
      let target: string | null = null;
      if (spec.startsWith(".")) {
        const t = posix.normalize(posix.join(dirname(f.path), spec));
        if (!t.startsWith("../")) {
          target = t;
          to = nodeOf(t);
        }
      }
      edges.push({ file: f.path, spec, from: nodeOf(f.path), to, target });
    }
  }
  return edges;
}

export function domainFolders(files: SourceFile[]): Set<string> {
  const out = new Set<string>();
  for (const f of files) {
    const parts = f.path.split("/");
    if (parts.length === 2 && (parts[1] === "service.ts" || parts[1] === "store.ts")) out.add(`${parts[0]}/`);
  }
  return out;
}

/** A store module: the files under store/, a domain's `store.ts`, or a `*-store.ts` beside it. */
export function isStoreModule(path: string): boolean {
  const base = posix.basename(path);
  return path.startsWith("store/") || base === "store.ts" || base.endsWith("-store.ts");
}

const isHono = (spec: string) => spec === "hono" || spec.startsWith("hono/") || spec.startsWith("@hono/");

/** Every rule broken, one readable line each; empty when the tree is fine. */
export function checkImports(files: SourceFile[], rules: Rules): string[] {
  const problems: string[] = [];
  const edges = edgesOf(files);
  const domains = domainFolders(files);
  const layerOf = new Map<string, number>();
  rules.layers.forEach((layer, i) => layer.forEach((n) => layerOf.set(n, i)));

  // 1. Domains never import an edge.
  for (const e of edges) {
    if (!domains.has(e.from)) continue;
    if (e.to && EDGE_FOLDERS.has(e.to))
      problems.push(`${e.file}: domain folder ${e.from} imports ${e.spec} (an edge: ${e.to})`);
    if (
      e.to === null &&
      isHono(e.spec) &&
      !(e.spec === "@hono/zod-openapi" && posix.basename(e.file) === "schema.ts")
    ) {
      problems.push(
        `${e.file}: domain folder ${e.from} imports ${e.spec} (only a schema.ts may import @hono/zod-openapi)`,
      );
    }
  }

  // 2. Layers: every node placed; no upward import outside the allow-list; no cycle in a layer.
  const nodes = new Set(files.map((f) => nodeOf(f.path)));
  for (const n of [...nodes].sort()) {
    if (!layerOf.has(n))
      problems.push(`${n} is in no layer: place it in LAYERS (test/architecture/layers.ts) and docs/ARCHITECTURE.md`);
  }
  const used = new Set<AllowedUpward>();
  const sameLayer = new Map<string, Set<string>>();
  for (const e of edges) {
    if (e.to === null || e.to === e.from) continue;
    const a = layerOf.get(e.from);
    const b = layerOf.get(e.to);
    if (a === undefined || b === undefined) continue;
    const allowed = rules.allowUpward.find((x) => x.from === e.file && x.to === e.to);
    if (b > a) {
      if (allowed) used.add(allowed);
      else
        problems.push(
          `${e.file}: upward import ${e.from} → ${e.to} (${e.spec}); turn it around or add it to the allow-list with a reason`,
        );
    } else if (a === b && !allowed) {
      (sameLayer.get(e.from) ?? sameLayer.set(e.from, new Set()).get(e.from)!).add(e.to);
    }
  }
  for (const x of rules.allowUpward) {
    if (!used.has(x))
      problems.push(`allow-list entry ${x.from} → ${x.to} matches no upward import any more: remove it`);
  }
  for (const group of findCycles(sameLayer)) problems.push(`import cycle inside a layer among ${group.join(", ")}`);

  // 4. The test seam stays a test seam.
  for (const f of files) {
    if (f.path !== "app.ts" && /\.internals\b/.test(f.text))
      problems.push(`${f.path}: reads app.internals (a benchmark seam only; use services)`);
  }

  // 5. The store seam.
  const exceptions = rules.sqliteExceptions ?? [];
  const usedExceptions = new Set<string>();
  for (const e of edges) {
    if (e.spec === "bun:sqlite" && !e.file.startsWith("store/sqlite/")) {
      if (exceptions.some((x) => x.file === e.file)) usedExceptions.add(e.file);
      else
        problems.push(
          `${e.file}: imports bun:sqlite outside the SQLite backend (store/sqlite/); stores take an Executor (store/executor.ts), services a UnitOfWork`,
        );
    }
    if ((e.spec === "postgres" || e.spec.startsWith("postgres/")) && !e.file.startsWith("store/pg/")) {
      problems.push(
        `${e.file}: imports postgres outside the PostgreSQL backend (store/pg/); stores take an Executor (store/executor.ts)`,
      );
    }
    if (isStoreModule(e.file)) continue;
    if (e.target === "store/database.ts" && e.file !== "app.ts") {
      problems.push(
        `${e.file}: imports the database handle (store/database.ts); only stores and the composition root (app.ts) may`,
      );
    }
  }
  for (const x of exceptions) {
    if (!usedExceptions.has(x.file))
      problems.push(`bun:sqlite exception ${x.file} matches no import any more: remove it`);
  }
  return problems;
}

/** The nodes of each strongly connected group (Tarjan): each group holds at least one cycle. */
function findCycles(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) out.push(group.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}
