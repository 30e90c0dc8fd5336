import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { startReceiver, until } from "../webhooks/receiver.ts";

let t: TestApp;
let mp4: string;
beforeAll(async () => {
  t = await startTestApp({
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    VSEARCH_CREDITS_PER_MINUTE: "10",
    VSEARCH_CREDITS_LOW_THRESHOLD: "5",
    VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  });
  await t.app.start();
  mp4 = await smallMp4(scratchDir("credits"));
});
afterAll(() => t.close());

const eventsOf = (accountId: string, type: string) =>
  (t.app.db.query("SELECT payload FROM events WHERE account_id = ? AND type = ? ORDER BY seq").all(accountId, type) as { payload: string }[]).map((e) => JSON.parse(e.payload));

describe("credits", () => {
  test("unlimited by default; grant makes it metered; charges fire credits.low once and credits.exhausted; 402 after", async () => {
    const ten = await createTenant(t, "Metered");
    const credits = t.app.services.credits;
    expect(credits.show(ten.accountId).balance).toBeNull();
    credits.chargeIndexing(ten.accountId, 600); // unlimited: nothing happens
    expect(credits.show(ten.accountId).balance).toBeNull();
    expect(credits.grant(ten.accountId, 12).balance).toBe(12);
    const charge = (secs: number) => t.app.db.transaction(() => credits.chargeIndexing(ten.accountId, secs))();
    charge(30); // 12 → 7
    expect(eventsOf(ten.accountId, "credits.low")).toEqual([]);
    charge(24); // 7 → 3: crosses 5
    expect(eventsOf(ten.accountId, "credits.low")).toEqual([{ balance: 3, threshold: 5 }]);
    charge(6); // 3 → 2: no second low event
    expect(eventsOf(ten.accountId, "credits.low")).toHaveLength(1);
    charge(12); // 2 → 0
    expect(eventsOf(ten.accountId, "credits.exhausted")).toEqual([{ balance: 0 }]);
    const col = (await json(await t.request("POST", "/v1/collections", { token: ten.key, json: { name: "c" } }))).data.id;
    const fd = new FormData();
    fd.append("collection_id", col);
    fd.append("file", Bun.file(mp4), "x.mp4");
    const res = await t.request("POST", "/v1/upload", { token: ten.key, body: fd });
    expect(res.status).toBe(402);
    expect((await json(res)).detail.code).toBe("INSUFFICIENT_CREDITS");
    expect(credits.show(ten.accountId).ledger.map((l) => l.reason)).toEqual(["indexing", "indexing", "indexing", "indexing", "grant"]);
    expect(() => credits.grant(ten.accountId, -1)).toThrow(/positive/);
  });
});

describe("account deletion", () => {
  test("account.deleted reaches the receiver, then nothing of the account remains", async () => {
    const ten: Tenant = await createTenant(t, "Doomed");
    const rx = startReceiver();
    try {
      const wh = (await json(await t.request("POST", "/v1/webhooks", { token: ten.key, json: { url: rx.url, events: ["account.deleted"] } }))).data;
      rx.setSecret(wh.secret);
      const col = (await json(await t.request("POST", "/v1/collections", { token: ten.key, json: { name: "c" } }))).data.id;
      const fd = new FormData();
      fd.append("collection_id", col);
      fd.append("file", Bun.file(mp4), "x.mp4");
      const up = (await json(await t.request("POST", "/v1/upload", { token: ten.key, body: fd }))).data;
      expect(await until(() => t.app.services.jobs.get(ten.accountId, up.job_id).status === "done", 30_000)).toBe(true);
      t.app.services.credits.grant(ten.accountId, 5);

      const r = await t.app.services.accountDeletion.delete(ten.accountId);
      expect(r).toMatchObject({ user_id: ten.accountId, videos_deleted: 1, deliveries: [{ webhook_id: wh.id, status: "succeeded" }] });
      expect(rx.hits).toHaveLength(1);
      expect(rx.hits[0].signatureOk).toBe(true);
      expect(rx.hits[0].body).toMatchObject({ event: "account.deleted", data: { user_id: ten.accountId } });

      const tables = (t.app.db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%account_id%'").all() as { name: string }[]).map((x) => x.name);
      expect(tables.length).toBeGreaterThan(8);
      for (const table of tables) {
        const n = (t.app.db.query(`SELECT count(*) AS n FROM "${table}" WHERE account_id = ?`).get(ten.accountId) as { n: number }).n;
        expect(n, table).toBe(0);
      }
      expect(t.app.db.query("SELECT 1 FROM accounts WHERE id = ?").get(ten.accountId)).toBeNull();
      expect(existsSync(join(t.dir, "videos", up.video_id))).toBe(false);
      const stillThere = readdirSync(join(t.dir, "videos"));
      expect(stillThere).not.toContain(up.video_id);
      // its key no longer works
      expect((await t.request("GET", "/v1/collections", { token: ten.key })).status).toBe(401);
    } finally {
      rx.stop();
    }
  });
});
