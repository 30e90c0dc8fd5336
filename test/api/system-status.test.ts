/**
 * Issue 22: the dashboard's system page reads what `vsearch doctor` says — models per role, the
 * accelerator, and each missing piece with its fix — from GET /v1/system/status (admins only).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";

let t: TestApp;
let a: Tenant;
beforeAll(async () => {
  t = await startTestApp({}, { models: fixedCatalog({ "image-text": tinyClip }) });
  a = await createTenant(t);
});
afterAll(() => t.close());

test("models, device and the fixes, for an admin's session only", async () => {
  const res = await t.request("GET", "/v1/system/status", { token: a.adminToken });
  expect(res.status).toBe(200);
  const s = (await json(res)).data;
  expect(s.models["image-text"]).toMatchObject({ name: "tiny-random-clip", model_id: "tiny-random-clip@test" });
  expect(s.models.speech).toBeNull();
  expect(s.warnings).toEqual([
    expect.objectContaining({
      role: "speech",
      code: "MODEL_NOT_INSTALLED",
      fix: expect.stringMatching(/models (pull|import)/),
    }),
  ]);
  expect(s.device.requested).toBe(t.config.device);
  expect(typeof s.device.in_use).toBe("string");
  expect(s.jobs).toMatchObject({ queued: 0, failed: 0, done: 0 });
  expect((await t.request("GET", "/v1/system/status", { token: a.memberToken })).status).toBe(403);
  expect((await t.request("GET", "/v1/system/status", { token: a.key })).status).toBe(403);
});
