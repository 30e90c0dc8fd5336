/**
 * The domain stores' statements on both backends (issue 25): each public method of the account,
 * key, session, collection, credit, outbox, job, task, video, playback, media and webhook stores
 * runs on the embedded SQLite store and on PostgreSQL and gives the same answers, with fixtures
 * built through the stores themselves. (Search, index, feedback and system stores:
 * content-stores.test.ts.) Rows must not carry PostgreSQL's `rowid` column into answers.
 * Just over the ~450-line guide: one test per store, each reading as one story; fixtures are apart.
 */
import { describe, expect, test } from "vitest";
import { AccountStore } from "../../../src/accounts/store.ts";
import { ApiKeyStore } from "../../../src/api-keys/store.ts";
import { SessionStore } from "../../../src/auth/store.ts";
import { CollectionStore } from "../../../src/collections/store.ts";
import { CreditStore } from "../../../src/credits/store.ts";
import { EventStore } from "../../../src/events/store.ts";
import { JobStore } from "../../../src/jobs/store.ts";
import { TaskStore } from "../../../src/jobs/task-store.ts";
import { MediaStore } from "../../../src/media-serving/store.ts";
import { PlaybackStore } from "../../../src/playback/store.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import { WebhookStore } from "../../../src/webhooks/store.ts";
import { BACKENDS } from "./backends.ts";
import { newTenant, newVideo, type Tenant, uniqueId } from "./store-fixtures.ts";

const now = () => new Date().toISOString();
const noRowid = (rows: object[]) => {
  for (const r of rows) expect(Object.keys(r)).not.toContain("rowid");
};

