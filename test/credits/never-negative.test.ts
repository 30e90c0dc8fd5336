import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "../webhooks/receiver.ts";

const dir = mkdtempSync(join(tmpdir(), "vsearch-credits-neg-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a first grant below the threshold fires credits.low; a search it cannot pay is 402 and the balance never goes negative; credits unlimited", async () => {
  // Defaults: 0.1 a search, low threshold 100.
  const env = {
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    VSEARCH_RATE_LIMIT_SEARCH: "1000",
    VSEARCH_RATE_LIMIT_WEBHOOKS: "1000",
  };
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "metered"]);
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const rx = startReceiver();
  const server = await startServer(dir, env);
  try {
    const auth = { authorization: `Bearer ${key}` };
    const wh = (
      (await (
        await fetch(`${server.url}/v1/webhooks`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ url: rx.url, events: ["credits.low", "credits.exhausted"] }),
        })
      ).json()) as any
    ).data;
    rx.setSecret(wh.secret);
    const search = async () => {
      const fd = new FormData();
      fd.append("query", "anything");
      return fetch(`${server.url}/v1/search`, { method: "POST", headers: auth, body: fd });
    };
    expect((await search()).status).toBe(200); // unlimited

    // Unlimited → 0.15 is a downward crossing of 100.
    expect(
      await runCliJson(["--data-dir", dir, "credits", "grant", "--account", acct.id, "--amount", "0.15"]),
    ).toMatchObject({ balance: 0.15 });
    expect(await until(async () => rx.hits.length === 1, 10_000)).toBe(true);
    expect(rx.hits[0].body).toMatchObject({ event: "credits.low", data: { balance: 0.15, threshold: 100 } });
    expect(rx.hits[0].signatureOk).toBe(true);

    expect((await search()).status).toBe(200); // 0.15 → 0.05
    const refused = await search(); // 0.05 cannot pay 0.1
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as any).detail).toMatchObject({
      code: "INSUFFICIENT_CREDITS",
      message: expect.stringContaining("0.05"),
    });
    const shown = await runCliJson(["--data-dir", dir, "credits", "show", "--account", acct.id]);
    expect(shown.balance).toBe(0.05);
    expect(shown.ledger.map((l: any) => l.reason)).toEqual(["search", "grant"]);
    expect(shown.ledger.every((l: any) => l.balance_after >= 0)).toBe(true);

    // Back to unlimited from the CLI.
    const human = await runCli(["--data-dir", dir, "credits", "unlimited", "--account", acct.id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("unlimited");
    expect((await runCliJson(["--data-dir", dir, "credits", "show", "--account", acct.id])).balance).toBeNull();
    expect((await search()).status).toBe(200);
    expect((await runCliJson(["--data-dir", dir, "credits", "show", "--account", acct.id])).ledger).toHaveLength(2); // nothing charged
    expect(rx.hits).toHaveLength(1);
    const missing = await runCli(["--data-dir", dir, "credits", "unlimited", "--account", "usr_nope"]);
    expect(missing.code).toBe(1);
  } finally {
    await server.stop();
    await rx.stop();
  }
}, 60_000);
