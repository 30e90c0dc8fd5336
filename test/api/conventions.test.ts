import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Hono } from "hono";
import { testBackend } from "../pg/backend.ts";
import { handleError } from "../../src/http/errors.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { allCollections } from "../helpers/stores.ts";

let t: TestApp;
let tenant: Tenant;
beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t);
});
afterAll(() => t.close());

const count = async () => await allCollections(t.stores);

describe("HTTP conventions (SPEC §2)", () => {
  test("success envelope carries request_id and took_ms, mirrored in X-Request-Id", async () => {
    const res = await t.request("GET", "/v1/collections", { token: tenant.key });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.meta.request_id).toMatch(/^req_[0-9A-Za-z]{20}$/);
    expect(typeof body.meta.took_ms).toBe("number");
    expect(res.headers.get("x-request-id")).toBe(body.meta.request_id);
    expect(body.data).toEqual([]);
  });

  test("a caller-supplied X-Request-Id is kept; a hostile one is replaced", async () => {
    const kept = await t.request("GET", "/v1/collections", {
      token: tenant.key,
      headers: { "x-request-id": "trace-123" },
    });
    expect((await json(kept)).meta.request_id).toBe("trace-123");
    const replaced = await t.request("GET", "/v1/collections", {
      token: tenant.key,
      headers: { "x-request-id": "bad id\u0007" },
    });
    expect((await json(replaced)).meta.request_id).toMatch(/^req_/);
  });

  test("unknown routes are 404 in the error shape", async () => {
    const res = await t.request("GET", "/v1/nope", { token: tenant.key });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({ detail: { code: "NOT_FOUND", message: expect.stringContaining("/v1/nope") } });
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  test("malformed JSON is a 422 detail[] and changes nothing", async () => {
    const before = await count();
    const res = await t.request("POST", "/v1/collections", {
      token: tenant.key,
      body: "{bad",
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.detail[0]).toMatchObject({ loc: ["body"], type: "json_invalid" });
    expect(await count()).toBe(before);
  });

  test("wrong content type is a 422 detail[]", async () => {
    const res = await t.request("POST", "/v1/collections", {
      token: tenant.key,
      body: "name=x",
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({ loc: ["body"], type: "content_type" });
  });

  test("a missing body is a 422 with loc body.name", async () => {
    const res = await t.request("POST", "/v1/collections", { token: tenant.key });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({
      loc: ["body", "name"],
      type: "missing",
      msg: "Field required",
    });
  });

  test("non-UTF-8 bytes are refused, not stored as replacement characters", async () => {
    const before = await count();
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"name":"caf'),
      0xe9,
      ...new TextEncoder().encode('"}'),
    ]);
    const res = await t.request("POST", "/v1/collections", {
      token: tenant.key,
      body: bytes,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0].type).toBe("unicode_decode_error");
    expect(await count()).toBe(before);
  });

  test("huge bodies are capped with 413", async () => {
    const res = await t.request("POST", "/v1/collections", {
      token: tenant.key,
      json: { name: "x".repeat(2 * 1024 * 1024) },
    });
    expect(res.status).toBe(413);
    expect((await json(res)).detail.code).toBe("PAYLOAD_TOO_LARGE");
  });

  test("unexpected errors are 500 INTERNAL_ERROR without a stack trace", async () => {
    const app = new Hono<any>();
    app.use("*", async (c, next) => {
      c.set("requestId", "req_x");
      await next();
    });
    app.onError(handleError);
    app.get("/boom", () => {
      throw new Error("secret internals at /src/db.ts:42");
    });
    const res = await app.fetch(new Request("http://x/boom"));
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text).detail.code).toBe("INTERNAL_ERROR");
    expect(text).not.toContain("secret internals");
    expect(text).not.toContain("db.ts");
  });

  test("OpenAPI 3.1 document is generated from the validating schemas", async () => {
    const res = await t.request("GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = await json(res);
    expect(doc.openapi).toBe("3.1.0");
    const post = doc.paths["/v1/collections"].post;
    const schema = post.requestBody.content["application/json"].schema;
    const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
    expect(resolved.properties.name).toMatchObject({ minLength: 1, maxLength: 255 });
    expect(post.responses["422"]).toBeDefined();
    expect(doc.paths["/v1/api_keys"].get.security).toEqual([{ sessionToken: [] }]);
  });

  test("healthz, readyz and metrics", async () => {
    expect((await t.request("GET", "/healthz")).status).toBe(200);
    const ready = await t.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect((await json(ready)).checks.database).toBe("ok");
    await t.request("GET", "/v1/collections", { token: tenant.key });
    const metrics = await (await t.request("GET", "/metrics")).text();
    expect(metrics).toMatch(
      /vsearch_http_requests_total\{(instance="[^"]+",)?route="\/v1\/collections",method="GET",status="200"\} \d+/,
    );
    expect(metrics).toContain("# TYPE vsearch_http_request_duration_seconds histogram");
    expect(metrics).toContain("# TYPE vsearch_jobs gauge");
    // On PostgreSQL several processes share the database: every sample says which node it is from.
    const samples = metrics.split("\n").filter((l) => l.startsWith("vsearch_"));
    const nodeId = readFileSync(join(t.dir, "node-id"), "utf8").trim();
    const labelled = samples.filter((l) => l.includes(`instance="${nodeId}"`));
    expect(labelled.length).toBe(testBackend() === "postgres" ? samples.length : 0);
  });
});
