/**
 * The per-account cap on waiting work (issue 21): an account with `queue_account_max_waiting`
 * videos waiting to be indexed gets 429 QUEUE_FULL with Retry-After for the next upload, which
 * writes nothing; another account is not held back; the operator's `vsearch ingest` is not capped.
 * (The running cap and the claim order: queue.test.ts.)
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp, upload } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";

let t: TestApp;
let a: Tenant;
let b: Tenant;
let clip: string;
const collection = async (tenant: Tenant) =>
  (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data.id;
beforeAll(async () => {
  clip = await smallMp4(scratchDir("caps"));
  // Not started: uploads stay waiting.
  // One clip uploaded again and again, each a video of its own (no duplicate check).
  t = await startTestApp(
    { VSEARCH_QUEUE_ACCOUNT_MAX_WAITING: "2", VSEARCH_RATE_LIMIT_UPLOAD: "1000" },
    { uploadDuplicateCheck: false },
  );
  [a, b] = await Promise.all([createTenant(t, "A"), createTenant(t, "B")]);
});
afterAll(() => t.close());

test("the upload past the account's waiting cap is 429 QUEUE_FULL with Retry-After and writes nothing; other accounts still upload", async () => {
  const col = await collection(a);
  for (let i = 0; i < 2; i++) expect((await upload(t, a, col, clip)).status).toBe(202);
  const res = await upload(t, a, col, clip);
  expect(res.status).toBe(429);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  const body = await json(res);
  expect(body.detail.code).toBe("QUEUE_FULL");
  expect(body.detail.message).toMatch(/2 videos waiting/);
  expect((await t.app.services.videos.list(a.accountId, {}, { page: 1, perPage: 100 })).total).toBe(2);
  expect(await t.stores.tasks.list({ accountId: a.accountId })).toHaveLength(2);
  expect(readdirSync(join(t.dir, "uploads", "tmp"))).toEqual([]);
  // Per account: B is not held back by A's backlog.
  expect((await upload(t, b, await collection(b), clip)).status).toBe(202);
});

test("the operator's ingest is not held to the cap", async () => {
  const col = await t.app.services.collections.create(a.accountId, { name: "bulk" });
  const r = await t.app.services.uploads.ingestFile(a.accountId, col.id, clip);
  expect(r.status).toBe("queued");
  expect(await t.stores.tasks.list({ accountId: a.accountId })).toHaveLength(3);
});

test("the caps are documented: OpenAPI lists QUEUE_FULL with Retry-After on the upload; bad settings are refused", async () => {
  const doc = await json(await t.request("GET", "/v1/openapi.json"));
  const r429 = doc.paths["/v1/upload"].post.responses["429"];
  expect(r429.description).toContain("QUEUE_FULL");
  expect(Object.keys(r429.headers)).toContain("Retry-After");
  expect(() => loadConfig({ dataDir: t.dir }, { VSEARCH_QUEUE_ACCOUNT_MAX_WAITING: "-1" })).toThrow(ConfigError);
  expect(() => loadConfig({ dataDir: t.dir }, { VSEARCH_QUEUE_ACCOUNT_MAX_RUNNING: "1.5" })).toThrow(ConfigError);
  expect(loadConfig({ dataDir: t.dir }, {})).toMatchObject({ queueAccountMaxWaiting: 100, queueAccountMaxRunning: 0 });
});
