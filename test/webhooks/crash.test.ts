import { expect, test } from "vitest";
import { runCliJson, startServer } from "../helpers/cli.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "./receiver.ts";
import { makeTempDir, removeDir, tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-wh-crash-");

test("kill -9 between attempts → restart → the schedule continues; exactly one success", async () => {
  const env = {
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    VSEARCH_WEBHOOK_RETRY_DELAYS: "2,2",
    VSEARCH_RATE_LIMIT_WEBHOOKS: "100000",
  };
  const rx = startReceiver((n) => (n === 1 ? 500 : 200));
  try {
    const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "wh"]);
    const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let server = await startServer(dir, env);
    const wh = (
      await (
        await fetch(`${server.url}/v1/webhooks`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ url: rx.url, events: ["webhook.ping"] }),
        })
      ).json()
    ).data;
    rx.setSecret(wh.secret);
    await fetch(`${server.url}/v1/webhooks/${wh.id}/test`, { method: "POST", headers: auth });
    expect(await until(async () => rx.hits.length === 1)).toBe(true);
    const first = async (url: string) =>
      (await (await fetch(`${url}/v1/webhooks/${wh.id}/deliveries`, { headers: auth })).json()).data[0];
    expect(
      await until(
        async () => (await first(server.url))?.attempts === 1 && (await first(server.url)).status === "pending",
      ),
    ).toBe(true);
    await server.stop("SIGKILL"); // while the retry is waiting for its due time

    server = await startServer(dir, env);
    try {
      expect(await until(async () => (await first(server.url))?.status === "succeeded", 15_000)).toBe(true);
      const d = await first(server.url);
      expect(d.attempts).toBe(2);
      await Bun.sleep(500);
      expect(rx.hits).toHaveLength(2);
      expect(rx.hits.every((h) => h.signatureOk)).toBe(true);
      expect(rx.hits[0].raw).toBe(rx.hits[1].raw);
    } finally {
      await server.stop();
    }
  } finally {
    await rx.stop();
  }
}, 60_000);

test("kill -9 during an attempt → restart → the claimed delivery is attempted again, once", async () => {
  const dir2 = makeTempDir("vsearch-wh-crash-mid-");
  // A short attempt timeout keeps the claim (timeout + 5 s) short; the first request never gets an answer.
  const env = {
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    VSEARCH_WEBHOOK_RETRY_DELAYS: "30,60",
    VSEARCH_WEBHOOK_TIMEOUT_MS: "500",
    VSEARCH_RATE_LIMIT_WEBHOOKS: "100000",
  };
  let release = () => {};
  const hanging = new Promise<void>((r) => (release = r));
  const rx = startReceiver();
  const held = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const first = rx.hits.length === 0;
      const res = await rx.handle(req);
      if (first) await hanging; // the server is killed while this request is open
      return res;
    },
  });
  try {
    const acct = await runCliJson(["--data-dir", dir2, "accounts", "create", "--name", "wh"]);
    const key = (await runCliJson(["--data-dir", dir2, "keys", "create", "--account", acct.id, "--name", "k"])).key;
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let server = await startServer(dir2, env);
    const wh = (
      await (
        await fetch(`${server.url}/v1/webhooks`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ url: `http://127.0.0.1:${held.port}/hook`, events: ["webhook.ping"] }),
        })
      ).json()
    ).data;
    rx.setSecret(wh.secret);
    await fetch(`${server.url}/v1/webhooks/${wh.id}/test`, { method: "POST", headers: auth });
    expect(await until(async () => rx.hits.length === 1)).toBe(true);
    await server.stop("SIGKILL"); // mid-attempt: claimed and counted, no outcome recorded
    release();

    server = await startServer(dir2, env);
    try {
      const first = async () =>
        (await (await fetch(`${server.url}/v1/webhooks/${wh.id}/deliveries`, { headers: auth })).json()).data[0];
      expect(await first()).toMatchObject({ status: "pending", attempts: 1 });
      expect(await until(async () => (await first())?.status === "succeeded", 15_000)).toBe(true);
      expect(await first()).toMatchObject({ attempts: 2, response_status: 200 });
      await Bun.sleep(300);
      expect(rx.hits).toHaveLength(2);
      expect(rx.hits[1].signatureOk).toBe(true);
      expect(rx.hits[1].raw).toBe(rx.hits[0].raw);
      expect(rx.hits[1].headers["x-service-delivery"]).toBe(rx.hits[0].headers["x-service-delivery"]);
    } finally {
      await server.stop();
    }
    // The store came through the kill whole (SQLite integrity, rows and files agree).
    expect(await runCliJson(["--data-dir", dir2, "check"])).toMatchObject({
      ok: true,
      sqlite_integrity: "ok",
      foreign_key_violations: 0,
    });
  } finally {
    release();
    await held.stop(true);
    await rx.stop();
    removeDir(dir2);
  }
}, 60_000);
