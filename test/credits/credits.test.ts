import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { EventType } from "../../src/events/schema.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp, upload as uploadAs } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "../webhooks/receiver.ts";

let t: TestApp;
let mp4: string;
beforeAll(async () => {
  t = await startTestApp({
    VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    VSEARCH_CREDITS_PER_MINUTE: "10",
    VSEARCH_CREDITS_PER_SEARCH: "0.5",
    VSEARCH_CREDITS_LOW_THRESHOLD: "5",
    VSEARCH_RATE_LIMIT_UPLOAD: "1000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_SEARCH: "1000",
  });
  await t.app.start();
  mp4 = await smallMp4(scratchDir("credits"));
});
afterAll(() => t.close());

const eventsOf = async (accountId: string, type: EventType) =>
  (await t.stores.events.list({ accountId, type })).map((e) => JSON.parse(e.payload));

const upload = async (ten: Tenant) => {
  const col = (
    await json(
      await t.request("POST", "/v1/collections", { token: ten.key, json: { name: `c${Date.now()}${Math.random()}` } }),
    )
  ).data.id;
  return uploadAs(t, ten, col, mp4, { filename: "x.mp4" });
};

const search = async (ten: Tenant) => {
  const fd = new FormData();
  // Default modes: with no model and no transcript each is skipped (meta.skipped_modes) and the search
  // still answers 200; asking for transcript explicitly there is a 503 MODEL_NOT_INSTALLED.
  fd.append("query", "anything");
  return t.request("POST", "/v1/search", { token: ten.key, body: fd });
};

