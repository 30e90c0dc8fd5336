import { afterAll, beforeAll, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { fuzzSchemas, operations } from "./schema-fuzz.ts";

let t: TestApp;
let a: Tenant;
let ids: string[];

beforeAll(async () => {
  // Every name resolves to a private address: image_url and webhook targets fail fast, offline.
  t = await startTestApp(
    {
      VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "1000000",
      VSEARCH_RATE_LIMIT_COLLECTIONS_WRITE: "1000000",
      VSEARCH_RATE_LIMIT_SEARCH: "1000000",
      VSEARCH_RATE_LIMIT_API_KEYS: "1000000",
      VSEARCH_RATE_LIMIT_WEBHOOKS: "1000000",
      VSEARCH_RATE_LIMIT_VIDEOS: "1000000",
      VSEARCH_RATE_LIMIT_JOBS: "1000000",
      VSEARCH_RATE_LIMIT_MOMENT: "1000000",
      VSEARCH_RATE_LIMIT_AGENT: "1000000",
    },
    { models: fixedCatalog({ "image-text": tinyClip }), resolve: async () => [{ address: "10.0.0.1", family: 4 }] },
  );
  a = await createTenant(t);
  const col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "kept" } }))).data
    .id;
  ids = [col, "col_000000000000000000000", "vid_000000000000000000000", "key_x", "wh_x"];
});
afterAll(() => t.close());

test("the fuzzer reaches every documented operation but the streamed upload", async () => {
  const ops = await operations(t);
  expect(ops.length).toBeGreaterThan(20);
  expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual(
    expect.arrayContaining(["POST /v1/search", "POST /v1/collections", "POST /v1/auth/sessions", "POST /v1/webhooks"]),
  );
});

test("arbitrary input to every request schema: no 5xx, rejected writes change nothing", async () => {
  const { cases, statuses } = await fuzzSchemas(t, a, Number(process.env.FUZZ_RUNS ?? 400), ids);
  expect(cases).toBeGreaterThanOrEqual(400);
  if (process.env.FUZZ_RUNS) console.log(statuses);
  // Most junk is refused; some is valid and succeeds (both paths are exercised).
  expect(Object.keys(statuses).some((s) => Number(s) >= 400)).toBe(true);
  expect(Object.keys(statuses).some((s) => Number(s) < 300)).toBe(true);
}, 120_000);
