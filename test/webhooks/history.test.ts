import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { json, startWithTenants, type Tenant, type TestApp, upload } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "./receiver.ts";

// Retries 0.5 s apart: long enough to switch an endpoint off between two attempts.
const ENV = {
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "0.5,0.5",
  VSEARCH_WEBHOOK_TIMEOUT_MS: "3000",
  VSEARCH_RATE_LIMIT_WEBHOOKS: "10000",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  VSEARCH_RATE_LIMIT_VIDEOS: "1000",
};
let t: TestApp;
let a: Tenant;
let b: Tenant;
beforeAll(async () => void ({ t, a, b } = await startWithTenants(ENV, { start: true })));
afterAll(() => t.close());

const register = async (url: string, events: string[] = ["webhook.ping"], token = a.key) =>
  (await json(await t.request("POST", "/v1/webhooks", { token, json: { url, events } }))).data;
const ping = async (id: string) =>
  (await json(await t.request("POST", `/v1/webhooks/${id}/test`, { token: a.key }))).data;
const history = async (id: string, query = "") =>
  json(await t.request("GET", `/v1/webhooks/${id}/deliveries${query}`, { token: a.key }));

describe("delivery history", () => {
  test("newest first, paged, with meta.total; read_only may read it but not test or retry", async () => {
    const rx = startReceiver();
    try {
      const wh = await register(rx.url);
      const eventIds: string[] = [];
      for (let i = 0; i < 5; i++) eventIds.push((await ping(wh.id)).event_id);
      expect(
        await until(async () => (await history(wh.id)).data.filter((d: any) => d.status === "succeeded").length === 5),
      ).toBe(true);
      const p1 = await history(wh.id, "?page=1&per_page=2");
      expect(p1.meta).toMatchObject({ total: 5, page: 1, per_page: 2 });
      const p3 = await history(wh.id, "?page=3&per_page=2");
      expect(p3.data).toHaveLength(1);
      const all = [...p1.data, ...(await history(wh.id, "?page=2&per_page=2")).data, ...p3.data];
      expect(all.map((d: any) => d.event_id)).toEqual([...eventIds].reverse());
      expect(all[0]).toMatchObject({
        webhook_id: wh.id,
        event: "webhook.ping",
        status: "succeeded",
        attempts: 1,
        response_status: 200,
        response_excerpt: "status 200",
        next_attempt_at: null,
      });
      expect(all[0].delivered_at).toEqual(expect.any(String));

      const ro = await t.request("GET", `/v1/webhooks/${wh.id}/deliveries`, { token: a.readOnlyKey });
      expect(ro.status).toBe(200);
      expect((await t.request("POST", `/v1/webhooks/${wh.id}/test`, { token: a.readOnlyKey })).status).toBe(403);
      expect(
        (await t.request("POST", `/v1/webhooks/${wh.id}/deliveries/${all[0].id}/retry`, { token: a.readOnlyKey }))
          .status,
      ).toBe(403);
    } finally {
      await rx.stop();
    }
  });

  test("another account's webhook or delivery is a 404; deleting an endpoint deletes its deliveries", async () => {
    const rx = startReceiver();
    try {
      const wh = await register(rx.url);
      const other = await register(rx.url);
      await ping(wh.id);
      expect(await until(async () => (await history(wh.id)).data[0]?.status === "succeeded")).toBe(true);
      const del = (await history(wh.id)).data[0];

      const bList = await t.request("GET", `/v1/webhooks/${wh.id}/deliveries`, { token: b.key });
      expect(bList.status).toBe(404);
      expect((await json(bList)).detail.code).toBe("WEBHOOK_NOT_FOUND");
      const bRetry = await t.request("POST", `/v1/webhooks/${wh.id}/deliveries/${del.id}/retry`, { token: b.key });
      expect((await json(bRetry)).detail.code).toBe("WEBHOOK_NOT_FOUND");
      const bTest = await t.request("POST", `/v1/webhooks/${wh.id}/test`, { token: b.key });
      expect(bTest.status).toBe(404);
      // A delivery id under the wrong endpoint of the same account does not resolve either.
      const crossed = await t.request("POST", `/v1/webhooks/${other.id}/deliveries/${del.id}/retry`, { token: a.key });
      expect(crossed.status).toBe(404);
      expect((await json(crossed)).detail.code).toBe("DELIVERY_NOT_FOUND");

      const count = async () => await t.stores.webhooks.countDeliveries(wh.id);
      expect(await count()).toBe(1);
      expect((await t.request("DELETE", `/v1/webhooks/${wh.id}`, { token: a.key })).status).toBe(204);
      expect(await count()).toBe(0);
      expect(
        (await json(await t.request("GET", `/v1/webhooks/${wh.id}/deliveries`, { token: a.key }))).detail.code,
      ).toBe("WEBHOOK_NOT_FOUND");
    } finally {
      await rx.stop();
    }
  });
});

