/**
 * Deleting a video stops its work (issue 21, SPEC §8): its ingest, its OCR task and its web
 * rendition are all in flight, each with ffmpeg children; DELETE /v1/videos/{id} on each → every
 * ffmpeg of theirs exits within a bound (in this process the queue hears `videos.deleted` and
 * aborts them; another process's heartbeat finds the task gone: queue.test.ts), and nothing of
 * them remains: no folder (not even one a stopped stage re-created), no task, job or rendition row.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp, upload, uploadAndWait } from "../helpers/app.ts";
import { ffmpeg, longMp4, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { until } from "../helpers/wait.ts";

const media = scratchDir("cancel");
const ENV = {
  VSEARCH_RATE_LIMIT_VIDEOS: "100000",
  VSEARCH_RATE_LIMIT_JOBS: "100000",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  VSEARCH_BATCH_SIZE: "1", // many small model round trips: a long ingest to cut short
  VSEARCH_JOB_CONCURRENCY: "2", // one video's ingest beside another's OCR
};
let t: TestApp;
let a: Tenant;
let col: string;
let clips: { avi: string; long: string; text: string };
beforeAll(async () => {
  const [avi, long, text] = await Promise.all([
    // MPEG-4 Part 2 in AVI: gets a web rendition; 40 s of 640×480 fractal keeps x264 busy for
    // a while (2 s rendered once, looped) and has nothing that looks like text to OCR.
    ffmpeg(
      ["-f", "lavfi", "-i", "mandelbrot=s=640x480:rate=25", "-t", "2", "-c:v", "mpeg4", "-q:v", "6"],
      join(media, "fractal-2s.avi"),
    ).then((two) =>
      ffmpeg(["-stream_loop", "19", "-i", two, "-c:v", "mpeg4", "-q:v", "6"], join(media, "encode-me.avi")),
    ),
    // A minute with audio: frames and speech keep its ingest running.
    longMp4(media),
    // A clock that changes every frame: every sampled frame goes to OCR (a long OCR task). 4:2:0,
    // so browsers play it as it is: no rendition task takes the slot the next ingest needs.
    ffmpeg(
      [
        ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=5:duration=40"],
        ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"],
      ].flat(),
      join(media, "clock.mp4"),
    ),
  ]);
  clips = { avi, long, text };
  t = await startTestApp(ENV, { models: fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }) });
  await t.app.start();
  a = await createTenant(t);
  col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "c" } }))).data.id;
}, 180_000);
afterAll(() => t?.close());

/** Processes (of any parent) whose command line names this video's folder: its ffmpeg children. */
function processesOf(videoId: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`/videos/${videoId}/`)) pids.push(Number(pid));
    } catch {
      // exited while being read
    }
  }
  return pids;
}

const job = async (id: string) => await t.app.services.jobs.get(a.accountId, id);
const video = async (id: string) => await t.app.services.videos.get(a.accountId, id);

test("DELETE stops a video's rendition encode, another's ingest and a third's OCR: their ffmpeg exit, nothing is left", async () => {
  // 1. A searchable AVI whose rendition is encoding (renditions start while nothing is indexed).
  const encoding = await uploadAndWait(t, a, col, clips.avi, { timeoutMs: 300_000 });
  expect(encoding.job.status).toBe("done");
  expect(await until(async () => processesOf(encoding.video_id).length > 0, 60_000, 20)).toBe(true);
  expect((await video(encoding.video_id)).rendition?.status).toBe("processing");
  // Deleted while it encodes (its encode has a timeout proportional to its frames: media/bounds.ts,
  // so it is not kept waiting for the others under load).
  const stoppedWithin = 10_000;
  const remove = async (id: string) =>
    expect((await t.request("DELETE", `/v1/videos/${id}`, { token: a.key })).status).toBe(204);
  await remove(encoding.video_id);
  expect(await until(async () => processesOf(encoding.video_id).length === 0, stoppedWithin, 20)).toBe(true);

  // 2. Two uploads: one past its first stages and reading text (for tens of seconds: its OCR time
  // budget), then one still in its first stages. The second is sent once the first reads text:
  // sent together, the first's stages before OCR outlasted the second's decode on PostgreSQL.
  const reading = (await json(await upload(t, a, col, clips.text))).data;
  const readingText = async () =>
    (await job(reading.job_id)).stage === "ocr" &&
    (await video(reading.video_id)).stages.ocr?.status === "pending" &&
    processesOf(reading.video_id).length > 0;
  expect(await until(readingText, 240_000, 20)).toBe(true);
  const indexing = (await json(await upload(t, a, col, clips.long))).data;
  const inFlight = async () =>
    (await readingText()) &&
    (await job(indexing.job_id)).status === "processing" &&
    processesOf(indexing.video_id).length > 0;
  expect(await until(inFlight, 240_000, 20)).toBe(true);

  // 3. Delete both while each has ffmpeg running.
  const ids = [encoding.video_id, reading.video_id, indexing.video_id];
  await remove(reading.video_id);
  await remove(indexing.video_id);
  expect(await until(async () => ids.every((id) => processesOf(id).length === 0), stoppedWithin, 20)).toBe(true);

  // 4. Nothing of them remains, and nothing comes back once the stopped tasks have wound down.
  await until(async () => (await t.stores.tasks.list()).length === 0, 10_000);
  await Bun.sleep(1_000);
  for (const id of ids) {
    expect(existsSync(join(t.dir, "videos", id)), id).toBe(false);
    expect(await t.stores.videos.getById(id)).toBeNull();
    expect(await t.stores.playback.get(id)).toBeNull();
    expect(await t.stores.tasks.list({ videoId: id })).toEqual([]);
  }
  for (const j of [encoding.job_id, reading.job_id, indexing.job_id]) expect(await t.stores.jobs.getById(j)).toBeNull();
  expect((await t.request("GET", `/v1/jobs/${indexing.job_id}`, { token: a.key })).status).toBe(404);
}, 600_000);
