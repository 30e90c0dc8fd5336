/**
 * The error catalogue's rules (issue 23), as pure functions over source texts so the checker can
 * be tested on synthetic files:
 *   - every code the source answers with is a catalogue row (a cast or a plain-JS file could slip
 *     past the compiler);
 *   - every row is answered somewhere (the list only holds what is real);
 *   - an error body is written only by src/http/errors.ts (`errorResponse`, `errorJson`), so no
 *     status is paired with a code by hand;
 *   - a code named in the OpenAPI document or in a docs table sits under its catalogue status.
 *
 * "Answered with" means: the code argument of `new AppError(code, …)`, `notFound(code, …)`,
 * `errorResponse(c, code, …)`, `errorJson(code, …)` (CODE_ARGUMENT), or a string
 * `satisfies ErrorCode` (a constant passed on). Literals inside `a ? "X" : "Y"` and `a ?? "X"` count.
 */
import ts from "typescript";
import type { SourceFile } from "./check-imports.ts";

/** Where each call takes its code (argument index). */
export const CODE_ARGUMENT: Record<string, number> = {
  AppError: 0,
  notFound: 0,
  errorJson: 0,
  errorResponse: 1,
  errorWithStatus: 2, // src/http/errors.ts, private: HTTP_ERROR with the framework's status
};
/** The one file allowed to write `{ detail: { code, … } }`. */
export const ERROR_BODY_WRITER = "http/errors.ts";

export interface CodeUse {
  code: string;
  file: string;
  line: number;
}

const lineOf = (sf: ts.SourceFile, node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;

function literalsOf(e: ts.Expression): ts.StringLiteralLike[] {
  if (ts.isStringLiteralLike(e)) return [e];
  if (ts.isParenthesizedExpression(e) || ts.isSatisfiesExpression(e) || ts.isAsExpression(e))
    return literalsOf(e.expression);
  if (ts.isConditionalExpression(e)) return [...literalsOf(e.whenTrue), ...literalsOf(e.whenFalse)];
  if (
    ts.isBinaryExpression(e) &&
    [ts.SyntaxKind.QuestionQuestionToken, ts.SyntaxKind.BarBarToken].includes(e.operatorToken.kind)
  )
    return [...literalsOf(e.left), ...literalsOf(e.right)];
  return [];
}

const calleeName = (e: ts.LeftHandSideExpression): string | undefined =>
  ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : undefined;

/** The codes the files answer with, and where; plus hand-written error bodies. */
export function scanCodes(files: SourceFile[]): { uses: CodeUse[]; handWrittenBodies: CodeUse[] } {
  const uses: CodeUse[] = [];
  const handWrittenBodies: CodeUse[] = [];
  for (const f of files) {
    const sf = ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const name = calleeName(node.expression);
        const at = name === undefined ? undefined : CODE_ARGUMENT[name];
        const arg = at === undefined ? undefined : node.arguments?.[at];
        if (arg) for (const l of literalsOf(arg)) uses.push({ code: l.text, file: f.path, line: lineOf(sf, l) });
      }
      if (ts.isSatisfiesExpression(node) && node.type.getText(sf) === "ErrorCode")
        for (const l of literalsOf(node.expression)) uses.push({ code: l.text, file: f.path, line: lineOf(sf, l) });
      if (
        ts.isPropertyAssignment(node) &&
        node.name.getText(sf) === "detail" &&
        ts.isObjectLiteralExpression(node.initializer) &&
        node.initializer.properties.some((p) => p.name?.getText(sf) === "code") &&
        f.path !== ERROR_BODY_WRITER
      ) {
        const code = node.initializer.properties.find((p) => p.name?.getText(sf) === "code");
        const lit = code && ts.isPropertyAssignment(code) ? literalsOf(code.initializer)[0] : undefined;
        handWrittenBodies.push({ code: lit?.text ?? "(computed)", file: f.path, line: lineOf(sf, node) });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { uses, handWrittenBodies };
}

/** Violations of the source rules, one line each; empty when the tree keeps them. */
export function checkCodes(files: SourceFile[], catalogue: Record<string, { status: number }>): string[] {
  const { uses, handWrittenBodies } = scanCodes(files);
  const out: string[] = [];
  for (const u of uses)
    if (!Object.hasOwn(catalogue, u.code))
      out.push(`${u.file}:${u.line}: ${u.code} is not in the error catalogue (src/core/error-codes.ts)`);
  for (const b of handWrittenBodies)
    out.push(
      `${b.file}:${b.line}: an error body (${b.code}) written by hand; use errorResponse/errorJson (src/http/errors.ts) so its status is the catalogue's`,
    );
  const used = new Set(uses.map((u) => u.code));
  for (const code of Object.keys(catalogue))
    if (!used.has(code))
      out.push(`src/core/error-codes.ts: ${code} is answered nowhere; remove its row (or throw it where it happens)`);
  return out;
}

/** Tokens that look like codes: UPPER_SNAKE with an underscore, or a catalogue key. */
export function codeTokens(text: string, catalogue: Record<string, unknown>): string[] {
  return (text.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b/g) ?? []).filter(
    (t) => t.includes("_") || Object.hasOwn(catalogue, t),
  );
}

interface OpenApiDoc {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, OpenApiResponse> }>>;
}
interface OpenApiResponse {
  description?: string;
  "x-error-codes"?: string[];
}

/** A code named in an error response of the document under another status than the catalogue's. */
export function checkOpenApi(doc: OpenApiDoc, catalogue: Record<string, { status: number }>): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        if (Number(status) < 400) continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const named = [...codeTokens(r.description ?? "", catalogue), ...(r["x-error-codes"] ?? [])];
        for (const code of new Set(named)) {
          const entry = catalogue[code];
          if (!entry) out.push(`${where}: ${code} is not in the error catalogue`);
          else if (entry.status !== Number(status))
            out.push(`${where}: ${code} is documented under ${status}; the catalogue answers it with ${entry.status}`);
        }
      }
  return out;
}

/** Markdown table rows "| `CODE` | 404 | …" whose status is not the catalogue's. */
export function checkDocTables(docs: SourceFile[], catalogue: Record<string, { status: number }>): string[] {
  const out: string[] = [];
  for (const d of docs)
    d.text.split("\n").forEach((line, i) => {
      const m = /^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|\s*([^|]+?)\s*\|/.exec(line);
      if (!m || !/^\d{3}\b/.test(m[2])) return;
      const entry = catalogue[m[1]];
      if (!entry) out.push(`${d.path}:${i + 1}: ${m[1]} is not in the error catalogue`);
      else if (m[2] !== String(entry.status))
        out.push(`${d.path}:${i + 1}: ${m[1]} is listed as ${m[2]}; the catalogue answers it with ${entry.status}`);
    });
  return out;
}
