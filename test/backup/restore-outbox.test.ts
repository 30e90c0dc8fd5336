/**
 * Issue 22: a restored backup does not at once re-send the original's pending webhook deliveries
 * (the original may have sent them since). They come back `failed`, held, with the reason; a
 * manual retry sends one again; new events after the restore are delivered as usual.
 */
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp } from "../helpers/app.ts";
import { runCliJson } from "../helpers/cli.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { closedPort, type LoopbackServer, serve } from "../net/loopback.ts";

const tempDir = tempDirs("vsearch-restore-outbox-").make;
const ENV = { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", VSEARCH_WEBHOOK_RETRY_DELAYS: "1,1" };
let receiver: LoopbackServer | null = null;
afterAll(() => receiver?.close());

test("pending deliveries are held by a restore, not re-sent; a retry sends one; new events flow", async () => {
  const original = tempDir();
  const port = await closedPort();
  // The original: the receiver is down, so the ping's first attempt fails and it stays pending
  // (its next attempt due a second later) when the server stops and the backup is made.
  let t = await startTestApp(ENV, { dataDir: original });
  const a = await createKeyTenant(t);
  const hook = (
    await json(
      await t.request("POST", "/v1/webhooks", {
        token: a.key,
        json: { url: `http://127.0.0.1:${port}/hook`, events: ["webhook.ping", "video.deleted"] },
      }),
    )
  ).data;
  await t.app.start();
  expect((await t.request("POST", `/v1/webhooks/${hook.id}/test`, { token: a.key })).status).toBe(202);
  const deliveries = async () =>
    (await json(await t.request("GET", `/v1/webhooks/${hook.id}/deliveries`, { token: a.key }))).data;
  expect(await until(async () => (await deliveries())[0]?.attempts === 1, 20_000, 20)).toBe(true);
  expect((await deliveries())[0].status).toBe("pending");
  await t.close();

  const archive = join(tempDir(), "backup.tar");
  await runCliJson(["--data-dir", original, "backup", archive]);
  const restored = tempDir();
  const r = await runCliJson(["--data-dir", restored, "restore", archive, "--force"]);
  expect(r.webhook_deliveries_held).toBe(1);

  // The receiver is up now: the restored server must not send the held ping by itself.
  receiver = await serve((_req, res) => res.end("ok"), { port });
  t = await startTestApp(ENV, { dataDir: restored });
  try {
    await t.app.start();
    await Bun.sleep(2500); // two retry delays: a pending delivery would have gone out by now
    expect(receiver.requests).toHaveLength(0);
    const [held] = await deliveries();
    expect(held).toMatchObject({ status: "failed", event: "webhook.ping" });
    expect(held.error).toMatch(/^held by restore .*pending when the backup was made/);

    // By hand it goes; and a new event after the restore is delivered as usual.
    const retry = await t.request("POST", `/v1/webhooks/${hook.id}/deliveries/${held.id}/retry`, { token: a.key });
    expect(retry.status).toBe(202);
    expect(await until(async () => receiver!.requests.length === 1, 20_000, 20)).toBe(true);
    expect((await t.request("POST", `/v1/webhooks/${hook.id}/test`, { token: a.key })).status).toBe(202);
    expect(await until(async () => receiver!.requests.length === 2, 20_000, 20)).toBe(true);
  } finally {
    await t.close();
  }
}, 180_000);
