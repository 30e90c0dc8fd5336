/**
 * The places that were correct only because SQLite had one writer and no other JavaScript ran
 * mid-transaction (issue 24): each is hit by many concurrent flows here, on both backends — the
 * embedded SQLite store (one writer behind the executor's lock, awaits between statements) and
 * PostgreSQL (READ COMMITTED, several connections). The services are the app's own, over stores
 * built on each backend's executor.
 *
 * Each test fails when its fix is reverted (checked by hand, each fix reverted alone, issue 24's
 * report): on PostgreSQL the credit charge (a read then an unconditional write lost charges), the
 * threshold moves (no account lock: steps lost), the stage outcomes and the e-mail race; on
 * SQLite the API key limit (count and insert were not one unit of work: all 30 passed the
 * check), the stage outcomes (each run wrote the whole JSON from its own copy) and the e-mail race
 * (a raw unique violation). Charges and threshold moves that run inside one unit of work cannot
 * fail on SQLite: its executor runs a unit of work whole, one at a time.
 */
import { describe, expect, test } from "vitest";
import { AccountService } from "../../../src/accounts/service.ts";
import { AccountStore } from "../../../src/accounts/store.ts";
import { ApiKeyService } from "../../../src/api-keys/service.ts";
import { ApiKeyStore } from "../../../src/api-keys/store.ts";
import { AppError } from "../../../src/core/errors.ts";
import { CollectionStore } from "../../../src/collections/store.ts";
import { CreditService } from "../../../src/credits/service.ts";
import { CreditStore } from "../../../src/credits/store.ts";
import { EventBus } from "../../../src/events/bus.ts";
import { EventStore } from "../../../src/events/store.ts";
import { IndexStore } from "../../../src/indexing/store.ts";
import { StageRun } from "../../../src/pipeline/stage-run.ts";
import { FeedbackService } from "../../../src/search/feedback-service.ts";
import { FeedbackStore } from "../../../src/search/feedback-store.ts";
import { thresholdSpec } from "../../../src/search/thresholds.ts";
import { SearchStore } from "../../../src/search/store.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import { BACKENDS, type OpenedBackend } from "./backends.ts";

type Backend = OpenedBackend;

/** Segment starts of the feedback test: one feedback on each, all at once. */
const STARTS = [1, 3, 5, 7, 9, 11, 13, 15];

let accounts = 0;
async function newAccount(b: Backend, plan: "free" | "payg" = "payg", credits: number | null = null): Promise<string> {
  const id = `usr_atom${++accounts}_${Math.random().toString(36).slice(2, 8)}`;
  await new AccountStore(b.exec).insertAccount({
    id,
    name: `atomicity ${accounts}`,
    plan,
    credits_balance: credits,
    created_at: new Date().toISOString(),
  });
  return id;
}

