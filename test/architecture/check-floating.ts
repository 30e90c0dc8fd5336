/**
 * The floating-promise rule (issue 23), with the TypeScript checker: an expression statement whose
 * value is a Promise (or any thenable) must be awaited, returned, assigned, passed on, or voided
 * (`void p; // why it may run on`). A promise left on its own loses its rejection (an unhandled
 * rejection, or a failure nobody sees) and its completion (work still running when the caller
 * believes it done): the safety net for store methods turning async.
 *
 * Accepted as handled, as typescript-eslint's no-floating-promises does: a chain ending in
 * `.catch(handler)` or `.then(onFulfilled, onRejected)`.
 */
import { dirname, join, relative } from "node:path";
import ts from "typescript";

export interface Floating {
  file: string;
  line: number;
  text: string;
}

/** The program of the repository's tsconfig.json (every file it includes). */
export function programOf(tsconfigPath: string): ts.Program {
  const read = ts.readConfigFile(tsconfigPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfigPath));
  return ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
}

function isThenable(checker: ts.TypeChecker, type: ts.Type): boolean {
  if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return false;
  if (type.isUnion()) return type.types.some((t) => isThenable(checker, t));
  const then = checker.getPropertyOfType(type, "then");
  if (!then) return false;
  const thenType = checker.getNonNullableType(checker.getTypeOfSymbol(then));
  return thenType.getCallSignatures().length > 0;
}

/** `.catch(h)` or `.then(a, b)` at the end of the chain: the rejection has a handler. */
function isHandled(e: ts.Expression): boolean {
  if (!ts.isCallExpression(e) || !ts.isPropertyAccessExpression(e.expression)) return false;
  const method = e.expression.name.text;
  return (method === "catch" && e.arguments.length >= 1) || (method === "then" && e.arguments.length >= 2);
}

const unwrap = (e: ts.Expression): ts.Expression => (ts.isParenthesizedExpression(e) ? unwrap(e.expression) : e);

/** The floating promises of one file. */
export function floatingIn(checker: ts.TypeChecker, sf: ts.SourceFile, root: string): Floating[] {
  const out: Floating[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isExpressionStatement(node)) {
      const e = unwrap(node.expression);
      const settled =
        ts.isVoidExpression(e) ||
        ts.isAwaitExpression(e) ||
        (ts.isBinaryExpression(e) &&
          e.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
          e.operatorToken.kind <= ts.SyntaxKind.LastAssignment) ||
        isHandled(e);
      if (!settled && isThenable(checker, checker.getTypeAtLocation(e))) {
        const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        out.push({
          file: relative(root, sf.fileName).split("\\").join("/"),
          line: line + 1,
          text: node.getText(sf).split("\n")[0].slice(0, 100),
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Floating promises in the program's files under `folders` (relative to `root`). */
export function findFloating(program: ts.Program, root: string, folders: string[]): Floating[] {
  const checker = program.getTypeChecker();
  const inScope = (f: string) => folders.some((d) => !relative(join(root, d), f).startsWith(".."));
  return program
    .getSourceFiles()
    .filter((sf) => !sf.isDeclarationFile && !sf.fileName.includes("/node_modules/") && inScope(sf.fileName))
    .flatMap((sf) => floatingIn(checker, sf, root));
}
