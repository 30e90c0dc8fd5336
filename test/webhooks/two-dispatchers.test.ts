/**
 * Two dispatchers over one database (two `serve` processes behind a load balancer, issue 24's
 * fan-out claim): two apps on one data dir, each with its own connection and dispatcher, the
 * second on a machine whose clock runs two minutes ahead. Every event reaches the receiver once.
 * Before the claims moved to the database's clock, the second dispatcher saw a delivery the
 * first was attempting as due (its hold was on the first's clock) and attempted it too.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "./receiver.ts";

const ENV = {
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "1,1",
  VSEARCH_WEBHOOK_TIMEOUT_MS: "5000",
  VSEARCH_RATE_LIMIT_WEBHOOKS: "100000",
};
let first: TestApp;
let second: TestApp;
let a: Tenant;
beforeAll(async () => {
  first = await startTestApp(ENV, { prefix: "vsearch-two-dispatchers-" });
  second = await startTestApp(ENV, { dataDir: first.dir, nodeId: "node_second" });
  second.clock.now += 120_000; // another machine, its clock two minutes ahead
  a = await createKeyTenant(first);
  await first.app.start();
  await second.app.start();
});
afterAll(async () => {
  await second?.close();
  await first?.close();
});

test("two dispatchers over one database deliver each event once, one of them on a clock two minutes ahead", async () => {
  // A slow receiver: attempts overlap the other dispatcher's polls (every 250 ms).
  const rx = startReceiver();
  const slow = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => (await Bun.sleep(150), rx.handle(req)),
  });
  try {
    const hooks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await first.request("POST", "/v1/webhooks", {
        token: a.key,
        json: { url: `http://127.0.0.1:${slow.port}/hook${i}`, events: ["webhook.ping"] },
      });
      expect(res.status).toBe(201);
      hooks.push((await json(res)).data.id as string);
    }
    // 30 events, written through both servers.
    const events: string[] = [];
    for (let i = 0; i < 30; i++) {
      const via = i % 2 ? second : first;
      const res = await via.request("POST", `/v1/webhooks/${hooks[i % 3]}/test`, { token: a.key });
      expect(res.status).toBe(202);
      events.push((await json(res)).data.event_id);
    }
    const delivered = async () => {
      let n = 0;
      for (const id of hooks) {
        const list = (
          await json(await first.request("GET", `/v1/webhooks/${id}/deliveries?per_page=100`, { token: a.key }))
        ).data as { status: string }[];
        n += list.filter((d) => d.status === "succeeded").length;
      }
      return n;
    };
    expect(await until(async () => (await delivered()) === 30, 60_000, 100)).toBe(true);
    await Bun.sleep(1_500); // any second attempt would have started by now
    const byDelivery = new Map<string, number>();
    for (const h of rx.hits)
      byDelivery.set(h.headers["x-service-delivery"], (byDelivery.get(h.headers["x-service-delivery"]) ?? 0) + 1);
    expect([...byDelivery.values()].filter((n) => n > 1)).toEqual([]);
    expect(rx.hits).toHaveLength(30);
    expect(new Set(rx.hits.map((h) => h.body.id))).toEqual(new Set(events));
  } finally {
    await slow.stop(true);
    await rx.stop();
  }
}, 120_000);