describe.each(BACKENDS)("concurrent writers on $name", (backend) => {
  const it = test.skipIf(!backend.available());

  it("50 parallel search charges take exactly 50 credits (no charge lost)", async () => {
    const b = await backend.open();
    const account = await newAccount(b, "payg", 100);
    const store = new CreditStore(b.exec);
    const credits = new CreditService(
      b.uow,
      store,
      new EventStore(b.exec),
      { perMinute: 1, perSearch: 1, lowThreshold: 10 },
      new EventBus(b.uow),
    );
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => credits.chargeSearch(account)));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(await store.balance(account)).toBe(50);
    const ledger = await store.ledger(account, 100);
    expect(ledger).toHaveLength(50);
    // Every row's balance_after is distinct: each charge saw the one before it.
    expect(new Set(ledger.map((r) => r.balance_after)).size).toBe(50);
  });

  it("charges racing past zero never overdraw: 30 charges on 12 credits leave 0 and take 12", async () => {
    const b = await backend.open();
    const account = await newAccount(b, "payg", 12);
    const store = new CreditStore(b.exec);
    const events = new EventStore(b.exec);
    const credits = new CreditService(
      b.uow,
      store,
      events,
      { perMinute: 1, perSearch: 1, lowThreshold: 5 },
      new EventBus(b.uow),
    );
    await Promise.all(Array.from({ length: 30 }, () => credits.chargeSearch(account)));
    expect(await store.balance(account)).toBe(0);
    const ledger = await store.ledger(account, 100);
    expect(ledger.reduce((sum, r) => sum + r.delta, 0)).toBe(-12);
    // One downward crossing of each mark: one credits.low, one credits.exhausted.
    const types = (await events.list({ accountId: account })).map((e) => e.type).sort();
    expect(types).toEqual(["credits.exhausted", "credits.low"]);
  });

  it("30 parallel API key creations on a 20-key plan leave exactly 20 (the rest 409)", async () => {
    const b = await backend.open();
    const account = await newAccount(b, "payg");
    const keyStore = new ApiKeyStore(b.exec);
    const keys = new ApiKeyService(b.uow, keyStore, new AccountStore(b.exec));
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => keys.create(account, { name: `k${i}`, permissions: "read_only" })),
    );
    const refused = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(20);
    expect(refused.every((e) => e instanceof AppError && e.code === "API_KEY_LIMIT_REACHED")).toBe(true);
    expect(await keyStore.countActive(account)).toBe(20);
  });

  it("eight feedbacks at once on one threshold move it by eight steps, all counted", async () => {
    const b = await backend.open();
    const account = await newAccount(b);
    const videos = new VideoStore(b.exec);
    const feedbackStore = new FeedbackStore(b.exec);
    const feedback = new FeedbackService(
      b.uow,
      new SearchStore(b.exec),
      feedbackStore,
      { require: async () => ({}) },
      Date.now,
    );
    const video = await insertVideo(b, videos, account);
    // Segments the feedback can name: two transcript segments of the video.
    await new IndexStore(b.exec, false).replaceTranscript(
      { videoId: video.id, accountId: account, collectionId: video.collection_id },
      STARTS.map((start) => ({ start, end: start + 1, text: `segment ${start}` })),
      "m",
    );
    const send = (start: number) =>
      feedback.submit(account, {
        video_id: video.id,
        timestamp_start: start,
        signal: "up",
        query: "q",
        raw_score: 0.3,
        threshold_key: "transcript:default",
      });
    await Promise.all(STARTS.map(send));
    const row = (await feedbackStore.thresholds(account)).get("transcript:default");
    expect(row?.ups).toBe(STARTS.length);
    const rows = await Promise.all(STARTS.map((t) => feedbackStore.findFeedback(account, video.id, t)));
    const applied = rows.reduce((s, r) => s + r!.threshold_delta, 0);
    // The threshold moved by exactly what the two rows say they applied.
    expect(Math.abs(applied)).toBeGreaterThan(0);
    const spec = thresholdSpec("transcript:default")!;
    expect(row!.value).toBeCloseTo(spec.defaultValue + applied, 6);
  });

  it("two runs recording different stages of one video at once keep both outcomes", async () => {
    const b = await backend.open();
    const account = await newAccount(b);
    const videos = new VideoStore(b.exec);
    const video = await insertVideo(b, videos, account);
    const signal = new AbortController().signal;
    // An ingest run and an OCR run of the same video, each with its own in-memory copy.
    const ingest = new StageRun(videos, video.id, () => {}, signal);
    const ocr = new StageRun(videos, video.id, () => {}, signal);
    await Promise.all([
      ingest.record("probe", { status: "ran", took_ms: 5 }),
      ocr.record("ocr", { status: "ran", took_ms: 7 }),
      ingest.record("shots", { status: "ran", took_ms: 9 }),
    ]);
    const stages = JSON.parse((await videos.getById(video.id))!.stages) as Record<string, { status: string }>;
    expect(Object.keys(stages).sort()).toEqual(["ocr", "probe", "shots"]);
  });

  it("two users created at once with one e-mail: one is created, the other is a 409, never a 500", async () => {
    const b = await backend.open();
    const account = await newAccount(b);
    const store = new AccountStore(b.exec);
    const service = new AccountService(store);
    const email = `same-${account}@example.com`;
    const results = await Promise.allSettled(
      [0, 1].map(() => service.createUser({ account_id: account, email, password: "correct horse battery" })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(AppError);
    expect((refused.reason as AppError).code).toBe("EMAIL_TAKEN");
    expect((await store.listUsers(account)).filter((u) => u.email === email)).toHaveLength(1);
  });
});

async function insertVideo(b: Backend, videos: VideoStore, account: string) {
  const collection = `col_${account}`;
  await new CollectionStore(b.exec).insert({
    id: collection,
    user_id: account,
    name: "c",
    created_at: new Date().toISOString(),
  });
  const id = `vid_${account}`;
  const at = new Date().toISOString();
  await videos.insert({
    id,
    account_id: account,
    collection_id: collection,
    filename: "a.mp4",
    status: "processing",
    source_path: `videos/${id}/source.mp4`,
    file_size_bytes: 1,
    created_at: at,
    updated_at: at,
  } as never);
  return (await videos.getById(id))!;
}
