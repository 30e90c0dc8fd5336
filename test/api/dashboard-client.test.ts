/**
 * Issue 23: the dashboard's API client is typed from the served OpenAPI document. The committed
 * types (web/src/openapi.gen.ts) must be what the document served right now generates, and the
 * dashboard must typecheck against them; a change to the API that breaks a page fails here (and in
 * `bun build.ts`, which regenerates them).
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { API_TYPES_FILE, generateApiTypes, typecheckDashboard } from "../../web/api-types.ts";
import { startTestApp, type TestApp } from "../helpers/app.ts";

const ROOT = join(import.meta.dirname, "..", "..");
let t: TestApp;
let doc: any;
beforeAll(async () => {
  t = await startTestApp();
  doc = await (await t.request("GET", "/v1/openapi.json")).json();
});
afterAll(() => t.close());

describe("the dashboard's typed API client (issue 23)", () => {
  test("web/src/openapi.gen.ts is what the served document generates (fix: bun web/api-types.ts)", async () => {
    const generated = await generateApiTypes(doc);
    expect(generated.length).toBeGreaterThan(10_000);
    expect(await Bun.file(API_TYPES_FILE).text()).toBe(generated);
  }, 60_000);

  test("a drifted document generates different types (the comparison above can fail)", async () => {
    const drifted = structuredClone(doc);
    drifted.components.schemas.Video.properties.filename.description = "changed";
    delete drifted.paths["/v1/collections"];
    const text = await generateApiTypes(drifted);
    expect(text).not.toBe(await Bun.file(API_TYPES_FILE).text());
    expect(text).not.toContain('"/v1/collections": {');
  }, 60_000);

  test("uploaded files are typed Blob (File is one), not string", async () => {
    const file = doc.paths["/v1/upload"].post.requestBody.content["multipart/form-data"].schema.properties.file;
    expect(file).toMatchObject({ type: "string", format: "binary", contentMediaType: "application/octet-stream" });
    const text = await Bun.file(API_TYPES_FILE).text();
    const upload = text.slice(text.indexOf("uploadVideo: {"));
    expect(upload.slice(0, upload.indexOf("responses:"))).toMatch(/file: Blob;/);
  });

  test("the dashboard typechecks against the generated types, and fails against a drifted API", async () => {
    await typecheckDashboard();
    // The same pages against a document whose videos lost `filename` and whose collections route is gone.
    const probe = join(ROOT, `.dashboard-typecheck-probe-${process.pid}`);
    try {
      mkdirSync(probe, { recursive: true });
      cpSync(join(ROOT, "web", "src"), join(probe, "src"), { recursive: true });
      writeFileSync(
        join(probe, "tsconfig.json"),
        JSON.stringify({ extends: "../web/tsconfig.json", include: ["src"] }),
      );
      const drifted = structuredClone(doc);
      delete drifted.components.schemas.Video.properties.filename;
      drifted.components.schemas.Video.required = drifted.components.schemas.Video.required.filter(
        (k: string) => k !== "filename",
      );
      delete drifted.paths["/v1/collections"];
      writeFileSync(join(probe, "src", "openapi.gen.ts"), await generateApiTypes(drifted));
      const failure = await typecheckDashboard(join(probe, "tsconfig.json")).then(
        () => null,
        (e: Error) => e.message,
      );
      expect(failure).toMatch(/"\/v1\/collections"/);
      expect(failure).toMatch(/filename/);
    } finally {
      rmSync(probe, { recursive: true, force: true });
    }
  }, 180_000);
});
