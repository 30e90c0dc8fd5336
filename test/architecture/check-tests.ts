/**
 * The rules of test/ (issue 10): tests go through HTTP, the CLI, services or stores. As a pure
 * checker over a list of files (test-rules.test.ts runs it on the real tree and on synthetic ones).
 *
 *  app-internals  No test reads `app.internals` (the benchmark seam: db, runner, pools, search
 *             internals): no `.internals` / `?.internals` access, no `{ internals }` destructuring,
 *             no "internals" string key (`app["internals"]`, `Reflect.get(app, "internals")`).
 *  database   Only test/helpers/stores.ts opens a database: nothing else imports `bun:sqlite`,
 *             `postgres` or src/store/ (openDatabase, migrate) — statically, dynamically or with require.
 *  sql        No SQL text in a test: no string, template or `+` concatenation of literals that
 *             starts like an SQL statement (SELECT … FROM, INSERT INTO, UPDATE … SET, DELETE FROM,
 *             CREATE/DROP/ALTER, PRAGMA, ATTACH, VACUUM, WITH … AS), in any letter case.
 *
 * Why both of the last two: to run SQL a test needs a handle and the statement. A handle can only
 * come from the stores helper (database) or the seam (internals), and the statement would have to
 * be spelled (sql). Prose and hostile inputs that merely contain SQL words ("accounts delete from
 * the CLI", `'; DROP TABLE x; --`) do not start like a statement and pass; the same matcher finds
 * nearly every statement src/ runs (test-rules.test.ts checks that it does).
 * Parsed with the TypeScript compiler, so comments never count and every string does.
 */
import { dirname, posix } from "node:path";
import ts from "typescript";
import { importSpecs, type SourceFile } from "./check-imports.ts";

export type TestRule = "app-internals" | "database" | "sql";

/** A file allowed to break one rule, and why. Entries that no longer match fail, so the list only shrinks. */
export interface TestRuleException {
  /** Path relative to test/; one ending in "/" covers every file under that folder. */
  file: string;
  rule: TestRule;
  reason: string;
}

/** The one file under test/ that opens a database (and hands out stores). */
export const DATABASE_OPENER = "helpers/stores.ts";

const SQL_START =
  /^[\s(]*(?:SELECT\s[\s\S]*?\bFROM\s|SELECT\s+(?:\d|\*|\w+\s*\()|WITH\s+(?:RECURSIVE\s+)?\w+\s+AS\s*\(|INSERT\s+(?:OR\s+\w+\s+)?INTO\s|REPLACE\s+INTO\s|UPDATE\s+(?:OR\s+\w+\s+)?["\w.]+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(?:VIRTUAL\s+|TEMP(?:ORARY)?\s+|UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\s|DROP\s+(?:TABLE|INDEX|TRIGGER|VIEW)\s+\S|ALTER\s+TABLE\s|PRAGMA\s+\w|ATTACH\s+(?:DATABASE\s+)?\S|VACUUM\b)/i;

export const looksLikeSql = (text: string): boolean => SQL_START.test(text);

/** The text of a literal, a template (`?` for each `${…}`) or a `+` chain of them; null for anything else. */
function literalText(n: ts.Node): string | null {
  if (ts.isStringLiteralLike(n)) return n.text;
  if (ts.isTemplateExpression(n)) return n.head.text + n.templateSpans.map((s) => `?${s.literal.text}`).join("");
  if (ts.isParenthesizedExpression(n)) return literalText(n.expression);
  if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const l = literalText(n.left);
    const r = literalText(n.right);
    if (l === null && r === null) return null;
    return `${l ?? "?"}${r ?? "?"}`;
  }
  return null;
}

/** Every string in the file that starts like an SQL statement: `[line, text]`. */
export function sqlTexts(f: SourceFile): [number, string][] {
  const sf = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true);
  const out = new Map<number, string>();
  const visit = (n: ts.Node) => {
    const text = literalText(n);
    if (text !== null && looksLikeSql(text)) {
      const line = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
      if (!out.has(line)) out.set(line, text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return [...out];
}

/** Lines that reach for `internals`. */
function internalsReads(f: SourceFile): number[] {
  const sf = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true);
  const lines = new Set<number>();
  const visit = (n: ts.Node) => {
    const hit =
      (ts.isPropertyAccessExpression(n) && n.name.text === "internals") ||
      (ts.isStringLiteralLike(n) && n.text === "internals") ||
      (ts.isBindingElement(n) &&
        ts.isObjectBindingPattern(n.parent) &&
        (n.propertyName ?? n.name).getText(sf) === "internals");
    if (hit) lines.add(sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return [...lines].sort((a, b) => a - b);
}

/** Imports that open a database: bun:sqlite, or anything under src/store/. */
function databaseImports(f: SourceFile): string[] {
  return importSpecs(f.text).filter((spec) => {
    if (spec === "bun:sqlite" || spec === "sqlite" || spec === "node:sqlite" || spec === "postgres") return true;
    if (!spec.startsWith(".")) return false;
    const target = posix.normalize(posix.join("test", dirname(f.path), spec));
    return target === "src/store" || target.startsWith("src/store/");
  });
}

/** Every rule broken, one readable line each; empty when test/ keeps them. */
export function checkTests(files: SourceFile[], exceptions: TestRuleException[]): string[] {
  const problems: string[] = [];
  const used = new Set<TestRuleException>();
  const excused = (file: string, rule: TestRule) => {
    const e = exceptions.find(
      (x) => (x.file === file || (x.file.endsWith("/") && file.startsWith(x.file))) && x.rule === rule,
    );
    if (e) used.add(e);
    return Boolean(e);
  };
  for (const f of files) {
    const internals = internalsReads(f);
    if (internals.length && !excused(f.path, "app-internals")) {
      problems.push(
        `${f.path}:${internals.join(",")}: reads app.internals (a benchmark seam); go through HTTP, services or t.stores`,
      );
    }
    const opens = f.path === DATABASE_OPENER ? [] : databaseImports(f);
    if (opens.length && !excused(f.path, "database")) {
      problems.push(
        `${f.path}: opens a database (imports ${opens.join(", ")}); read and set up state through ${DATABASE_OPENER}`,
      );
    }
    const sql = sqlTexts(f);
    if (sql.length && !excused(f.path, "sql")) {
      for (const [line, text] of sql) {
        problems.push(
          `${f.path}:${line}: SQL text ${JSON.stringify(text.trim().slice(0, 60))}; use a store method (a narrow new one in src/<domain>/store.ts if none fits)`,
        );
      }
    }
  }
  for (const e of exceptions) {
    if (!used.has(e)) problems.push(`exception ${e.file} (${e.rule}) matches nothing any more: remove it`);
  }
  return problems;
}
