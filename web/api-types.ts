/**
 * The dashboard's API types, generated from the OpenAPI document the server serves at
 * `/v1/openapi.json` (openapi-typescript), into `web/src/openapi.gen.ts`; `web/src/api.ts` hands
 * them to openapi-fetch, so every call's path, parameters, body and answer are typed by the same
 * zod schemas that validate the request on the server.
 *
 * `bun build.ts` regenerates the file (bundleWeb with `generateClient`) and typechecks the
 * dashboard against it: an API change that breaks a page stops the build. The file is committed so
 * editors and `tsc` see it; test/api/dashboard-client.test.ts fails when it differs from what the
 * served document generates. Everything here runs offline: the document comes from the code itself
 * (`vsearch openapi` on a throwaway data dir), never from a network.
 *
 *   bun web/api-types.ts            regenerate web/src/openapi.gen.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const WEB = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(WEB);
export const API_TYPES_FILE = join(WEB, "src", "openapi.gen.ts");

const HEADER = [
  "// Generated from /v1/openapi.json by web/api-types.ts (openapi-typescript). Do not edit:",
  "// `bun web/api-types.ts` regenerates it, and so does `bun build.ts`.",
  "",
].join("\n");

const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));

/** The TypeScript text of the document's types; a `format: binary` string is a Blob (a File is one). */
export async function generateApiTypes(document: object): Promise<string> {
  const ast = await openapiTS(document as never, {
    // A default is what the server assumes when a client leaves a field out: optional to send.
    defaultNonNullable: false,
    transform(schema) {
      const s = schema as { format?: string; contentMediaType?: string };
      if (s.format === "binary" || s.contentMediaType === "application/octet-stream") return BLOB;
      return undefined;
    },
  });
  return HEADER + astToString(ast);
}

/** The served document, from the code in this tree: `vsearch openapi` on a throwaway data dir. */
export async function servedDocument(): Promise<object> {
  const dataDir = mkdtempSync(join(tmpdir(), "vsearch-openapi-"));
  try {
    const p = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), "--data-dir", dataDir, "openapi"], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, VSEARCH_LOG_LEVEL: "silent" },
    });
    const [out, err, code] = await Promise.all([
      new Response(p.stdout).text(),
      new Response(p.stderr).text(),
      p.exited,
    ]);
    if (code !== 0) throw new Error(`vsearch openapi exited ${code}: ${err.trim()}`);
    return JSON.parse(out) as object;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Rewrites web/src/openapi.gen.ts when the document's types changed; says whether it did. */
export async function syncApiTypes(document?: object): Promise<boolean> {
  const text = await generateApiTypes(document ?? (await servedDocument()));
  const file = Bun.file(API_TYPES_FILE);
  if ((await file.exists()) && (await file.text()) === text) return false;
  await Bun.write(API_TYPES_FILE, text);
  return true;
}

/** `tsc --noEmit -p web`: the dashboard against the generated types. Throws with tsc's report. */
export async function typecheckDashboard(tsconfig = join(WEB, "tsconfig.json")): Promise<void> {
  const tsc = join(ROOT, "node_modules", ".bin", "tsc");
  const p = Bun.spawn([tsc, "--noEmit", "-p", tsconfig], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`the dashboard does not typecheck against the API (tsc -p web):\n${out}${err}`);
}

if (import.meta.main) {
  const changed = await syncApiTypes();
  console.log(changed ? `regenerated ${API_TYPES_FILE}` : `${API_TYPES_FILE} is up to date`);
}
