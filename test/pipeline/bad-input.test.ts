import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp, upload as uploadAs } from "../helpers/app.ts";
import { until } from "../helpers/wait.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";

const media = scratchDir("bad-input");
let t: TestApp;
let tenant: Tenant;
let col: string;

beforeAll(async () => {
  t = await startTestApp(
    { VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_RATE_LIMIT_UPLOAD: "1000" },
    { models: fixedCatalog({ "image-text": tinyClip }) },
  );
  await t.app.start();
  tenant = await createTenant(t);
  col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data.id;
});
afterAll(() => t.close());

const upload = (path: string) => uploadAs(t, tenant, col, path);

/** The job once it ended (or at the 60 s deadline). */
async function waitJob(jobId: string) {
  let job: any;
  await until(
    async () => ["done", "failed"].includes((job = await t.app.services.jobs.get(tenant.accountId, jobId)).status),
    60_000,
    100,
  );
  return job;
}

const orphanCheck = async () => {
  // every video folder on disk has a row, every row has its source
  const dirs = readdirSync(join(t.dir, "videos"));
  expect(new Set(dirs)).toEqual(new Set(await t.stores.videos.allIds()));
};

describe("awkward media end to end", () => {
  test("a 0.5 s clip and an odd-sized (333×197) clip index fine", async () => {
    const short = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25:duration=0.5",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
      ],
      join(media, "half.mp4"),
    );
    const odd = await ffmpeg(
      ["-f", "lavfi", "-i", "testsrc=size=333x197:rate=10:duration=2", "-c:v", "mpeg4"],
      join(media, "odd.avi"),
    );
    for (const path of [short, odd]) {
      const res = await upload(path);
      expect(res.status, path).toBe(202);
      const job = await waitJob((await json(res)).data.job_id);
      expect(job.status, JSON.stringify(job.error)).toBe("done");
      const v = (await json(await t.request("GET", `/v1/videos/${job.video_id}`, { token: tenant.key }))).data;
      expect(v.stages.embeddings.count).toBeGreaterThanOrEqual(1);
    }
    const odd2 = (await json(await t.request("GET", "/v1/videos?status=ready", { token: tenant.key }))).data.find(
      (v: any) => v.filename === "odd.avi",
    );
    expect(odd2).toMatchObject({ width: 333, height: 197, mime_type: "video/x-msvideo" });
    await orphanCheck();
  });

  test("a truncated MP4 (moov at the end, cut in half) is refused at upload with nothing left behind", async () => {
    const whole = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25:duration=3",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
      ],
      join(media, "whole.mp4"),
    );
    const bytes = readFileSync(whole);
    const cut = join(media, "cut.mp4");
    writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const before = (await t.stores.videos.allIds()).length;
    const res = await upload(cut);
    expect(res.status).toBe(415);
    expect((await json(res)).detail).toMatchObject({
      code: "UNSUPPORTED_FORMAT",
      message: expect.stringContaining("could not be decoded"),
    });
    expect(await t.stores.videos.allIds()).toHaveLength(before);
    await orphanCheck();
  });

  test("a truncated faststart MP4 and corrupt bytes mid-stream still index what can be decoded", async () => {
    const fast = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=25:duration=6",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-g",
        "25",
        "-pix_fmt",
        "yuv420p",
        "-movflags",
        "+faststart",
      ],
      join(media, "fast.mp4"),
    );
    const bytes = Buffer.from(readFileSync(fast));
    const truncated = join(media, "fast-truncated.mp4");
    writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    const corrupt = join(media, "fast-corrupt.mp4");
    const damaged = Buffer.from(bytes);
    for (let i = Math.floor(damaged.length * 0.5); i < Math.floor(damaged.length * 0.5) + 4000; i++)
      damaged[i] = (i * 131) & 0xff;
    writeFileSync(corrupt, damaged);
    for (const path of [truncated, corrupt]) {
      const res = await upload(path);
      expect(res.status, path).toBe(202);
      const job = await waitJob((await json(res)).data.job_id);
      expect(job.status, `${path}: ${JSON.stringify(job.error)}`).toBe("done");
      expect((await t.stores.index.framesOf(job.video_id)).length).toBeGreaterThanOrEqual(1);
    }
    await orphanCheck();
  });
});
