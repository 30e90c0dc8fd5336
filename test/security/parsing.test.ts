import { existsSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, type Tenant } from "../helpers/app.ts";
import { rawRequest, startTestServer, type TestServer } from "../helpers/server.ts";

/** Issue 9: parsing that cannot be turned against the server, errors in the documented shape. */
let s: TestServer;
let a: Tenant;
let col: string;

beforeAll(async () => {
  s = await startTestServer({ VSEARCH_MAX_UPLOAD_BYTES: String(1024 * 1024), VSEARCH_RATE_LIMIT_UPLOAD: "1000" });
  a = await createTenant(s);
  col = (
    await json(
      await s.http("/v1/collections", {
        method: "POST",
        token: a.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "c" }),
      }),
    )
  ).data.id;
});
afterAll(() => s.close());

const collectionNames = async () =>
  (await json(await s.http("/v1/collections", { token: a.key }))).data.map((c: { name: string }) => c.name).sort();
const tmpFiles = () => (existsSync(join(s.dir, "uploads", "tmp")) ? readdirSync(join(s.dir, "uploads", "tmp")) : []);

describe("deeply nested JSON", () => {
  const deep = "[".repeat(50_000) + "]".repeat(50_000);
  const deepObj = '{"name":'.repeat(20_000) + "1" + "}".repeat(20_000);

  test.each([
    ["unauthenticated sign-in", "/v1/auth/sessions", undefined, deep],
    ["authenticated collection create", "/v1/collections", "key", deepObj],
  ])("%s: 422 json_too_deep, nothing created", async (_name, path, who, body) => {
    const before = await collectionNames();
    const res = await s.http(path, {
      method: "POST",
      token: who ? a.key : undefined,
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    expect(await json(res)).toEqual({
      detail: [{ loc: ["body"], msg: expect.stringContaining("32"), type: "json_too_deep", ctx: { max_depth: 32 } }],
    });
    expect(await collectionNames()).toEqual(before);
  });

  test("a deep body is refused from its first bytes: the answer comes while the client still holds back the rest", async () => {
    // 1 MiB declared, 4 KiB of `[` sent, the rest never: the guard must answer without waiting for it.
    const res = await rawRequest(
      s.port,
      `POST /v1/collections HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.key}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n${"[".repeat(4096)}`,
      { ms: 20_000 },
    );
    expect(res.status).toBe(422);
    expect(JSON.parse(res.body).detail[0]).toMatchObject({ type: "json_too_deep", ctx: { max_depth: 32 } });
  }, 30_000);

  test("a burst of deep bodies does not hold up a cheap request", async () => {
    // Eight 100 kB deep bodies in flight, then /healthz: answered while they are served.
    const bombs = Array.from({ length: 8 }, () =>
      s
        .http("/v1/auth/sessions", { method: "POST", headers: { "content-type": "application/json" }, body: deep })
        .then((r) => r.status),
    );
    const t0 = performance.now();
    const health = await s.http("/healthz");
    const healthMs = performance.now() - t0;
    expect(health.status).toBe(200);
    expect(await Promise.all(bombs)).toEqual(Array(8).fill(422));
    // Generous on a shared 2-core machine; the precise figure is in bench/hostile-input.ts.
    expect(healthMs).toBeLessThan(1000);
  });

  test("a wide body is echoed in bounded form: ≤ 50 issues, ≤ 20 items and 256 chars per input", async () => {
    const body = JSON.stringify({ email: Array.from({ length: 9000 }, (_, i) => i), password: "p".repeat(5000) });
    const res = await s.http("/v1/auth/sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text.length).toBeLessThan(20_000);
    const detail = JSON.parse(text).detail;
    expect(detail.length).toBeLessThanOrEqual(50);
    const emailIssue = detail.find(
      (d: { loc: string[]; type: string }) => d.loc[1] === "email" && d.type === "string_type",
    );
    expect(emailIssue.input).toHaveLength(21);
    expect(emailIssue.input[20]).toBe("… 8980 more");
  });
});

describe("wide bodies", () => {
  test.each([
    [
      "100 000 urlencoded fields",
      "/v1/search",
      "application/x-www-form-urlencoded",
      "query=x&" + "modes=zz&".repeat(100_000),
      1000,
    ],
    [
      "5 000 multipart parts",
      "/v1/search",
      "multipart/form-data; boundary=B",
      `${'--B\r\nContent-Disposition: form-data; name="labels"\r\n\r\nx\r\n'.repeat(5000)}--B--\r\n`,
      1000,
    ],
    [
      "a 50 000-key JSON object",
      "/v1/collections",
      "application/json",
      JSON.stringify(Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]))),
      10_000,
    ],
  ])("%s: 422 too_many_fields before parsing", async (_n, path, ct, body, max) => {
    const before = await collectionNames();
    const res = await s.http(path, { method: "POST", token: a.key, headers: { "content-type": ct }, body });
    expect(res.status).toBe(422);
    expect((await json(res)).detail).toEqual([
      { loc: ["body"], msg: expect.any(String), type: "too_many_fields", ctx: { max } },
    ]);
    expect(await collectionNames()).toEqual(before);
  });

  test("a form at the limit is still parsed and validated field by field", async () => {
    const res = await s.http("/v1/search", {
      method: "POST",
      token: a.key,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "query=x&" + "modes=zz&".repeat(900),
    });
    expect(res.status).toBe(422);
    const detail = (await json(res)).detail;
    expect(detail.length).toBeLessThanOrEqual(50);
    expect(detail[0]).toMatchObject({ loc: ["body", "modes"] });
    expect(detail[0].input).toHaveLength(21); // 20 of the 900 values, then "… 880 more"
    expect(detail[0].input[20]).toBe("… 880 more");
  });
});

