import { afterAll, beforeAll, expect, test } from "vitest";
import { createTenant, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import type { WebhookStore } from "../../src/webhooks/store.ts";

// The dispatcher is not started here: these tests look at which rows the store hands out.
let t: TestApp;
let a: Tenant;
let store: WebhookStore;
beforeAll(async () => {
  t = await startTestApp();
  a = await createTenant(t);
  store = t.stores.webhooks;
});
afterAll(() => t.close());

const endpoint = async (id: string, isActive = 1) =>
  await store.insert({
    id,
    account_id: a.accountId,
    url: "https://hooks.example.com/x",
    events: '["webhook.ping"]',
    secret_sealed: "v1.x.y.z",
    is_active: isActive,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
  });
const delivery = async (webhookId: string, n: number, dueAt: number) =>
  await store.insertDelivery({
    id: `del_${webhookId}_${n}`,
    webhook_id: webhookId,
    account_id: a.accountId,
    event_id: `evt_${n}`,
    event: "webhook.ping",
    payload: "{}",
    status: "pending",
    attempts: 0,
    next_attempt_at: dueAt,
    created_at: "2026-01-01T00:00:00.000Z",
  });

// Due times are epoch ms on the database's clock (this machine's): an hour ago is due, an hour ahead is not.
const HOUR = 3_600_000;
const past = (ms: number) => Date.now() - HOUR + ms;

test("due rows: oldest first, active endpoints only, endpoints at their limit left out", async () => {
  await endpoint("wh_busy");
  await endpoint("wh_quiet");
  await endpoint("wh_off", 0);
  for (let i = 0; i < 150; i++) await delivery("wh_busy", i, past(1_000 + i));
  await delivery("wh_quiet", 0, past(1_500));
  await delivery("wh_off", 0, past(1_000));
  await delivery("wh_quiet", 1, Date.now() + HOUR); // not due yet

  // Oldest due first: the busy endpoint fills the batch …
  expect((await store.due(100)).map((d) => d.webhook_id)).toEqual(Array(100).fill("wh_busy"));
  // … unless it is left out because it is at its limit; then the quiet endpoint is next (its
  // second row is not due for an hour).
  expect((await store.due(100, ["wh_busy"])).map((d) => d.id)).toEqual(["del_wh_quiet_0"]);

  // Fan-out is idempotent per (endpoint, event): a second row for the same pair is ignored.
  await delivery("wh_quiet", 0, past(1_500));
  await store.insertDelivery({
    id: "del_dup",
    webhook_id: "wh_quiet",
    account_id: a.accountId,
    event_id: "evt_0",
    event: "webhook.ping",
    payload: "{}",
    status: "pending",
    attempts: 0,
    next_attempt_at: 1,
    created_at: "x",
  });
  expect(await store.countDeliveries("wh_quiet")).toBe(2);

  // Account deletion's immediate attempt looks up one event's pending rows on active endpoints.
  expect((await store.pendingForEvent(a.accountId, "evt_0")).map((d) => d.webhook_id).sort()).toEqual([
    "wh_busy",
    "wh_quiet",
  ]);
  await store.deactivateAll(a.accountId);
  expect(await store.pendingForEvent(a.accountId, "evt_0")).toEqual([]);
  expect(await store.due(100)).toEqual([]);
});

test("claiming an attempt is a lease: compare-and-set on the attempt count, and no one else while it holds", async () => {
  await endpoint("wh_claim");
  await delivery("wh_claim", 0, past(1_000));
  expect(await store.beginAttempt("del_wh_claim_0", 0, 50_000)).toBe(true);
  expect(await store.beginAttempt("del_wh_claim_0", 0, 50_000)).toBe(false); // a second claimant with the old count loses
  // One that read the row after the claim (count 1) loses too, even ignoring the due time (account deletion).
  expect(await store.beginAttempt("del_wh_claim_0", 1, 50_000, true)).toBe(false);
  const row = (await store.getDelivery("wh_claim", "del_wh_claim_0"))!;
  expect(row).toMatchObject({ attempts: 1, status: "pending" });
  expect(row.next_attempt_at).toBeGreaterThan(Date.now() + 40_000); // pushed out by the hold: not due meanwhile
  expect(await store.due(100, [])).toEqual([]);
  expect(await store.requeueFailed(row.id)).toBe(false); // only failed rows can be requeued
  // A stale attempt's outcome (attempt 2 never began) changes nothing; attempt 1's is recorded and lets go.
  const outcome = {
    status: "pending" as const,
    retryInMs: 0,
    responseStatus: 500,
    excerpt: null,
    error: "HTTP 500",
    deliveredAt: null,
  };
  expect(await store.recordOutcome(row.id, 2, outcome)).toBe(false);
  expect(await store.recordOutcome(row.id, 1, outcome)).toBe(true);
  expect((await store.due(100)).map((d) => d.id)).toEqual(["del_wh_claim_0"]);
  expect(await store.beginAttempt("del_wh_claim_0", 1, 50_000)).toBe(true);
});
