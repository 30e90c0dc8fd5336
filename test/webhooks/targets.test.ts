import { afterAll, beforeAll, describe, expect, onTestFinished, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import type { Resolver } from "../../src/net/address-rules.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "./receiver.ts";

// Names are answered by this resolver; no real DNS query is made. `rebind.test` answers a public
// address the first time (registration) and loopback afterwards (delivery).
let rebindCalls = 0;
const resolve: Resolver = async (host) => {
  if (host === "localhost" || host === "loopback.test") return [{ address: "127.0.0.1", family: 4 }];
  if (host === "mixed.test")
    return [
      { address: "93.184.216.34", family: 4 },
      { address: "10.1.2.3", family: 4 },
    ];
  if (host === "rebind.test")
    return rebindCalls++ === 0 ? [{ address: "93.184.216.34", family: 4 }] : [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`no such host ${host}`), { code: "ENOTFOUND" });
};

let t: TestApp;
let a: Tenant;
beforeAll(async () => {
  // Default rules: no network opened.
  t = await startTestApp(
    { VSEARCH_WEBHOOK_RETRY_DELAYS: "0.1,0.1", VSEARCH_RATE_LIMIT_WEBHOOKS: "10000" },
    { resolve },
  );
  await t.app.start();
  a = await createTenant(t);
});
afterAll(() => t.close());

describe("target rules by default", () => {
  const refused = [
    "http://127.0.0.1/",
    "http://localhost/",
    "http://[::1]/",
    "http://0.0.0.0/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/",
    "http://[fd00::1]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://017700000001/",
    "http://loopback.test/",
    "http://mixed.test/",
    "ftp://example.com/",
    "http://user:pw@93.184.216.34/",
  ];
  test.each(refused)("%s is refused at registration with 422 on body.url", async (url) => {
    const res = await t.request("POST", "/v1/webhooks", { token: a.key, json: { url, events: ["job.completed"] } });
    expect(res.status).toBe(422);
    const detail = (await json(res)).detail[0];
    expect(detail.loc).toEqual(["body", "url"]);
    expect(detail.msg).toContain("not allowed");
    // A refused address names the setting that opens its network (issue 22); a refused scheme or
    // credentials have no such setting.
    if (/^ftp:|@/.test(url)) expect(detail.msg).not.toContain("VSEARCH_WEBHOOK_ALLOW_NETWORKS");
    else
      expect(detail.msg).toMatch(/setting VSEARCH_WEBHOOK_ALLOW_NETWORKS \(config\.json "allow_networks"\), e\.g\. /);
  });

  test("a LAN receiver's refusal says which network to allow", async () => {
    const res = await t.request("POST", "/v1/webhooks", {
      token: a.key,
      json: { url: "http://192.168.1.50:9000/hook", events: ["job.completed"] },
    });
    expect((await json(res)).detail[0].msg).toContain("VSEARCH_WEBHOOK_ALLOW_NETWORKS=192.168.1.0/24");
  });

  test("the same rules on PATCH", async () => {
    const res = await t.request("POST", "/v1/webhooks", {
      token: a.key,
      json: { url: "http://93.184.216.34/hook", events: ["webhook.ping"] },
    });
    expect(res.status).toBe(201);
    const id = (await json(res)).data.id;
    const patch = await t.request("PATCH", `/v1/webhooks/${id}`, { token: a.key, json: { url: "http://10.0.0.1/" } });
    expect(patch.status).toBe(422);
    await t.request("DELETE", `/v1/webhooks/${id}`, { token: a.key });
  });

  test("checked again at delivery: a name that rebinds to loopback is refused without connecting", async () => {
    // A live receiver on the loopback port the name rebinds to: it must never see a connection.
    const rx = startReceiver();
    onTestFinished(() => rx.stop());
    const port = new URL(rx.url).port;
    const res = await t.request("POST", "/v1/webhooks", {
      token: a.key,
      json: { url: `http://rebind.test:${port}/hook`, events: ["webhook.ping"] },
    });
    expect(res.status).toBe(201);
    const id = (await json(res)).data.id;
    await t.request("POST", `/v1/webhooks/${id}/test`, { token: a.key });
    const get = async () =>
      (await json(await t.request("GET", `/v1/webhooks/${id}/deliveries`, { token: a.key }))).data[0];
    expect(await until(async () => (await get())?.status === "failed", 10_000)).toBe(true);
    const d = await get();
    expect(d.error).toContain("TARGET_FORBIDDEN");
    expect(d.response_status).toBeNull();
    expect(d.attempts).toBe(3);
    expect(rx.hits).toHaveLength(0);
  });
});
