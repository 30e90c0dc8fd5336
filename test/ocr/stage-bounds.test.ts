/**
 * The `ocr` stage through the real app and HTTP (issues 28 and 21):
 *   - with an image model the stage reads the gray frames the frame decode left, and a caption that
 *     stays on screen over moving footage is recognised once (before: every frame, twice);
 *   - the per-video bounds: frames read per minute of video, and the time budget after which the
 *     stage ends `partial` and says so on the video's stages; what was read stays searchable.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, upload, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { captionedClip, footage, LATIN_FONT } from "../helpers/text.ts";

const media = scratchDir("ocr-stage-bounds");

async function ingest(t: TestApp, tenant: Tenant, file: string): Promise<{ video: any; job: any }> {
  const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: file } }))).data
    .id;
  const up = await upload(t, tenant, col, file, { filename: file.split("/").pop()! });
  expect(up.status).toBe(202);
  const { video_id, job_id } = (await json(up)).data;
  let job: any;
  for (const deadline = Date.now() + 240_000; Date.now() < deadline; await Bun.sleep(100)) {
    job = (await json(await t.request("GET", `/v1/jobs/${job_id}`, { token: tenant.key }))).data;
    if (job.status === "done" || job.status === "failed") break;
  }
  const video = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
  return { video, job };
}

const searchOcr = async (t: TestApp, tenant: Tenant, query: string) =>
  (
    await json(
      await t.request("POST", "/v1/search", {
        token: tenant.key,
        body: new URLSearchParams({ query, modes: "ocr" }).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
    )
  ).data;

/** `secs` of 640×360 navy at 5 fps showing "Slide number N" for N = the second. */
const slides = (name: string, secs: number) =>
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      `color=c=navy:size=640x360:rate=5:duration=${secs}`,
      "-vf",
      `drawtext=fontfile=${LATIN_FONT}:text='Slide number %{eif\\:trunc(t)+1\\:d}':fontsize=32:fontcolor=white:x=40:y=160`,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "5",
      "-pix_fmt",
      "yuv420p",
    ],
    `${media}/${name}`,
    180_000,
  );

describe("a caption that stays on screen, with an image model (frames from the frame decode)", () => {
  let t: TestApp;
  let tenant: Tenant;
  let video: any;
  beforeAll(async () => {
    // 16 s of moving footage with one outlined caption the whole time.
    const clip = await captionedClip(media, "caption.mp4", footage(2), 16, [
      {
        from: 0,
        to: 16,
        text: "Harbour lighthouse tour",
        size: 36,
        style: "fontcolor=white:borderw=2:bordercolor=black",
        x: "(w-tw)/2",
        y: "h-120",
      },
    ]);
    t = await startTestApp({ VSEARCH_RATE_LIMIT_JOBS: "100000" }, { models: fixedCatalog({ "image-text": tinyClip }) });
    await t.app.start();
    tenant = await createTenant(t);
    ({ video } = await ingest(t, tenant, clip));
  }, 300_000);
  afterAll(() => t?.close());

  test("the stage reads the frame decode's frames and recognises the caption once; it is searchable over its whole time", async () => {
    expect(video.stages.ocr.status).toBe("ran");
    const m =
      /^(\d+) frames \(frame decode\): (\d+) read \((\d+) lines? recognized, (\d+) kept from earlier frames\), (\d+) without text, (\d+) unchanged$/.exec(
        video.stages.ocr.reason,
      );
    expect(m, video.stages.ocr.reason).not.toBeNull();
    const [sampled, read, recognized, , , unchanged] = m!.slice(1).map(Number);
    expect(sampled).toBeGreaterThanOrEqual(16);
    expect(read).toBe(1);
    expect(recognized).toBe(1);
    expect(unchanged).toBe(sampled - 1);
    const found = await searchOcr(t, tenant, "lighthouse");
    expect(found).toHaveLength(1);
    expect(found[0].segments).toHaveLength(1);
    expect(found[0].segments[0].timestamp_start).toBe(0);
    expect(found[0].segments[0].timestamp_end).toBeGreaterThanOrEqual(15.5);
  });

  test("the gray frames are removed once the stage has read them", async () => {
    const { readdirSync } = await import("node:fs");
    const dir = `${t.dir}/videos/${video.id}`;
    expect(readdirSync(dir)).not.toContain("ocr-frames.tmp");
    expect(readdirSync(dir)).not.toContain("frames.tmp");
  });
});

describe("bounds on one video's OCR (no model: the stage decodes on its own)", () => {
  let t: TestApp;
  let tenant: Tenant;
  let short: string;
  let long: string;
  beforeAll(async () => {
    [short, long] = await Promise.all([slides("slides20.mp4", 20), slides("slides60.mp4", 60)]);
  }, 300_000);
  afterAll(() => t?.close());

  test("ocr_max_frames_per_minute: past the limit frames are not read, and the stage says how many", async () => {
    t = await startTestApp(
      { VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_OCR_MAX_FRAMES_PER_MINUTE: "5" },
      {
        models: fixedCatalog({}),
      },
    );
    await t.app.start();
    tenant = await createTenant(t);
    const { video, job } = await ingest(t, tenant, short);
    expect(job.status).toBe("done");
    expect(video.stages.ocr.status).toBe("ran");
    expect(video.stages.ocr.reason).toMatch(/^20 frames \(own decode\): 5 read /);
    expect(video.stages.ocr.reason).toMatch(/; 15 not read: more than 5 frames of one minute of video had text$/);
    expect(video.stages.ocr.count).toBe(5);
    expect((await searchOcr(t, tenant, "slide")).length).toBe(1);
    await t.close();
  }, 300_000);

  test("the time budget: the stage ends `partial` and says, in words, how far it read and why; what it read is searchable", async () => {
    // 1 s of OCR for this minute of video. Sixty frames that each need reading take far longer on
    // any CPU (the detector alone costs tens of ms a frame), so reading stops part-way.
    t = await startTestApp(
      {
        VSEARCH_RATE_LIMIT_JOBS: "100000",
        VSEARCH_OCR_BUDGET_SECS_PER_MINUTE: "1",
        VSEARCH_OCR_MAX_FRAMES_PER_MINUTE: "600",
      },
      { models: fixedCatalog({}) },
    );
    await t.app.start();
    tenant = await createTenant(t);
    const { video, job } = await ingest(t, tenant, long);
    // The job is done and the video ready: a bound is not a failure.
    expect(job).toMatchObject({ status: "done", error: null });
    expect(video.status).toBe("ready");
    const ocr = video.stages.ocr;
    expect(ocr.status).toBe("partial");
    expect(ocr.reason).toMatch(
      /^on-screen text was read up to 0:\d\d of 1:00: this video's OCR time budget \(1 s, 1 s per minute of video\) ran out, so text shown after that is not searchable\. \d+ frames \(own decode\): \d+ read/,
    );
    const upTo = Number(/read up to 0:(\d\d)/.exec(ocr.reason)![1]);
    expect(upTo).toBeLessThan(59);
    expect(ocr.count).toBeGreaterThanOrEqual(1);
    // The first slide was read; the last was not.
    expect(await searchOcr(t, tenant, '"slide number 1"')).toHaveLength(1);
    expect(await searchOcr(t, tenant, '"slide number 60"')).toEqual([]);
  }, 300_000);
});