describe("credits", () => {
  test("unlimited by default; grant makes it metered; charges fire credits.low once and credits.exhausted; 402 after", async () => {
    const ten = await createTenant(t, "Metered");
    const credits = t.app.services.credits;
    expect((await credits.show(ten.accountId)).balance).toBeNull();
    await credits.chargeIndexing(ten.accountId, 600); // unlimited: nothing happens
    await credits.chargeSearch(ten.accountId);
    expect(await credits.show(ten.accountId)).toMatchObject({ balance: null, metered: false, ledger: [] });
    expect((await credits.grant(ten.accountId, 12)).balance).toBe(12);
    const charge = async (secs: number) => await credits.chargeIndexing(ten.accountId, secs);
    await charge(30); // 12 → 7
    expect(await eventsOf(ten.accountId, "credits.low")).toEqual([]);
    await charge(24); // 7 → 3: crosses 5
    expect(await eventsOf(ten.accountId, "credits.low")).toEqual([{ balance: 3, threshold: 5 }]);
    await charge(6); // 3 → 2: no second low event
    expect(await eventsOf(ten.accountId, "credits.low")).toHaveLength(1);
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toEqual([]);
    await charge(12); // 2 → 0
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toEqual([{ balance: 0 }]);
    const res = await upload(ten);
    expect(res.status).toBe(402);
    expect((await json(res)).detail.code).toBe("INSUFFICIENT_CREDITS");
    const s = await search(ten);
    expect(s.status).toBe(402);
    expect((await json(s)).detail.code).toBe("INSUFFICIENT_CREDITS");
    expect((await credits.show(ten.accountId)).ledger.map((l) => l.reason)).toEqual([
      "indexing",
      "indexing",
      "indexing",
      "indexing",
      "grant",
    ]);
    await expect(credits.grant(ten.accountId, -1)).rejects.toThrow(/positive/);
    await expect(credits.grant(ten.accountId, Number.NaN)).rejects.toThrow(/positive/);
    await expect(credits.grant("usr_nobody", 5)).rejects.toThrow(/usr_nobody/);
  });

  test("a grant back above the threshold re-arms credits.low; one charge straight to zero fires both events", async () => {
    const credits = t.app.services.credits;
    const ten = await createTenant(t, "Jumps");
    await credits.grant(ten.accountId, 20);
    await credits.chargeIndexing(ten.accountId, 120); // 20 → 0 in one charge: passes the threshold and zero
    expect(await eventsOf(ten.accountId, "credits.low")).toEqual([{ balance: 0, threshold: 5 }]);
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toEqual([{ balance: 0 }]);
    await credits.grant(ten.accountId, 8); // 0 → 8: above the threshold again
    await credits.chargeIndexing(ten.accountId, 30); // 8 → 3
    expect(await eventsOf(ten.accountId, "credits.low")).toHaveLength(2);
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toHaveLength(1);
    // credits.exhausted fires once each time the balance reaches zero from above.
    await credits.chargeIndexing(ten.accountId, 60); // costs 10, 3 left: takes the 3, never below zero
    expect((await credits.show(ten.accountId)).balance).toBe(0);
    expect((await credits.show(ten.accountId)).ledger[0]).toMatchObject({
      delta: -3,
      reason: "indexing (7 unpaid)",
      balance_after: 0,
    });
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toHaveLength(2);
    await credits.chargeIndexing(ten.accountId, 60); // at zero: nothing to take, no ledger row, no new events
    expect((await credits.show(ten.accountId)).balance).toBe(0);
    expect((await credits.show(ten.accountId)).ledger[0].reason).toBe("indexing (7 unpaid)");
    expect(await eventsOf(ten.accountId, "credits.exhausted")).toHaveLength(2);
    expect(await eventsOf(ten.accountId, "credits.low")).toHaveLength(2);
  });

  test("a completed indexing job charges per minute; a search charges per request; low/exhausted reach a subscriber", async () => {
    const ten = await createTenant(t, "Billed");
    const credits = t.app.services.credits;
    const rx = startReceiver();
    try {
      const wh = (
        await json(
          await t.request("POST", "/v1/webhooks", {
            token: ten.key,
            json: { url: rx.url, events: ["credits.low", "credits.exhausted"] },
          }),
        )
      ).data;
      rx.setSecret(wh.secret);
      await credits.grant(ten.accountId, 6);
      const up = (await json(await upload(ten))).data;
      expect(
        await until(async () => (await t.app.services.jobs.get(ten.accountId, up.job_id)).status === "done", 30_000),
      ).toBe(true);
      const duration = (await json(await t.request("GET", `/v1/videos/${up.video_id}`, { token: ten.key }))).data
        .duration_secs;
      expect(duration).toBeGreaterThan(0.5);
      const [charge] = (await credits.show(ten.accountId)).ledger;
      expect(charge.reason).toBe("indexing");
      expect(charge.delta).toBeCloseTo(-(duration / 60) * 10, 5);
      expect(charge.balance_after).toBeCloseTo(6 - (duration / 60) * 10, 5);
      // The charge commits with the completion: the job is done and charged, or neither.
      expect(await eventsOf(ten.accountId, "job.completed")).toEqual([{ job_id: up.job_id, video_id: up.video_id }]);

      // 6 - ~0.17 = ~5.83: at 0.5 a search, the second crosses 5 (credits.low) on the second one, then reaches zero.
      expect((await search(ten)).status).toBe(200);
      expect((await credits.show(ten.accountId)).ledger[0]).toMatchObject({ reason: "search", delta: -0.5 });
      for (let i = 0; i < 20 && ((await credits.show(ten.accountId)).balance ?? 0) >= 0.5; i++)
        expect((await search(ten)).status).toBe(200);
      // Less than one search's price left (~0.33): refused before it runs, the balance untouched.
      const left = (await credits.show(ten.accountId)).balance!;
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThan(0.5);
      const refused = await search(ten);
      expect(refused.status).toBe(402);
      expect((await json(refused)).detail.code).toBe("INSUFFICIENT_CREDITS");
      expect((await credits.show(ten.accountId)).balance).toBe(left);
      // Indexing may still use up the rest (uploads need only a positive balance); it stops at zero.
      for (let i = 0; i < 5 && (await credits.show(ten.accountId)).balance! > 0; i++) {
        const more = (await json(await upload(ten))).data;
        expect(
          await until(
            async () => (await t.app.services.jobs.get(ten.accountId, more.job_id)).status === "done",
            30_000,
          ),
        ).toBe(true);
      }
      expect((await credits.show(ten.accountId)).balance).toBe(0);
      expect((await upload(ten)).status).toBe(402);
      expect(await until(async () => rx.hits.length === 2)).toBe(true);
      expect(rx.hits.map((h) => h.body.event).sort()).toEqual(["credits.exhausted", "credits.low"]);
      expect(rx.hits.every((h) => h.signatureOk)).toBe(true);
    } finally {
      await rx.stop();
    }
  });
});