describe.each(BACKENDS)("domain stores on $name", (backend) => {
  const it = test.skipIf(!backend.available());

  it("AccountStore: accounts, users, sessions ended but one, setup tokens", async () => {
    const b = await backend.open();
    const s = new AccountStore(b.exec);
    const t = await newTenant(b);
    const before = await s.countAccounts();
    const other = uniqueId("usr");
    await s.insertAccount({ id: other, name: "same name", plan: "free", credits_balance: null, created_at: now() });
    expect(await s.countAccounts()).toBe(before + 1);
    expect(await s.getAccount(other)).toEqual({
      id: other,
      name: "same name",
      plan: "free",
      credits_balance: null,
      created_at: expect.any(String),
    });
    expect((await s.findAccountsByName("same name")).map((a) => a.id)).toContain(other);
    const all = await s.listAccounts();
    noRowid(all);
    expect(all.map((a) => a.id).indexOf(t.account)).toBeLessThan(all.map((a) => a.id).indexOf(other));
    await s.setPlan(other, "payg");
    expect((await s.getAccount(other))!.plan).toBe("payg");
    expect(await s.lock(other)).toBe(true);
    expect(await s.lock("usr_missing")).toBe(false);

    const u1 = uniqueId("u");
    const u2 = uniqueId("u");
    const email = `${u1}@example.test`;
    for (const [id, role] of [
      [u1, "admin"],
      [u2, "member"],
    ] as const) {
      await s.insertUser({
        id,
        account_id: t.account,
        email: id === u1 ? email : `${id}@example.test`,
        password_hash: `hash-${id}`,
        role,
        must_change_password: id === u2,
        created_at: now(),
      });
    }
    expect(await s.findUserByEmail(email)).toMatchObject({ id: u1, password_hash: `hash-${u1}`, role: "admin" });
    expect(await s.getUser(u2)).toMatchObject({ id: u2, must_change_password: true, role: "member" });
    expect((await s.listUsers(t.account)).map((u) => u.id)).toEqual([u1, u2]);
    noRowid(await s.listUsers(t.account));
    expect(await s.countAdmins(t.account)).toBe(1);
    await s.setRole(u2, "admin");
    expect(await s.countAdmins(t.account)).toBe(2);
    await s.setPassword(u2, "new-hash", false);
    expect(await s.getUserWithHash(u2)).toMatchObject({ password_hash: "new-hash", must_change_password: false });

    const sessions = new SessionStore(b.exec);
    const expires = new Date(Date.now() + 3600_000).toISOString();
    for (const id of ["a", "b", "c"]) {
      await sessions.insert({
        id: `${u1}-${id}`,
        token_hash: `tok-${u1}-${id}`,
        user_id: u1,
        account_id: t.account,
        created_at: now(),
        expires_at: expires,
      });
    }
    expect(await sessions.findByHash(`tok-${u1}-a`)).toMatchObject({
      id: `${u1}-a`,
      ended_at: null,
      role: "admin",
      must_change_password: 0,
    });
    await sessions.end(`${u1}-a`, now());
    expect((await sessions.findByHash(`tok-${u1}-a`))!.ended_at).not.toBeNull();
    // All open sessions but `keep` end; the ended one is not counted again.
    expect(await s.endSessions(u1, now(), `${u1}-b`)).toBe(1);
    expect((await sessions.findByHash(`tok-${u1}-b`))!.ended_at).toBeNull();
    expect(await s.endSessions(u1, now())).toBe(1);
    expect((await sessions.findByHash(`tok-${u1}-b`))!.ended_at).not.toBeNull();

    await s.deleteUser(u2);
    expect(await s.getUser(u2)).toBeNull();
    await s.insertSetupToken(`setup-${u1}`, now());
    expect(await s.hasSetupToken(`setup-${u1}`)).toBe(true);
    await s.clearSetupTokens();
    expect(await s.hasSetupToken(`setup-${u1}`)).toBe(false);
    await s.closeAccess(t.account);
    await s.deleteAccount(other);
    expect(await s.getAccount(other)).toBeNull();
  });

  it("ApiKeyStore: insert, list in order, count active, revoke once, touch", async () => {
    const b = await backend.open();
    const s = new ApiKeyStore(b.exec);
    const t = await newTenant(b);
    const ids = [uniqueId("key"), uniqueId("key")];
    for (const id of ids) {
      await s.insert({
        id,
        user_id: t.account,
        name: `key ${id}`,
        prefix: id.slice(0, 8),
        key_hash: `h-${id}`,
        permissions: "read_only",
        last_used_at: null,
        created_at: now(),
        revoked_at: null,
      } as never);
    }
    const list = await s.list(t.account);
    noRowid(list);
    expect(list.map((k) => k.id)).toEqual(ids);
    expect(list[0]).toMatchObject({ user_id: t.account, permissions: "read_only" });
    expect(await s.countActive(t.account)).toBe(2);
    expect((await s.findByHash(`h-${ids[1]}`))!.id).toBe(ids[1]);
    expect(await s.revoke(ids[0]!, now())).toBe(true);
    expect(await s.revoke(ids[0]!, now())).toBe(false);
    expect(await s.countActive(t.account)).toBe(1);
    await s.touch(ids[1]!, "2030-01-01T00:00:00.000Z");
    expect((await s.get(ids[1]!))!.last_used_at).toBe("2030-01-01T00:00:00.000Z");
  });

  it("CollectionStore: name conflicts, pages, stats and posters per collection", async () => {
    const b = await backend.open();
    const s = new CollectionStore(b.exec);
    const t = await newTenant(b);
    expect(
      await s.insert({
        id: uniqueId("col"),
        user_id: t.account,
        name: `collection ${t.collection}`,
        created_at: now(),
      }),
    ).toBe(false);
    const second = uniqueId("col");
    expect(await s.insert({ id: second, user_id: t.account, name: "second", created_at: now() })).toBe(true);
    expect(await s.count(t.account)).toBe(2);
    const page = await s.list(t.account, 10, 0);
    noRowid(page);
    expect(page.map((c) => c.id)).toEqual([t.collection, second]);
    expect((await s.list(t.account, 1, 1)).map((c) => c.id)).toEqual([second]);
    expect(await s.rename(t.account, second, "renamed")).toBe(true);
    expect((await s.findByName(t.account, "renamed"))!.id).toBe(second);
    expect(await s.get(t.account, second)).toMatchObject({ id: second, user_id: t.account, name: "renamed" });

    const v = [] as string[];
    for (let i = 0; i < 3; i++) {
      v.push(
        await newVideo(b, t, {
          duration_secs: 2.5 * (i + 1),
          storage_bytes: 100 * (i + 1),
          poster_path: i < 2 ? `/p/${i}.jpg` : null,
          created_at: `2026-01-0${i + 1}T00:00:00.000Z`,
        }),
      );
    }
    const stats = await s.stats([t.collection, second]);
    expect(stats.get(t.collection)).toMatchObject({ video_count: 3, total_duration_secs: 15, storage_bytes: 600 });
    expect(stats.has(second)).toBe(false);
    // The newest with a poster first, at most one per collection.
    expect(await s.posters([t.collection, second], 1)).toEqual(new Map([[t.collection, [{ video_id: v[1] }]]]));
    expect((await s.videoIds(t.account, t.collection)).sort()).toEqual([...v].sort());
    await s.delete(t.account, second);
    expect(await s.get(t.account, second)).toBeNull();
  });

  it("CreditStore: charges clamp at zero, the ledger newest first, unlimited", async () => {
    const b = await backend.open();
    const s = new CreditStore(b.exec);
    const t = await newTenant(b, 5);
    expect(await s.balance(t.account)).toBe(5);
    expect(await s.apply(t.account, -2, (p) => `charge ${p}`)).toEqual({
      before: 5,
      after: 3,
      paid: 2,
      unlimitedBefore: false,
    });
    expect((await s.apply(t.account, -10, (p) => `charge ${p}`))!.after).toBe(0);
    expect((await s.ledger(t.account, 10)).map((r) => [r.delta, r.reason, r.balance_after])).toEqual([
      [-3, "charge 3", 0],
      [-2, "charge 2", 3],
    ]);
    await s.setUnlimited(t.account);
    expect(await s.balance(t.account)).toBeNull();
    expect(await s.balance("usr_missing")).toBeUndefined();
  });

  it("EventStore: record, claim with a hold, mark dispatched by the holder only, list by filter", async () => {
    const b = await backend.open();
    const s = new EventStore(b.exec);
    const t = await newTenant(b);
    const ids = [
      await s.record(t.account, "video.created", { video_id: "v1" }),
      await s.record(t.account, "video.deleted", { video_id: "v1" }),
    ];
    expect((await s.list({ accountId: t.account })).map((e) => e.id)).toEqual(ids);
    expect((await s.list({ accountId: t.account, type: "video.deleted" })).map((e) => e.id)).toEqual([ids[1]]);
    expect((await s.list()).length).toBeGreaterThanOrEqual(2);
    const claimed = (await s.claimUndispatched("owner-a", 60_000, 100)).filter((e) => ids.includes(e.id));
    expect(claimed.map((e) => e.id)).toEqual(ids);
    expect(claimed[0]).toMatchObject({ claimed_by: "owner-a", payload: JSON.stringify({ video_id: "v1" }) });
    // Held: another dispatcher gets none of them.
    expect((await s.claimUndispatched("owner-b", 60_000, 100)).filter((e) => ids.includes(e.id))).toEqual([]);
    expect(await s.markDispatched(claimed[0]!.seq, now(), "owner-b")).toBe(false);
    expect(await s.markDispatched(claimed[0]!.seq, now(), "owner-a")).toBe(true);
    expect(await s.markDispatched(claimed[1]!.seq)).toBe(true);
    expect((await s.byId(ids[0]!))!.dispatched_at).not.toBeNull();
    expect((await s.undispatched(100)).filter((e) => ids.includes(e.id))).toEqual([]);
    await s.deleteForAccount(t.account);
    expect(await s.list({ accountId: t.account })).toEqual([]);
  });

  it("JobStore: lifecycle, filters, retry of a failed job, counts", async () => {
    const b = await backend.open();
    const s = new JobStore(b.exec);
    const t = await newTenant(b);
    const video = await newVideo(b, t);
    const ids = [uniqueId("job"), uniqueId("job")];
    for (const id of ids) await s.insert({ id, account_id: t.account, video_id: video, created_at: now() });
    await s.started(ids[0]!);
    await s.progress(ids[0]!, "frames", 40);
    expect(await s.get(t.account, ids[0]!)).toMatchObject({
      status: "processing",
      stage: "frames",
      progress_pct: 40,
      attempts: 1,
    });
    await s.requeued(ids[0]!);
    await s.setPending(ids[0]!, ["ocr"]);
    expect((await s.getById(ids[0]!))!.stages_pending).toBe('["ocr"]');
    expect(await s.finish(ids[0]!, "failed", { code: "X", message: "broke" })).toBe(true);
    expect(await s.finish(ids[1]!, "done")).toBe(true);
    expect(await s.count(t.account, {})).toBe(2);
    expect(await s.count(t.account, { status: "failed", videoId: video })).toBe(1);
    const page = await s.list(t.account, {}, 10, 0);
    noRowid(page);
    expect(page.map((j) => j.id).sort()).toEqual([...ids].sort());
    expect((await s.list(t.account, { status: "done" }, 10, 0)).map((j) => j.id)).toEqual([ids[1]]);
    const retried = await s.retry(t.account, ids[0]!);
    expect(retried).toMatchObject({ id: ids[0], status: "queued", attempts: 0, error_code: null });
    noRowid([retried!]);
    expect(await s.retry(t.account, ids[1]!)).toBeNull();
    const counts = await s.countsByStatus();
    expect(counts.every((c) => typeof c.n === "number")).toBe(true);
  });

  it("TaskStore: enqueue once, fair claim, renew, release, finish, release a node", async () => {
    const b = await backend.open();
    const s = new TaskStore(b.exec);
    const t1 = await newTenant(b);
    const t2 = await newTenant(b);
    const v1 = await newVideo(b, t1);
    const v2 = await newVideo(b, t2);
    const jobs = new JobStore(b.exec);
    await jobs.insert({ id: `j1-${v1}`, account_id: t1.account, video_id: v1, created_at: now() });
    await jobs.insert({ id: `j2-${v2}`, account_id: t2.account, video_id: v2, created_at: now() });
    expect(
      await s.enqueue({ kind: "ingest", accountId: t1.account, videoId: v1, jobId: `j1-${v1}`, payload: { a: 1 } }),
    ).toBe(true);
    expect(await s.enqueue({ kind: "ingest", accountId: t1.account, videoId: v1, jobId: `j1-${v1}` })).toBe(false);
    expect(await s.enqueue({ kind: "ocr", accountId: t1.account, videoId: v1, jobId: `j1-${v1}` })).toBe(true);
    expect(await s.enqueue({ kind: "ingest", accountId: t2.account, videoId: v2, jobId: `j2-${v2}` })).toBe(true);
    expect(await s.waiting(t1.account, "ingest")).toBe(1);
    const mine = await s.list({ accountId: t1.account });
    expect(mine.map((r) => [r.kind, r.payload])).toEqual([
      ["ingest", '{"a":1}'],
      ["ocr", null],
    ]);
    expect((await s.list({ videoId: v2 })).map((r) => r.account_id)).toEqual([t2.account]);

    const req = { kinds: ["ingest"] as const, node: "node-1", leaseMs: 60_000, maxRunningPerAccount: 1 };
    const a = await s.claim({ ...req, owner: "w1" });
    expect(a).toMatchObject({ kind: "ingest", state: "running", lease_owner: "w1", attempts: 1 });
    // The other account next (fewest running), then nothing: each account is at its cap.
    const c = await s.claim({ ...req, owner: "w2" });
    expect(c!.account_id).not.toBe(a!.account_id);
    expect(await s.claim({ ...req, kinds: ["ingest", "ocr"], owner: "w3" })).toBeNull();
    expect(await s.renew("w1", 120_000)).toEqual(new Set([a!.id]));
    expect(await s.release(a!.id, "w1", true)).toBe(true);
    expect(await s.release(a!.id, "w1", true)).toBe(false);
    expect((await s.list({ accountId: a!.account_id })).find((r) => r.id === a!.id)).toMatchObject({
      state: "queued",
      attempts: 0,
      lease_owner: null,
    });
    const again = await s.claim({ ...req, owner: "w4" });
    expect(again!.id).toBe(a!.id);
    expect(await s.finish(again!.id, "someone-else")).toBe(false);
    expect(await s.finish(again!.id, "w4")).toBe(true);
    expect(await s.typicalMs(again!.account_id)).toEqual(expect.any(Number));
    expect(await s.releaseNode("node-1")).toMatchObject([{ id: c!.id, state: "queued", lease_owner: null }]);
    const states = (await s.countsByState()).filter((r) => r.state === "queued");
    expect(states.every((r) => typeof r.n === "number" && r.n >= 1)).toBe(true);
  });

  it("TaskStore: a released task counts the time it ran as its account's service, not the clock's epoch", async () => {
    const b = await backend.open();
    let skew = 0;
    const s = new TaskStore(b.exec, { skewMs: () => skew });
    const jobs = new JobStore(b.exec);
    const [a, bb] = [await newTenant(b), await newTenant(b)];
    const queue = async (t: Tenant) => {
      const v = await newVideo(b, t);
      await jobs.insert({ id: `j-${v}`, account_id: t.account, video_id: v, created_at: now() });
      expect(await s.enqueue({ kind: "ingest", accountId: t.account, videoId: v, jobId: `j-${v}` })).toBe(true);
    };
    const req = { kinds: ["ingest"] as const, node: "n", leaseMs: 600_000, maxRunningPerAccount: 1 };
    // The PostgreSQL database is this file's, shared by its tests: no other test's task competes.
    await b.exec.run("DELETE FROM tasks");
    // B runs tasks of 5 s each (database clock) and always has one more waiting (an account that
    // goes idle starts level again when it comes back: not what this is about).
    for (let i = 0; i < 3; i++) await queue(bb);
    const runB = async (owner: string) => {
      const task = await s.claim({ ...req, owner });
      expect(task!.account_id).toBe(bb.account);
      skew += 5_000;
      expect(await s.finish(task!.id, owner)).toBe(true);
    };
    await runB("w1");
    // A arrives (level with B, just under it): its task runs a moment and is handed back (a stop).
    await queue(a);
    const mine = await s.claim({ ...req, owner: "w2" });
    expect(mine!.account_id).toBe(a.account);
    skew += 10; // it ran 10 ms
    expect(await b.uow.run(() => s.release(mine!.id, "w2", true))).toBe(true);
    // B goes next (A's moment put it just past B), runs 5 s more; now A has been served 5 s less.
    await runB("w3");
    // So A's task goes before B's last: a release that charged the clock's epoch (~1.8e12 ms, as
    // RETURNING read the cleared `started_at`) put A behind B for good.
    expect((await s.claim({ ...req, owner: "w4" }))!.account_id).toBe(a.account);
  });

  it("VideoStore: list and count by filter, stages, same size and content, segments", async () => {
    const b = await backend.open();
    const s = new VideoStore(b.exec);
    const t = await newTenant(b);
    const a = await newVideo(b, t, { created_at: "2026-01-01T00:00:00.000Z", file_size_bytes: 7 });
    const c = await newVideo(b, t, { created_at: "2026-01-02T00:00:00.000Z", status: "failed", file_size_bytes: 7 });
    const got = await s.get(t.account, a);
    noRowid([got!]);
    expect(got).toMatchObject({ id: a, status: "ready", has_audio: 0, file_size_bytes: 7, content_hash: null });
    expect((await s.list(t.account, {}, 10, 0)).map((v) => v.id)).toEqual([c, a]);
    noRowid(await s.list(t.account, {}, 10, 0));
    expect(
      (await s.list(t.account, { statuses: ["failed"], collectionId: t.collection }, 10, 0)).map((v) => v.id),
    ).toEqual([c]);
    expect(await s.count(t.account, { statuses: ["ready", "failed"] })).toBe(2);
    await s.setStage(a, "probe", { status: "done" });
    await s.setStage(a, "frames", { status: "done", n: 3 }, 55);
    const after = (await s.getById(a))!;
    expect(JSON.parse(after.stages)).toEqual({ probe: { status: "done" }, frames: { status: "done", n: 3 } });
    expect(after.progress_pct).toBe(55);
    await s.update(a, { filename: "renamed.mp4", warning: "partial" });
    expect(await s.getById(a)).toMatchObject({ filename: "renamed.mp4", warning: "partial" });
    expect((await s.sameSize(t.account, t.collection, 7)).map((v) => v.id)).toEqual([a, c]);
    noRowid(await s.sameSize(t.account, t.collection, 7));
    await s.setContentHash(a, "abc");
    await s.setContentHash(a, "def");
    expect((await s.findByContent(t.account, t.collection, "abc"))!.id).toBe(a);
    expect(await s.segmentsCount(a)).toBe(0);
    expect((await s.allIds(t.account)).sort()).toEqual([a, c].sort());
    await s.delete(c);
    expect(await s.getById(c)).toBeNull();
  });

  it("PlaybackStore and MediaStore: renditions once, retried after failure, served paths", async () => {
    const b = await backend.open();
    const s = new PlaybackStore(b.exec);
    const media = new MediaStore(b.exec);
    const t = await newTenant(b);
    const v = await newVideo(b, t, { poster_path: "/p.jpg", storage_bytes: 10 });
    expect(await s.enqueue(v, t.account, now())).toBe(true);
    expect(await s.enqueue(v, t.account, now())).toBe(false);
    await s.markProcessing(v);
    expect(await s.get(v)).toMatchObject({ video_id: v, status: "processing" });
    expect(await s.finish(v, { status: "failed", reason: "encoder" })).toBe(true);
    expect(await s.enqueue(v, t.account, now())).toBe(true);
    expect(await s.finish(v, { status: "ready", reason: "done", path: "/r.mp4", sizeBytes: 5 })).toBe(true);
    expect(await s.readyPath(v)).toBe("/r.mp4");
    expect(await s.readyVideos([v, "vid_missing"])).toEqual(new Set([v]));
    expect(await s.sourcePath(v)).toBe(`/data/${v}.mp4`);
    expect((await new VideoStore(b.exec).getById(v))!.storage_bytes).toBe(15);
    expect(await s.transcript(v)).toEqual([]);
    expect(await media.video(v)).toEqual({
      id: v,
      source_path: `/data/${v}.mp4`,
      poster_path: "/p.jpg",
      mime_type: "video/mp4",
    });
    expect(await media.renditionPath(v)).toBe("/r.mp4");
    expect(await media.shotThumbnail(v, 0)).toBeNull();
  });

  it("WebhookStore: subscribers by JSON events, deliveries once, due, attempts and outcomes", async () => {
    const b = await backend.open();
    const s = new WebhookStore(b.exec);
    const t = await newTenant(b);
    const hooks = [uniqueId("wh"), uniqueId("wh"), uniqueId("wh")];
    const events = [["video.created", "job.completed"], ["job.completed"], ["video.created"]];
    for (const [i, id] of hooks.entries()) {
      await s.insert({
        id,
        account_id: t.account,
        url: `https://example.test/${i}`,
        events: JSON.stringify(events[i]),
        secret_sealed: "sealed",
        is_active: i === 2 ? 0 : 1,
        created_at: now(),
        updated_at: now(),
      });
    }
    noRowid(await s.list(t.account));
    expect((await s.list(t.account)).map((w) => w.id)).toEqual(hooks);
    expect(await s.countActive(t.account)).toBe(2);
    expect((await s.subscribers(t.account, "video.created")).map((w) => w.id)).toEqual([hooks[0]]);
    expect((await s.subscribers(t.account, "job.completed")).map((w) => w.id).sort()).toEqual(
      [hooks[0], hooks[1]].sort(),
    );
    noRowid(await s.subscribers(t.account, "job.completed"));
    await s.update(hooks[1]!, { events: '["video.deleted"]', url: "https://example.test/x" });
    expect(await s.get(t.account, hooks[1]!)).toMatchObject({
      url: "https://example.test/x",
      events: '["video.deleted"]',
    });

    const delivery = (id: string, webhook: string, event: string) => ({
      id,
      webhook_id: webhook,
      account_id: t.account,
      event_id: event,
      event: "video.created",
      payload: "{}",
      status: "pending" as const,
      attempts: 0,
      next_attempt_at: null,
      created_at: now(),
    });
    const d = [uniqueId("dlv"), uniqueId("dlv"), uniqueId("dlv")];
    await s.insertDelivery(delivery(d[0]!, hooks[0]!, "evt_1"));
    await s.insertDelivery(delivery(uniqueId("dlv"), hooks[0]!, "evt_1")); // same endpoint and event: ignored
    await s.insertDelivery(delivery(d[1]!, hooks[1]!, "evt_1"));
    await s.insertDelivery({ ...delivery(d[2]!, hooks[0]!, "evt_2"), next_attempt_at: Date.now() + 3600_000 });
    expect(await s.countDeliveries(hooks[0]!)).toBe(2);
    noRowid(await s.listDeliveries(hooks[0]!, 10, 0));
    expect((await s.listDeliveries(hooks[0]!, 1, 1)).length).toBe(1);
    expect((await s.pendingForEvent(t.account, "evt_1")).map((x) => x.id).sort()).toEqual([d[0], d[1]].sort());
    const due = (await s.due(10)).filter((x) => x.account_id === t.account);
    expect(due.map((x) => x.id).sort()).toEqual([d[0], d[1]].sort());
    noRowid(due);
    expect((await s.due(10, [hooks[0]!])).filter((x) => x.account_id === t.account).map((x) => x.id)).toEqual([d[1]]);

    expect(await s.beginAttempt(d[0]!, 0, 60_000)).toBe(true);
    expect(await s.beginAttempt(d[0]!, 0, 60_000)).toBe(false);
    expect((await s.due(10)).map((x) => x.id)).not.toContain(d[0]);
    const out = { responseStatus: 500, excerpt: "no", error: "HTTP 500", deliveredAt: null };
    expect(await s.recordOutcome(d[0]!, 1, { status: "pending", retryInMs: 0, ...out })).toBe(true);
    expect((await s.due(10)).map((x) => x.id)).toContain(d[0]);
    expect(await s.beginAttempt(d[0]!, 1, 60_000)).toBe(true);
    expect(await s.recordOutcome(d[0]!, 1, { status: "failed", retryInMs: null, ...out })).toBe(false);
    expect(await s.recordOutcome(d[0]!, 2, { status: "failed", retryInMs: null, ...out })).toBe(true);
    expect(await s.getDelivery(hooks[0]!, d[0]!)).toMatchObject({
      status: "failed",
      attempts: 2,
      next_attempt_at: null,
      lease_expires_at: null,
      response_status: 500,
    });
    // Not due yet, but account deletion attempts at once.
    expect(await s.beginAttempt(d[2]!, 0, 60_000)).toBe(false);
    expect(await s.beginAttempt(d[2]!, 0, 60_000, true)).toBe(true);
    expect(await s.requeueFailed(d[0]!)).toBe(true);
    expect(await s.requeueFailed(d[0]!)).toBe(false);
    expect(await s.getDelivery(hooks[0]!, d[0]!)).toMatchObject({ status: "pending", manual_retry: 1, error: null });
    await s.deactivateAll(t.account);
    expect(await s.countActive(t.account)).toBe(0);
    expect(await s.subscribers(t.account, "video.created")).toEqual([]);
    await s.delete(hooks[2]!);
    expect(await s.getById(hooks[2]!)).toBeNull();
  });
});
