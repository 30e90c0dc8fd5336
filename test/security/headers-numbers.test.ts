import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, json, type Tenant } from "../helpers/app.ts";
import { rawRequest, startTestServer, type TestServer } from "../helpers/server.ts";

/**
 * Issue 21: every answer says `X-Content-Type-Options: nosniff`, an authenticated JSON answer
 * `Cache-Control: no-store`; and numbers in query strings and form fields are plain decimal only
 * (`start=0x10` read as 16 before; now a 422 naming the field), for every numeric parameter.
 */
let s: TestServer;
let a: Tenant;
let webhookId: string;
const VIDEO = "vid_Qm3x9T0bL2vK7cP5sN1a"; // validation comes before the lookup: any id shape will do

beforeAll(async () => {
  s = await startTestServer({
    VSEARCH_RATE_LIMIT_VIDEOS: "100000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_SEARCH: "100000",
    VSEARCH_RATE_LIMIT_MOMENT: "100000",
    VSEARCH_RATE_LIMIT_WEBHOOKS: "100000",
    VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "100000",
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.1/32",
  });
  a = await createKeyTenant(s);
  const hook = await s.http("/v1/webhooks", {
    method: "POST",
    token: a.key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: "http://127.0.0.1:9/hook", events: ["video.created"] }),
  });
  webhookId = (await json(hook)).data.id;
});
afterAll(() => s.close());

describe("headers", () => {
  test("nosniff on every answer: JSON, errors, probes, the document, the dashboard, a 400 before routing", async () => {
    const answers = [
      await s.http("/v1/collections", { token: a.key }),
      await s.http("/v1/collections"),
      await s.http("/v1/nothing-here", { token: a.key }),
      await s.http("/healthz"),
      await s.http("/metrics"),
      await s.http("/v1/openapi.json"),
      await s.http("/"),
      await s.http(`/media/videos/${VIDEO}/poster.jpg?expires=1&signature=${"0".repeat(64)}`),
    ];
    for (const res of answers) expect(res.headers.get("x-content-type-options"), res.url).toBe("nosniff");
    const noHost = await rawRequest(s.port, "GET /healthz HTTP/1.0\r\n\r\n", { endAfterWrite: true });
    expect(noHost.status).toBe(400);
    expect(noHost.headers["x-content-type-options"]).toBe("nosniff");
  });

  test("Cache-Control: no-store on JSON read with a credential, success or error; anonymous probes are left alone", async () => {
    for (const res of [
      await s.http("/v1/collections", { token: a.key }),
      await s.http(`/v1/videos/${VIDEO}`, { token: a.readOnlyKey }),
      await s.http("/v1/collections", { token: "vsk_wrong" }),
    ]) {
      expect(res.headers.get("content-type")).toMatch(/json/);
      expect(res.headers.get("cache-control"), `${res.url} ${res.status}`).toBe("no-store");
    }
    expect((await s.http("/healthz")).headers.get("cache-control")).toBeNull();
  });
});

describe("numbers are plain decimal", () => {
  const form = (fields: Record<string, string>) => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    return fd;
  };
  const cases: [string, () => Promise<Response>, string][] = [
    ["GET /v1/videos page", () => s.http("/v1/videos?page=0x10", { token: a.key }), "page"],
    ["GET /v1/videos per_page", () => s.http("/v1/videos?per_page=0x10", { token: a.key }), "per_page"],
    ["GET /v1/jobs page", () => s.http("/v1/jobs?page=0b11", { token: a.key }), "page"],
    ["GET /v1/jobs per_page", () => s.http("/v1/jobs?per_page=1e1", { token: a.key }), "per_page"],
    ["GET /v1/collections page", () => s.http("/v1/collections?page=%2010", { token: a.key }), "page"],
    ["GET /v1/collections per_page", () => s.http("/v1/collections?per_page=Infinity", { token: a.key }), "per_page"],
    ["GET deliveries page", () => s.http(`/v1/webhooks/${webhookId}/deliveries?page=0x2`, { token: a.key }), "page"],
    ["GET clip start", () => s.http(`/v1/videos/${VIDEO}/clip?start=0x10&end=20`, { token: a.key }), "start"],
    ["GET clip end", () => s.http(`/v1/videos/${VIDEO}/clip?start=1&end=0o17`, { token: a.key }), "end"],
    ["GET moment timestamp", () => s.http(`/v1/videos/${VIDEO}/moment?timestamp=0x10`, { token: a.key }), "timestamp"],
    [
      "POST /v1/search page",
      () => s.http("/v1/search", { method: "POST", token: a.key, body: form({ query: "x", page: "0x10" }) }),
      "page",
    ],
    [
      "POST /v1/search per_page",
      () => s.http("/v1/search", { method: "POST", token: a.key, body: form({ query: "x", per_page: "1_0" }) }),
      "per_page",
    ],
    [
      "POST /v1/search min_score",
      () => s.http("/v1/search", { method: "POST", token: a.key, body: form({ query: "x", min_score: "0x0" }) }),
      "min_score",
    ],
    [
      "POST /v1/search/feedback timestamp_start",
      () =>
        s.http("/v1/search/feedback", {
          method: "POST",
          token: a.key,
          body: new URLSearchParams({ video_id: VIDEO, timestamp_start: "0x10", signal: "up" }),
        }),
      "timestamp_start",
    ],
    [
      "POST /v1/search/feedback raw_score",
      () =>
        s.http("/v1/search/feedback", {
          method: "POST",
          token: a.key,
          body: new URLSearchParams({ video_id: VIDEO, timestamp_start: "1", signal: "up", raw_score: "0x1" }),
        }),
      "raw_score",
    ],
    [
      "DELETE /v1/search/feedback timestamp_start",
      () => s.http(`/v1/search/feedback?video_id=${VIDEO}&timestamp_start=0x10`, { method: "DELETE", token: a.key }),
      "timestamp_start",
    ],
  ];

  test.each(cases)("%s: not decimal is a 422 naming the field", async (_n, send, field) => {
    const res = await send();
    expect(res.status).toBe(422);
    const body = await json(res);
    expect(body.detail.map((d: any) => d.loc.at(-1))).toContain(field);
  });

  test("plain decimal still works: page=2, per_page=5, start=0.5", async () => {
    expect((await s.http("/v1/videos?page=2&per_page=5", { token: a.key })).status).toBe(200);
    expect((await s.http("/v1/collections?page=1&per_page=100", { token: a.key })).status).toBe(200);
    // A well-formed span of a video that is not there: past validation, the lookup answers.
    expect((await s.http(`/v1/videos/${VIDEO}/clip?start=0.5&end=2`, { token: a.key })).status).toBe(404);
  });
});
