/**
 * Issue 26: the media in an S3-compatible bucket (`s3_bucket`), on the embedded store (one node).
 * s3rver (test/helpers/s3.ts) is the bucket. An upload's source and the ingest's poster and shot
 * thumbnails are put there before their rows commit; with the node's local copies gone, media
 * links redirect to presigned URLs of the bucket (a ranged GET answers 206 there), a clip export
 * fetches the source back into the cache and puts its clip in the bucket; deleting the video removes its objects; a bucket
 * that cannot be reached refuses the upload with 503 MEDIA_STORE_UNAVAILABLE and leaves nothing.
 * Two nodes sharing one bucket on PostgreSQL: s3-media-nodes.test.ts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bucketOrigin, type S3ObjectStore } from "../../src/media/object-store-s3.ts";
import {
  createKeyTenant,
  json,
  startTestApp,
  type TestApp,
  type Tenant,
  upload,
  uploadAndWait,
} from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { smallMp4 } from "../helpers/ffmpeg.ts";
import { type S3Server, startS3 } from "../helpers/s3.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { waitForRendition } from "../playback/helpers.ts";

const PREFIX = "install-1/";

describe("media in an S3 bucket, one node", () => {
  let s3: S3Server;
  let t: TestApp;
  let tenant: Tenant;
  let col: string;
  let objects: S3ObjectStore;
  const clips = tempDir("vsearch-s3-media-");

  beforeAll(async () => {
    s3 = await startS3();
    t = await startTestApp(s3.env(PREFIX), { prefix: "vsearch-s3-node-" });
    await t.app.start();
    tenant = await createKeyTenant(t);
    col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data.id;
    objects = s3.objects(PREFIX);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await s3?.stop();
  });

  test("ingested media are in the bucket, served from it by presigned redirects (ranges too), and deleted with the video", async () => {
    const clip = await smallMp4(clips, 2);
    const up = await uploadAndWait(t, tenant, col, clip);
    expect(up.job.status).toBe("done");
    const id = up.video_id;
    const keys = await objects.list(`videos/${id}/`);
    expect(keys).toContain(`videos/${id}/source.mp4`);
    expect(keys).toContain(`videos/${id}/poster.jpg`);
    expect(keys.some((k) => /\/shots\/\d+\.jpg$/.test(k))).toBe(true);

    // Once the rendition task has looked at the source (it reads it), this node's cache is emptied:
    // everything below comes from the bucket.
    expect((await waitForRendition(t, tenant, id)).rendition.status).toBe("not_needed");
    rmSync(join(t.dir, "videos", id), { recursive: true, force: true });
    const video = (await json(await t.request("GET", `/v1/videos/${id}`, { token: tenant.key }))).data;
    const poster = new URL(video.thumbnail_url);
    const res = await t.request("GET", `${poster.pathname}${poster.search}`);
    expect(res.status).toBe(302);
    const location = res.headers.get("location")!;
    expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/${PREFIX}videos/${id}/poster.jpg?`)).toBe(true);
    expect(location).toMatch(/X-Amz-Signature=[0-9a-f]{64}/);
    const jpeg = new Uint8Array(await (await fetch(location)).arrayBuffer());
    expect([jpeg[0], jpeg[1]]).toEqual([0xff, 0xd8]);

    const play = new URL(video.playback_url);
    const redirect = await t.request("GET", `${play.pathname}${play.search}`);
    expect(redirect.status).toBe(302);
    const ranged = await fetch(redirect.headers.get("location")!, { headers: { range: "bytes=100-199" } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(readFileSync(clip).subarray(100, 200))).toBe(true);
    expect(existsSync(join(t.dir, "videos", id, "source.mp4"))).toBe(false); // redirected, not fetched

    // A clip export: the source fetched back from the bucket into the cache, the clip cut and put there.
    const exported = await t.request("GET", `/v1/videos/${id}/clip?start=0.5&end=1.5`, { token: tenant.key });
    expect(exported.status).toBe(200);
    const clipLink = new URL((await json(exported)).data.url);
    expect(existsSync(join(t.dir, "videos", id, "source.mp4"))).toBe(true);
    expect(await objects.stat(`videos/${id}/clips/500-1500.mp4`)).not.toBeNull();
    const toClip = await t.request("GET", `${clipLink.pathname}${clipLink.search}`);
    expect(toClip.status).toBe(302);
    expect((await fetch(toClip.headers.get("location")!, { headers: { range: "bytes=4-7" } })).status).toBe(206);

    // A forged signature is refused before the bucket is asked.
    const forged = `${poster.pathname}?expires=${poster.searchParams.get("expires")}&signature=${"0".repeat(64)}`;
    expect((await t.request("GET", forged)).status).toBe(403);

    // The dashboard may load images and video from the bucket's origin.
    expect(bucketOrigin(t.config)).toBe(s3.endpoint);
    const page = await t.request("GET", "/");
    expect(page.headers.get("content-security-policy")).toContain(`media-src 'self' ${s3.endpoint}`);
    expect(page.headers.get("content-security-policy")).toContain(`img-src 'self' ${s3.endpoint}`);

    // `vsearch check`'s service: sources looked for in the bucket.
    const report = await t.app.services.backup.check();
    expect(report).toMatchObject({ media_store: "bucket", videos_missing_source: [], orphan_objects: [] });

    // A backup does not copy the bucket, and says where the media are.
    const backup = await t.app.services.backup.create({ out: join(clips, "backup.tar"), includeModels: false });
    expect(backup).toMatchObject({ videos: 1, media_in_bucket: `s3://${s3.bucket}/${PREFIX} at ${s3.endpoint}` });
    const names = Bun.spawnSync(["tar", "-tf", backup.file]).stdout.toString().split("\n");
    expect(names).toContain("secret.key"); // (and vsearch.db on the embedded store; PostgreSQL: pg_dump)
    expect(names.filter((n) => n.startsWith("videos/"))).toEqual([]);
    if (!t.config.databaseUrl) {
      // Restored (embedded store): the rows come back without files, the bucket has them; not judged missing.
      const restored = await runCli(["restore", backup.file, "--data-dir", tempDir("vsearch-s3-restore-"), "--json"]);
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout)).toMatchObject({
        videos: 1,
        backup: { media_in_bucket: `s3://${s3.bucket}/${PREFIX} at ${s3.endpoint}` },
      });
    }

    expect((await t.request("DELETE", `/v1/videos/${id}`, { token: tenant.key })).ok).toBe(true);
    expect(await until(async () => (await objects.list(`videos/${id}/`)).length === 0, 10_000)).toBe(true);
  }, 120_000);

  test("a node whose cache keeps nothing (media_cache_mb 0) still indexes and exports: its files are evicted and fetched again when needed", async () => {
    const tiny = await startTestApp(
      { ...s3.env("tiny/"), VSEARCH_MEDIA_CACHE_MB: "0" },
      { prefix: "vsearch-s3-tiny-" },
    );
    try {
      await tiny.app.start();
      const owner = await createKeyTenant(tiny);
      const c = (await json(await tiny.request("POST", "/v1/collections", { token: owner.key, json: { name: "c" } })))
        .data.id;
      const first = await uploadAndWait(tiny, owner, c, await smallMp4(clips, 2));
      // Indexed although every publish and fetch ran an eviction pass (held folders: media-cache.test.ts).
      expect(first.job.status).toBe("done");
      expect((await waitForRendition(tiny, owner, first.video_id)).rendition.status).toBe("not_needed");
      const firstSource = join(tiny.dir, "videos", first.video_id, "source.mp4");
      const second = await uploadAndWait(tiny, owner, c, await smallMp4(clips, 3));
      expect(second.job.status).toBe("done");
      // The first video's files went from this node once the second's were added; the bucket keeps them.
      expect(await until(() => !existsSync(firstSource), 10_000)).toBe(true);
      const tinyObjects = s3.objects("tiny/");
      expect(await tinyObjects.stat(`videos/${first.video_id}/source.mp4`)).not.toBeNull();
      // Needed again: fetched back, held while ffmpeg cuts, the clip put in the bucket.
      const exported = await tiny.request("GET", `/v1/videos/${first.video_id}/clip?start=0.5&end=1.5`, {
        token: owner.key,
      });
      expect(exported.status).toBe(200);
      expect(await tinyObjects.stat(`videos/${first.video_id}/clips/500-1500.mp4`)).not.toBeNull();
    } finally {
      await tiny.close();
    }
  }, 120_000);

  test("a bucket that cannot be reached: the upload answers 503 MEDIA_STORE_UNAVAILABLE and leaves no row and no file", async () => {
    // Port 1 on loopback: nothing listens there.
    const down = await startTestApp({ ...s3.env(PREFIX), VSEARCH_S3_ENDPOINT: "http://127.0.0.1:1" });
    try {
      const other = await createKeyTenant(down);
      const c = (await json(await down.request("POST", "/v1/collections", { token: other.key, json: { name: "c" } })))
        .data.id;
      const res = await upload(down, other, c, await smallMp4(clips, 1));
      expect(res.status).toBe(503);
      const body = await json(res);
      expect(body.detail.code).toBe("MEDIA_STORE_UNAVAILABLE");
      expect(body.detail.message).toMatch(/media store/);
      expect(res.headers.get("retry-after")).toBe("30");
      expect((await json(await down.request("GET", "/v1/videos", { token: other.key }))).data).toEqual([]);
      const videos = join(down.dir, "videos");
      expect(existsSync(videos) ? readdirSync(videos) : []).toEqual([]);
      const tmp = join(down.dir, "uploads", "tmp");
      expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
    } finally {
      await down.close();
    }
  }, 60_000);

  test("a bucket away when a task runs: the task is handed back, not failed, and completes once the bucket answers", async () => {
    const late = await startTestApp(s3.env("install-2/"), { prefix: "vsearch-s3-away-" });
    try {
      const other = await createKeyTenant(late);
      const c = (await json(await late.request("POST", "/v1/collections", { token: other.key, json: { name: "c" } })))
        .data.id;
      const res = await upload(late, other, c, await smallMp4(clips, 1));
      expect(res.status).toBe(202);
      const { video_id: id, job_id: jobId } = (await json(res)).data;
      // The bucket has the source; this node's cached copy goes, so the ingest must fetch it back.
      expect(await s3.objects("install-2/").stat(`videos/${id}/source.mp4`)).not.toBeNull();
      await s3.pause();
      rmSync(join(late.dir, "videos", id), { recursive: true, force: true });
      await late.app.start(); // the queue starts: the ingest is claimed and meets the unreachable bucket
      await Bun.sleep(3_000); // a claim (1 s poll) and a retry after the first backoff
      const waiting = await late.app.services.jobs.get(other.accountId, jobId);
      expect(waiting.status).not.toBe("failed");
      expect(waiting.status).not.toBe("done");
      await s3.resume();
      let job: any;
      await until(async () => {
        job = await late.app.services.jobs.get(other.accountId, jobId);
        return job.status === "done" || job.status === "failed";
      }, 60_000);
      expect(job.status, JSON.stringify(job.error)).toBe("done");
      expect(await s3.objects("install-2/").stat(`videos/${id}/poster.jpg`)).not.toBeNull();
    } finally {
      await late.close();
      if (!(await fetch(s3.endpoint).catch(() => null))) await s3.resume(); // the next test's bucket
    }
  }, 90_000);

  test("doctor names the media store, and says clearly when the bucket cannot be reached (exit 1, no secret printed)", async () => {
    const dataDir = tempDir("vsearch-s3-doctor-");
    // This node's cache: one cached file of 1000 bytes against media_cache_mb.
    mkdirSync(join(dataDir, "videos", "vid_cached"), { recursive: true });
    writeFileSync(join(dataDir, "videos", "vid_cached", "source.mp4"), Buffer.alloc(1000));
    const ok = await runCli(["doctor", "--data-dir", dataDir, "--json"], {
      ...s3.env(PREFIX),
      VSEARCH_MEDIA_CACHE_MB: "64",
    });
    const report = JSON.parse(ok.stdout);
    expect(report.media_store).toEqual({
      kind: "s3",
      bucket: `s3://${s3.bucket}/${PREFIX} at ${s3.endpoint}`,
      error: null,
      cache: { used_bytes: 1000, bound_bytes: 64 * 2 ** 20, videos: 1 },
    });
    const text = await runCli(["doctor", "--data-dir", dataDir], s3.env(PREFIX));
    expect(text.stdout).toMatch(/media cache +1000 B of [\d.]+ [GM]iB \(media_cache_mb\), 1 video;/);
    const down = await runCli(["doctor", "--data-dir", dataDir], {
      ...s3.env(PREFIX),
      VSEARCH_S3_ENDPOINT: "http://127.0.0.1:1",
      VSEARCH_S3_SECRET_ACCESS_KEY: "do-not-print-me",
    });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(
      /media store +s3:\/\/media\/install-1\/ at http:\/\/127\.0\.0\.1:1: UNREACHABLE: .*check s3_endpoint/,
    );
    expect(down.stdout + down.stderr).not.toContain("do-not-print-me");
    // A bucket without its keys is refused at start, naming what is missing.
    const partial = await runCli(["doctor", "--data-dir", dataDir], { VSEARCH_S3_BUCKET: "media" });
    expect(partial.code).not.toBe(0);
    expect(partial.stderr).toMatch(/s3_bucket is set; it also needs s3_endpoint/);
  }, 120_000);
});
