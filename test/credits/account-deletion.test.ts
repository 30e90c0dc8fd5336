import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { EVENT_TYPES } from "../../src/events/schema.ts";
import { createTenant, json, metric, startTestApp, type Tenant, type TestApp, uploadAndWait } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "../webhooks/receiver.ts";

// With the tiny CLIP model, so the deleted video has frames, vectors and in-memory index rows too.
let t: TestApp;
let mp4: string;
beforeAll(async () => {
  t = await startTestApp(
    {
      VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
      VSEARCH_WEBHOOK_RETRY_DELAYS: "0.2,0.2",
      VSEARCH_RATE_LIMIT_UPLOAD: "1000",
      VSEARCH_RATE_LIMIT_WEBHOOKS: "1000",
    },
    { models: fixedCatalog({ "image-text": tinyClip }) },
  );
  await t.app.start();
  mp4 = await smallMp4(scratchDir("account-deletion"), 2);
});
afterAll(() => t.close());

async function uploadAndIndex(ten: Tenant) {
  const col = (await json(await t.request("POST", "/v1/collections", { token: ten.key, json: { name: "c" } }))).data.id;
  const up = await uploadAndWait(t, ten, col, mp4, { timeoutMs: 60_000, filename: "x.mp4" });
  expect(up.job.status).toBe("done");
  return { col, ...up };
}

const webhook = async (ten: Tenant, url: string, events: readonly string[]) =>
  (await json(await t.request("POST", "/v1/webhooks", { token: ten.key, json: { url, events } }))).data;

/** Every file and folder under the data dir, relative to it. */
function walk(dir: string, root = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? [relative(root, p), ...walk(p, root)] : [relative(root, p)];
  });
}

test("account.deleted reaches the receiver, then nothing of the account remains — and nothing of another account goes", async () => {
  const doomed = await createTenant(t, "Doomed");
  const survivor = await createTenant(t, "Survivor");
  const rx = startReceiver();
  const rxOff = startReceiver();
  const rxSurvivor = startReceiver();
  try {
    const wh = await webhook(doomed, rx.url, EVENT_TYPES);
    rx.setSecret(wh.secret);
    const off = await webhook(doomed, rxOff.url, ["account.deleted"]);
    await t.request("PATCH", `/v1/webhooks/${off.id}`, { token: doomed.key, json: { is_active: false } });
    const whSurvivor = await webhook(survivor, rxSurvivor.url, EVENT_TYPES);
    const mine = await uploadAndIndex(doomed);
    const theirs = await uploadAndIndex(survivor);
    await t.app.services.credits.grant(doomed.accountId, 500); // above the low threshold (100): no credits.low
    expect(await until(async () => rx.hits.length === 2 && rxSurvivor.hits.length === 2)).toBe(true); // video.created, job.completed
    const frames = (await t.stores.index.framesOf(mine.video_id)).length;
    expect(frames).toBeGreaterThan(0);
    // A search loads the in-memory vector index, which the purge must empty of the video too.
    const search = (ten: Tenant) => {
      const fd = new FormData();
      fd.append("query", "a test pattern");
      fd.append("modes", "video");
      return t.request("POST", "/v1/search", { token: ten.key, body: fd });
    };
    expect((await search(doomed)).status).toBe(200);
    const memoryRows = () => metric(t, "vsearch_search_index_vectors");
    const memoryRowsBefore = (await memoryRows())!;
    expect(memoryRowsBefore).toBeGreaterThan(0);
    const doomedIds = [
      doomed.accountId,
      mine.video_id,
      mine.job_id,
      mine.col,
      wh.id,
      off.id,
      ...(await Promise.all([wh.id, off.id].map(async (id) => await t.stores.webhooks.listDeliveries(id, 1000, 0))))
        .flat()
        .map((d) => d.id),
      ...(await t.stores.events.list({ accountId: doomed.accountId })).map((e) => e.id),
      ...(await t.stores.accounts.listUsers(doomed.accountId)).map((u) => u.id),
      ...(await t.stores.apiKeys.list(doomed.accountId)).map((k) => k.id),
    ];
    expect(doomedIds.length).toBeGreaterThan(10);

    const r = await t.app.services.accountDeletion.delete(doomed.accountId);
    expect(r).toEqual({
      user_id: doomed.accountId,
      videos_deleted: 1,
      deliveries: [{ webhook_id: wh.id, status: "succeeded" }],
    });
    const last = rx.hits.at(-1)!;
    expect(last.signatureOk).toBe(true);
    expect(last.body).toMatchObject({ event: "account.deleted", data: { user_id: doomed.accountId } });
    await Bun.sleep(500); // the purge's video.deleted must not follow it
    expect(rx.hits.map((h) => h.body.event).sort()).toEqual(["account.deleted", "job.completed", "video.created"]);
    expect(rxOff.hits).toHaveLength(0);

    // The database: no row mentions any of the account's ids; no vector lost its frame or shot.
    expect((await t.stores.system.tablesMentioning([theirs.video_id])).get(theirs.video_id)).toContain("videos"); // the audit sees rows
    expect(Object.fromEntries(await t.stores.system.tablesMentioning(doomedIds))).toEqual({});
    expect(await t.stores.system.orphanVectors()).toEqual({ frame_vectors: 0, shot_vectors: 0 });
    expect(await memoryRows()).toBeLessThan(memoryRowsBefore);
    // The disk: nothing under the data dir names the video.
    expect(walk(t.dir).filter((p) => p.includes(mine.video_id))).toEqual([]);
    expect(walk(t.dir).some((p) => p.includes(theirs.video_id))).toBe(true);
    // Its credentials are gone.
    expect((await t.request("GET", "/v1/collections", { token: doomed.key })).status).toBe(401);
    expect((await t.request("GET", "/v1/collections", { token: doomed.adminToken })).status).toBe(401);
    await expect(t.app.services.accountDeletion.delete(doomed.accountId)).rejects.toThrow(doomed.accountId);

    // The other account is untouched.
    expect((await t.request("GET", `/v1/videos/${theirs.video_id}`, { token: survivor.key })).status).toBe(200);
    expect((await search(survivor)).status).toBe(200);
    expect(
      (await json(await t.request("GET", "/v1/webhooks", { token: survivor.key }))).data.map((w: any) => w.id),
    ).toEqual([whSurvivor.id]);
    expect(rxSurvivor.hits.map((h) => h.body.event)).not.toContain("account.deleted");
    expect(await t.stores.index.framesOf(theirs.video_id)).toHaveLength(frames);
  } finally {
    await rx.stop();
    await rxOff.stop();
    await rxSurvivor.stop();
  }
}, 60_000);