describe("active flag and concurrency", () => {
  test("an endpoint switched off mid-schedule gets no more attempts; switched back on, the schedule resumes", async () => {
    let broken = true;
    const rx = startReceiver(() => (broken ? 500 : 200));
    try {
      const wh = await register(rx.url);
      await ping(wh.id);
      expect(await until(async () => (await history(wh.id)).data[0]?.attempts === 1 && rx.hits.length === 1)).toBe(
        true,
      );
      await t.request("PATCH", `/v1/webhooks/${wh.id}`, { token: a.key, json: { is_active: false } });
      await Bun.sleep(1_500); // three times the retry delay
      expect(rx.hits).toHaveLength(1);
      const held = (await history(wh.id)).data[0];
      expect(held).toMatchObject({ status: "pending", attempts: 1 });
      // Nothing is sent to an inactive endpoint, not even on request.
      expect((await json(await t.request("POST", `/v1/webhooks/${wh.id}/test`, { token: a.key }))).detail.code).toBe(
        "WEBHOOK_INACTIVE",
      );
      const retry = await t.request("POST", `/v1/webhooks/${wh.id}/deliveries/${held.id}/retry`, { token: a.key });
      expect(retry.status).toBe(409);

      broken = false;
      await t.request("PATCH", `/v1/webhooks/${wh.id}`, { token: a.key, json: { is_active: true } });
      expect(await until(async () => (await history(wh.id)).data[0]?.status === "succeeded")).toBe(true);
      expect((await history(wh.id)).data[0].attempts).toBe(2);
      expect(rx.hits).toHaveLength(2);
    } finally {
      await rx.stop();
    }
  });

  test("at most 2 attempts at once per endpoint; every delivery still arrives", async () => {
    let current = 0;
    let peak = 0;
    const rx = startReceiver();
    const slow = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        current++;
        peak = Math.max(peak, current);
        await req.text();
        await Bun.sleep(250);
        current--;
        return new Response("ok");
      },
    });
    try {
      const wh = await register(`http://127.0.0.1:${slow.port}/slow`);
      for (let i = 0; i < 6; i++) await ping(wh.id);
      expect(
        await until(async () => (await history(wh.id)).data.filter((d: any) => d.status === "succeeded").length === 6),
      ).toBe(true);
      expect(peak).toBe(2);
    } finally {
      await slow.stop(true);
      await rx.stop();
    }
  });
  test("a slow endpoint's backlog does not hold up another endpoint", async () => {
    const slow = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async () => (await Bun.sleep(400), new Response("ok")),
    });
    const rx = startReceiver();
    try {
      const busy = await register(`http://127.0.0.1:${slow.port}/slow`);
      const quiet = await register(rx.url);
      // 150 deliveries already due for the slow endpoint (more than one polling batch), as after an outage.
      const due = Date.now() - 1_000;
      await t.stores.transaction(async () => {
        for (let i = 0; i < 150; i++) {
          await t.stores.webhooks.insertDelivery({
            id: `del_backlog${i}`,
            webhook_id: busy.id,
            account_id: a.accountId,
            event_id: `evt_backlog${i}`,
            event: "webhook.ping",
            payload: "{}",
            status: "pending",
            attempts: 0,
            next_attempt_at: due + i,
            created_at: new Date(due).toISOString(),
          });
        }
      });
      await ping(quiet.id);
      // Draining the backlog takes 150 × 0.4 s / 2 = 30 s; the other endpoint must not wait for it.
      expect(await until(async () => rx.hits.length === 1, 2_000)).toBe(true);
      await t.request("DELETE", `/v1/webhooks/${busy.id}`, { token: a.key });
    } finally {
      await slow.stop(true);
      await rx.stop();
    }
  });
});

describe("events from the services", () => {
  test("upload, indexing and deletion reach a subscribed endpoint with the documented payloads", async () => {
    const rx = startReceiver();
    try {
      const wh = await register(rx.url, ["video.created", "job.completed", "video.deleted"]);
      rx.setSecret(wh.secret);
      const col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "hooks" } })))
        .data.id;
      const clip = await smallMp4(scratchDir("webhook-events"));
      const up = (await json(await upload(t, a, col, clip, { filename: "clip.mp4" }))).data;
      expect(await until(async () => rx.hits.length === 2, 30_000)).toBe(true);
      expect((await t.request("DELETE", `/v1/videos/${up.video_id}`, { token: a.key })).status).toBe(204);
      expect(await until(async () => rx.hits.length === 3)).toBe(true);

      const byEvent = Object.fromEntries(rx.hits.map((h) => [h.body.event, h.body.data]));
      expect(byEvent).toEqual({
        "video.created": { video_id: up.video_id, job_id: up.job_id, collection_id: col, filename: "clip.mp4" },
        "job.completed": { job_id: up.job_id, video_id: up.video_id },
        "video.deleted": { video_id: up.video_id, collection_id: col },
      });
      expect(rx.hits.every((h) => h.signatureOk && h.headers["x-service-event"] === h.body.event)).toBe(true);
      expect(new Set(rx.hits.map((h) => h.body.id)).size).toBe(3);
    } finally {
      await rx.stop();
    }
  });
});
