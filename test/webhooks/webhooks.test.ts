import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startWithTenants, type Tenant, type TestApp } from "../helpers/app.ts";
import { databaseFilesContain } from "../helpers/stores.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "./receiver.ts";
import { VERSION } from "../../src/version.ts";

const ENV = {
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "0.2,0.4",
  VSEARCH_WEBHOOK_TIMEOUT_MS: "2000",
  VSEARCH_RATE_LIMIT_WEBHOOKS: "10000",
};
let t: TestApp;
let a: Tenant;
let b: Tenant;
beforeAll(async () => void ({ t, a, b } = await startWithTenants(ENV, { start: true })));
afterAll(() => t.close());

const register = async (token: string, url: string, events: string[] = ["webhook.ping"]) =>
  t.request("POST", "/v1/webhooks", { token, json: { url, events } });
const deliveries = async (id: string) =>
  (await json(await t.request("GET", `/v1/webhooks/${id}/deliveries`, { token: a.key }))).data;
/** Registers `url` for A, sends it a test ping and waits (bounded) until that delivery ends as `status`. */
async function pingUntil(url: string, status: "succeeded" | "failed") {
  const { data } = await json(await register(a.key, url));
  await t.request("POST", `/v1/webhooks/${data.id}/test`, { token: a.key });
  expect(await until(async () => (await deliveries(data.id))[0]?.status === status, 10_000)).toBe(true);
  const [delivery] = await deliveries(data.id);
  return { webhook: data, delivery };
}