describe("the request line and headers", () => {
  test.each([
    ["HTTP/1.0 without Host", "GET /healthz HTTP/1.0\r\n\r\n"],
    ["empty Host", "GET /v1/collections HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"],
    ["invalid Host", "GET /v1/collections HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n"],
  ])("%s: 400 in the error shape", async (_n, req) => {
    const r = await rawRequest(s.port, req);
    expect(r.status).toBe(400);
    expect(r.headers["x-request-id"]).toMatch(/^req_/);
    expect(JSON.parse(r.body)).toEqual({ detail: { code: "BAD_REQUEST", message: "Missing or invalid Host header" } });
  });

  test("a declared Content-Length over the upload limit: 413 UPLOAD_TOO_LARGE in the shape, before the body is sent", async () => {
    const r = await rawRequest(
      s.port,
      `POST /v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.key}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 99999999999\r\n\r\n`,
    );
    expect(r.status).toBe(413);
    expect(r.headers["x-request-id"]).toMatch(/^req_/);
    expect(JSON.parse(r.body).detail.code).toBe("UPLOAD_TOO_LARGE");
  });

  test("wrong method: 405 METHOD_NOT_ALLOWED with Allow; unknown path stays 404", async () => {
    const res = await s.http("/v1/collections", { method: "PUT", token: a.key });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, POST");
    expect((await json(res)).detail.code).toBe("METHOD_NOT_ALLOWED");
    const item = await s.http(`/v1/collections/${col}`, { method: "POST", token: a.key });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")!.split(", ")).toEqual(expect.arrayContaining(["GET", "PATCH", "DELETE"]));
    expect((await s.http("/v1/nothing-here", { method: "PUT" })).status).toBe(404);
  });
});

describe("multipart", () => {
  const multipart = (disposition: string) =>
    `--B\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n--B\r\nContent-Disposition: ${disposition}\r\nContent-Type: video/mp4\r\n\r\nxxxx\r\n--B--\r\n`;

  test("filename*=UTF-8''%ZZ is a 422, no video, no temp file", async () => {
    const res = await s.http("/v1/upload", {
      method: "POST",
      token: a.key,
      headers: { "content-type": "multipart/form-data; boundary=B" },
      body: multipart(`form-data; name="file"; filename*=UTF-8''%ZZ.mp4`),
    });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({
      loc: ["body"],
      type: "value_error",
      msg: expect.stringContaining("filename*"),
    });
    expect((await json(await s.http("/v1/videos", { token: a.key }))).data).toEqual([]);
    expect(tmpFiles()).toEqual([]);
  });

  test("a client that abandons an upload is logged as 499 CLIENT_CLOSED_REQUEST, not a 500; the temp file goes", async () => {
    const sock = connect(s.port, "127.0.0.1");
    await new Promise((r) => sock.once("connect", r));
    sock.write(
      `POST /v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.key}\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 900000\r\n\r\n` +
        `--B\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\n` +
        "x".repeat(100_000),
    );
    await Bun.sleep(300);
    sock.destroy();
    let metrics = "";
    for (let i = 0; i < 50 && !/status="499"/.test(metrics); i++) {
      await Bun.sleep(100);
      metrics = await (await s.http("/metrics")).text();
    }
    expect(metrics).toMatch(/route="\/v1\/upload"[^\n]*status="499"|status="499"[^\n]*route="\/v1\/upload"/);
    expect(metrics).not.toMatch(/status="500"/);
    expect(tmpFiles()).toEqual([]);
  });
});
