import { expect, test } from "vitest";
import { startTestApp } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "../webhooks/receiver.ts";
import { tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-credits-cli-");
const ENV = { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8" };
const cli = (...args: string[]) => runCliJson(["--data-dir", dir, ...args], ENV);

test("credits grant/show and accounts delete from the CLI (no server running)", async () => {
  const acct = await cli("accounts", "create", "--name", "cli");
  expect(await cli("credits", "show", "--account", acct.id)).toMatchObject({
    user_id: acct.id,
    balance: null,
    metered: false,
    ledger: [],
  });
  expect(await cli("credits", "grant", "--account", acct.id, "--amount", "25")).toMatchObject({
    user_id: acct.id,
    balance: 25,
  });
  const shown = await cli("credits", "show", "--account", acct.id);
  expect(shown).toMatchObject({
    balance: 25,
    metered: true,
    ledger: [{ delta: 25, reason: "grant", balance_after: 25 }],
  });
  const human = await runCli(["--data-dir", dir, "credits", "show", "--account", acct.id]);
  expect(human.stdout).toContain("balance    25");

  const bad = await runCli(["--data-dir", dir, "credits", "grant", "--account", acct.id, "--amount", "-3"]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/^error: .*positive/);
  const missing = await runCli(["--data-dir", dir, "credits", "grant", "--account", "usr_nope", "--amount", "3"]);
  expect(missing.code).toBe(1);
  expect((await runCli(["--data-dir", dir, "credits", "grant", "--account", acct.id])).code).toBe(2); // --amount is required

  // An endpoint registered through the service (there is no CLI for webhooks), then the CLI deletes.
  const rx = startReceiver();
  try {
    const opened = await startTestApp(ENV, { dataDir: dir });
    const wh = await opened.app.services.webhooks.create(acct.id, { url: rx.url, events: ["account.deleted"] });
    await opened.close();
    rx.setSecret(wh.secret);

    const r = await cli("accounts", "delete", acct.id);
    expect(r).toEqual({
      user_id: acct.id,
      videos_deleted: 0,
      deliveries: [{ webhook_id: wh.id, status: "succeeded" }],
    });
    expect(rx.hits).toHaveLength(1);
    expect(rx.hits[0].signatureOk).toBe(true);
    expect(rx.hits[0].body).toMatchObject({ event: "account.deleted", data: { user_id: acct.id } });
    expect((await cli("accounts", "list")).map((a: { id: string }) => a.id)).not.toContain(acct.id);
    const again = await runCli(["--data-dir", dir, "accounts", "delete", acct.id]);
    expect(again.code).toBe(1);
  } finally {
    await rx.stop();
  }
}, 120_000);

test("accounts delete while a server runs: account.deleted arrives once, nothing after it, the server refuses the key", async () => {
  const env = {
    ...ENV,
    VSEARCH_WEBHOOK_RETRY_DELAYS: "0.2,0.2",
    VSEARCH_RATE_LIMIT_WEBHOOKS: "1000",
    VSEARCH_RATE_LIMIT_UPLOAD: "1000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
  };
  const acct = await cli("accounts", "create", "--name", "live");
  const key = (await cli("keys", "create", "--account", acct.id, "--name", "k")).key;
  const auth = { authorization: `Bearer ${key}` };
  const rx = startReceiver();
  const server = await startServer(dir, env);
  try {
    const post = async (path: string, body: unknown) =>
      (
        await (
          await fetch(`${server.url}${path}`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify(body),
          })
        ).json()
      ).data;
    const wh = await post("/v1/webhooks", {
      url: rx.url,
      events: ["video.created", "job.completed", "video.deleted", "account.deleted"],
    });
    rx.setSecret(wh.secret);
    const col = await post("/v1/collections", { name: "c" });
    const fd = new FormData();
    fd.append("collection_id", col.id);
    fd.append("file", Bun.file(await smallMp4(scratchDir("credits-cli"))), "x.mp4");
    const up = (await (await fetch(`${server.url}/v1/upload`, { method: "POST", headers: auth, body: fd })).json())
      .data;
    expect(up.video_id).toMatch(/^vid_/);
    expect(await until(async () => rx.hits.length === 2, 30_000)).toBe(true); // video.created, job.completed

    const r = await runCliJson(["--data-dir", dir, "accounts", "delete", acct.id], env);
    expect(r).toMatchObject({ videos_deleted: 1, deliveries: [{ webhook_id: wh.id, status: "succeeded" }] });
    await Bun.sleep(800); // several dispatcher polls of the running server
    expect(rx.hits.map((h) => h.body.event).sort()).toEqual(["account.deleted", "job.completed", "video.created"]);
    expect((await fetch(`${server.url}/v1/collections`, { headers: auth })).status).toBe(401);
  } finally {
    await server.stop();
    await rx.stop();
  }
}, 60_000);