describe("webhook endpoints", () => {
  test("create shows the secret once; list/get never; patch; delete; tenant isolation; read_only", async () => {
    const rx = startReceiver();
    try {
      const res = await register(a.key, rx.url, ["job.completed", "video.created"]);
      expect(res.status).toBe(201);
      const { data } = await json(res);
      expect(data).toMatchObject({
        id: expect.stringMatching(/^wh_/),
        user_id: a.accountId,
        url: rx.url,
        events: ["job.completed", "video.created"],
        is_active: true,
      });
      expect(data.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
      // Sealed at rest: the secret is nowhere in the database files (the scan does see the new row).
      expect(databaseFilesContain(t.dir, data.id)).toBe(true);
      expect(databaseFilesContain(t.dir, data.secret)).toBe(false);
      const listed = (await json(await t.request("GET", "/v1/webhooks", { token: a.readOnlyKey }))).data;
      expect(listed.find((w: any) => w.id === data.id).secret).toBeUndefined();
      const patched = await t.request("PATCH", `/v1/webhooks/${data.id}`, {
        token: a.key,
        json: { is_active: false, events: ["video.deleted"] },
      });
      expect((await json(patched)).data).toMatchObject({ is_active: false, events: ["video.deleted"] });
      expect((await t.request("GET", `/v1/webhooks/${data.id}`, { token: b.key })).status).toBe(404);
      expect((await t.request("DELETE", `/v1/webhooks/${data.id}`, { token: b.key })).status).toBe(404);
      expect(
        (
          await t.request("POST", "/v1/webhooks", {
            token: a.readOnlyKey,
            json: { url: rx.url, events: ["job.completed"] },
          })
        ).status,
      ).toBe(403);
      expect(
        (await t.request("PATCH", `/v1/webhooks/${data.id}`, { token: a.readOnlyKey, json: { is_active: true } }))
          .status,
      ).toBe(403);
      expect((await t.request("DELETE", `/v1/webhooks/${data.id}`, { token: a.key })).status).toBe(204);
      const gone = await t.request("GET", `/v1/webhooks/${data.id}`, { token: a.key });
      expect((await json(gone)).detail.code).toBe("WEBHOOK_NOT_FOUND");
    } finally {
      await rx.stop();
    }
  });

  test("bad input is 422 and stores nothing", async () => {
    const all = async () =>
      (
        await Promise.all((await t.stores.accounts.listAccounts()).map(async (x) => await t.stores.webhooks.list(x.id)))
      ).reduce((n, l) => n + l.length, 0);
    const before = await all();
    for (const body of [
      { url: "http://127.0.0.1:9/x", events: [] },
      { url: "http://127.0.0.1:9/x", events: ["nope"] },
      { url: "http://127.0.0.1:9/x" },
      { url: "not a url", events: ["job.completed"] },
      { url: "http://127.0.0.1:9/x", events: ["job.completed"], extra: 1 },
      { url: "ftp://127.0.0.1/x", events: ["job.completed"] },
    ]) {
      const res = await t.request("POST", "/v1/webhooks", { token: a.key, json: body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect(await all()).toBe(before);
  });

  test("plan limit: free allows 3 active endpoints → 402 WEBHOOK_LIMIT_REACHED, also on re-activation", async () => {
    const free = await createTenant(t, "Free", "free");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await json(await register(free.adminToken, `http://127.0.0.1:9/${i}`))).data.id);
    const fourth = await register(free.adminToken, "http://127.0.0.1:9/4");
    expect(fourth.status).toBe(402);
    expect((await json(fourth)).detail.code).toBe("WEBHOOK_LIMIT_REACHED");
    await t.request("PATCH", `/v1/webhooks/${ids[0]}`, { token: free.adminToken, json: { is_active: false } });
    const fifth = (await json(await register(free.adminToken, "http://127.0.0.1:9/5"))).data.id;
    expect(fifth).toBeDefined();
    const back = await t.request("PATCH", `/v1/webhooks/${ids[0]}`, {
      token: free.adminToken,
      json: { is_active: true },
    });
    expect(back.status).toBe(402);
  });
});

describe("delivery", () => {
  test("ping is signed over the exact raw body, with event and delivery headers", async () => {
    const rx = startReceiver();
    try {
      const { data } = await json(await register(a.key, rx.url));
      rx.setSecret(data.secret);
      const res = await t.request("POST", `/v1/webhooks/${data.id}/test`, { token: a.key });
      expect(res.status).toBe(202);
      expect(await until(async () => rx.hits.length === 1)).toBe(true);
      const hit = rx.hits[0];
      expect(hit.signatureOk).toBe(true);
      expect(hit.headers["x-service-event"]).toBe("webhook.ping");
      expect(hit.headers["x-service-delivery"]).toMatch(/^del_/);
      expect(hit.headers["content-type"]).toBe("application/json");
      expect(hit.headers["user-agent"]).toBe(`vsearch-webhooks/${VERSION}`);
      expect(hit.headers["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(hit.body).toEqual({
        id: expect.stringMatching(/^evt_/),
        event: "webhook.ping",
        created_at: expect.any(String),
        data: { webhook_id: data.id },
      });
      expect(await until(async () => (await deliveries(data.id))[0]?.status === "succeeded")).toBe(true);
      const [d] = await deliveries(data.id);
      expect(d).toMatchObject({
        id: hit.headers["x-service-delivery"],
        event: "webhook.ping",
        attempts: 1,
        response_status: 200,
        error: null,
      });
      // a wrong secret does not verify
      rx.setSecret("whsec_wrong");
      await t.request("POST", `/v1/webhooks/${data.id}/test`, { token: a.key });
      expect(await until(async () => rx.hits.length === 2)).toBe(true);
      expect(rx.hits[1].signatureOk).toBe(false);
    } finally {
      await rx.stop();
    }
  });

  test("fails twice then succeeds: three attempts on the schedule, one success", async () => {
    const rx = startReceiver((n) => (n <= 2 ? 500 : 204));
    try {
      const { delivery: d } = await pingUntil(rx.url, "succeeded");
      expect(d.attempts).toBe(3);
      expect(rx.hits).toHaveLength(3);
      expect(new Set(rx.hits.map((h) => h.raw)).size).toBe(1); // identical bytes every time
    } finally {
      await rx.stop();
    }
  });

  test("always fails → failed after 3 attempts; a manual retry succeeds once the receiver is fixed", async () => {
    let broken = true;
    const rx = startReceiver(() => (broken ? 503 : 200));
    try {
      const { webhook: data, delivery: d } = await pingUntil(rx.url, "failed");
      expect(d).toMatchObject({ attempts: 3, response_status: 503, error: "HTTP 503", next_attempt_at: null });
      await Bun.sleep(700);
      expect(rx.hits).toHaveLength(3); // no fourth attempt on its own
      const notFailed = await t.request("POST", `/v1/webhooks/${data.id}/deliveries/del_nope/retry`, { token: a.key });
      expect((await json(notFailed)).detail.code).toBe("DELIVERY_NOT_FOUND");
      broken = false;
      const retry = await t.request("POST", `/v1/webhooks/${data.id}/deliveries/${d.id}/retry`, { token: a.key });
      expect(retry.status).toBe(202);
      expect(await until(async () => (await deliveries(data.id))[0]?.status === "succeeded")).toBe(true);
      expect((await deliveries(data.id))[0].attempts).toBe(4);
      const again = await t.request("POST", `/v1/webhooks/${data.id}/deliveries/${d.id}/retry`, { token: a.key });
      expect(again.status).toBe(409);
    } finally {
      await rx.stop();
    }
  });

  test("inactive endpoints and unsubscribed events get nothing", async () => {
    const subscribed = startReceiver();
    const inactive = startReceiver();
    try {
      const s = (await json(await register(a.key, subscribed.url, ["video.deleted"]))).data;
      const i = (await json(await register(a.key, inactive.url, ["video.created", "video.deleted"]))).data;
      await t.request("PATCH", `/v1/webhooks/${i.id}`, { token: a.key, json: { is_active: false } });
      // Events enter the outbox exactly as the services write them, and the same event wakes the dispatcher.
      await t.stores.events.record(a.accountId, "video.created", {
        video_id: "vid_x",
        job_id: "job_x",
        collection_id: "col_x",
        filename: "x.mp4",
      });
      await t.stores.events.record(a.accountId, "video.deleted", { video_id: "vid_x", collection_id: "col_x" });
      t.bus.publish({ type: "outbox.written", accountId: a.accountId });
      expect(await until(async () => subscribed.hits.length >= 1)).toBe(true);
      await Bun.sleep(500);
      expect(subscribed.hits.map((h) => h.body.event)).toEqual(["video.deleted"]);
      expect(inactive.hits).toHaveLength(0);
      expect(await deliveries(i.id)).toEqual([]);
      expect((await deliveries(s.id)).map((d: any) => d.event)).toEqual(["video.deleted"]);
    } finally {
      await subscribed.stop();
      await inactive.stop();
    }
  });

  test("a redirect is not followed: the delivery fails and the redirect target gets nothing", async () => {
    const target = startReceiver();
    const redirector = startReceiver(() => new Response(null, { status: 302, headers: { location: target.url } }));
    try {
      const { delivery: d } = await pingUntil(redirector.url, "failed");
      expect(d.response_status).toBe(302);
      expect(d.error).toContain("redirect");
      expect(target.hits).toHaveLength(0);
    } finally {
      await target.stop();
      await redirector.stop();
    }
  });
});
