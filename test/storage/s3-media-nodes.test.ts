/**
 * Issue 26: two nodes over one PostgreSQL database sharing one S3 bucket (s3rver), each with a
 * media root of its own (its local cache) and one cluster secret file. A video uploaded to the
 * `serve` node is ingested by the `worker` node, which only ever had it from the bucket; the serve
 * node, which never had the thumbnails, answers their links (and a ranged playback) with presigned
 * redirects to the bucket, and inlines a thumbnail it fetches into its cache; deleting the video
 * through it removes the objects and the worker's cached copy. A source browsers cannot play gets
 * its web rendition from the worker, through the bucket. PostgreSQL only: two data dirs
 * cannot share one embedded store.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { S3ObjectStore } from "../../src/media/object-store-s3.ts";
import { createKeyTenant, json, startTestApp, type TestApp, type Tenant, upload } from "../helpers/app.ts";
import { smallMp4 } from "../helpers/ffmpeg.ts";
import { type S3Server, startS3 } from "../helpers/s3.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { makeFormat, uploadAndIndex, waitForRendition } from "../playback/helpers.ts";
import { databaseUrlFor } from "../pg/backend.ts";
import { pgAvailable } from "../pg/database.ts";

describe.skipIf(!pgAvailable())("two nodes, one database, one bucket, a cache each", () => {
  const shared = tempDir("vsearch-s3-nodes-");
  let s3: S3Server;
  let server: TestApp;
  let worker: TestApp;
  let tenant: Tenant;
  let col: string;
  let objects: S3ObjectStore;

  beforeAll(async () => {
    s3 = await startS3();
    const secretFile = join(shared, "secret.key");
    writeFileSync(secretFile, randomBytes(32).toString("hex"), { mode: 0o600 });
    const env = {
      ...s3.env(),
      VSEARCH_DATABASE_URL: (await databaseUrlFor(shared))!,
      VSEARCH_SECRET_FILE: secretFile,
    };
    server = await startTestApp(env, { prefix: "vsearch-s3-serve-", role: "serve" });
    worker = await startTestApp(env, { prefix: "vsearch-s3-worker-", role: "worker" });
    await server.app.start();
    await worker.app.start();
    tenant = await createKeyTenant(server);
    col = (await json(await server.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data
      .id;
    objects = s3.objects();
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
    await server?.close();
    await s3?.stop();
  });

  test("uploaded to one, ingested by the other from the bucket, served by redirects from the first, deleted everywhere", async () => {
    const clip = await smallMp4(shared, 2);
    const res = await upload(server, tenant, col, clip);
    expect(res.status).toBe(202);
    const { video_id: id, job_id } = (await json(res)).data;
    const job = async () => await server.app.services.jobs.get(tenant.accountId, job_id);
    expect(await until(async () => ["done", "failed"].includes((await job()).status), 60_000, 100)).toBe(true);
    expect(await job()).toMatchObject({ status: "done", error: null });

    // The worker read the source from the bucket into its cache and wrote the thumbnails there.
    expect(readFileSync(join(worker.dir, "videos", id, "source.mp4")).equals(readFileSync(clip))).toBe(true);
    expect(existsSync(join(worker.dir, "videos", id, "poster.jpg"))).toBe(true);
    expect(existsSync(join(server.dir, "videos", id, "poster.jpg"))).toBe(false); // never on the server
    const keys = await objects.list(`videos/${id}/`);
    expect(keys).toEqual(expect.arrayContaining([`videos/${id}/source.mp4`, `videos/${id}/poster.jpg`]));
    expect(keys.some((k) => /\/shots\/\d+\.jpg$/.test(k))).toBe(true);

    const video = (await json(await server.request("GET", `/v1/videos/${id}`, { token: tenant.key }))).data;
    const thumb = new URL(video.thumbnail_url);
    const redirect = await server.request("GET", `${thumb.pathname}${thumb.search}`);
    expect(redirect.status).toBe(302);
    const jpeg = await fetch(redirect.headers.get("location")!);
    expect(jpeg.status).toBe(200);
    expect(
      Buffer.from(await jpeg.arrayBuffer()).equals(readFileSync(join(worker.dir, "videos", id, "poster.jpg"))),
    ).toBe(true);
    const play = new URL(video.playback_url);
    const toSource = await server.request("GET", `${play.pathname}${play.search}`);
    expect(toSource.status).toBe(302);
    const ranged = await fetch(toSource.headers.get("location")!, { headers: { range: "bytes=0-99" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 0-99/${readFileSync(clip).length}`);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(readFileSync(clip).subarray(0, 100))).toBe(true);

    // What needs the bytes on the server (an agent's thumbnail, an inlined one) fetches them into its cache.
    const opened = await server.app.services.media.open(
      id,
      { kind: "poster" },
      thumb.searchParams.get("expires") ?? undefined,
      thumb.searchParams.get("signature") ?? undefined,
    );
    expect(opened.path).toBe(join(server.dir, "videos", id, "poster.jpg"));
    expect(readFileSync(opened.path).equals(readFileSync(join(worker.dir, "videos", id, "poster.jpg")))).toBe(true);

    // `vsearch check` on either node: the bucket holds every source, nothing without a row.
    expect(await worker.app.services.backup.check()).toMatchObject({
      media_store: "bucket",
      videos_missing_source: [],
      orphan_objects: [],
    });

    expect((await server.request("DELETE", `/v1/videos/${id}`, { token: tenant.key })).ok).toBe(true);
    expect(await until(async () => (await objects.list(`videos/${id}/`)).length === 0, 10_000)).toBe(true);
    // The worker hears of it (cluster events) and drops its cached copy.
    expect(await until(() => !existsSync(join(worker.dir, "videos", id)), 10_000)).toBe(true);
    expect(existsSync(join(server.dir, "videos", id))).toBe(false);
  }, 120_000);

  test("a source browsers cannot play: the worker's web rendition is put in the bucket, and playback redirects to it", async () => {
    const avi = await makeFormat(shared, "mpeg4-avi");
    const id = await uploadAndIndex(server, tenant, col, avi);
    const v = await waitForRendition(server, tenant, id);
    expect(v.rendition).toMatchObject({ status: "ready" });
    expect(await objects.stat(`videos/${id}/web.mp4`)).toEqual({ size: v.rendition.size_bytes });
    const play = new URL(v.playback_url);
    expect(play.pathname).toBe(`/media/videos/${id}/web.mp4`);
    const redirect = await server.request("GET", `${play.pathname}${play.search}`);
    expect(redirect.status).toBe(302);
    const head = await fetch(redirect.headers.get("location")!, { headers: { range: "bytes=4-11" } });
    expect(head.status).toBe(206);
    expect(new TextDecoder().decode(await head.arrayBuffer())).toBe("ftypisom"); // an MP4
    expect(existsSync(join(server.dir, "videos", id, "web.mp4"))).toBe(false); // encoded on the worker only
  }, 120_000);
});
