import { join } from "node:path";
import { expect, test } from "vitest";
import { postCollection, postUpload, runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";
import { openStores } from "../helpers/stores.ts";
import { tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-crash-");

test("kill -9 mid-ingest, restart: the job resumes by itself and nothing is duplicated", async () => {
  const media = scratchDir("crash");
  const clip = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x240:rate=10:duration=60",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=300:duration=60",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "10",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ],
    join(media, "long.mp4"),
  );
  // Batch size 1: many small pool round trips, a wide window to kill in. Polling needs a high jobs rate limit.
  // OCR off: it would read the pattern's clock on every sampled frame (most of the job's CPU), and
  // what is checked here is frames, vectors and shots; a kill inside OCR: test/ocr/resume.test.ts.
  const env = { VSEARCH_BATCH_SIZE: "1", VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_OCR_THREADS: "0" };
  await runCliJson(
    [
      "--data-dir",
      dir,
      "models",
      "import",
      join(FIXTURE_MODELS, "tiny-random-clip"),
      "--role",
      "image-text",
      "--no-load-check",
    ],
    env,
  );
  await runCliJson(
    [
      "--data-dir",
      dir,
      "models",
      "import",
      join(FIXTURE_MODELS, "tiny-random-whisper"),
      "--role",
      "speech",
      "--no-load-check",
    ],
    env,
  );
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "crash"]);
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const auth = { authorization: `Bearer ${key}` };

  let server = await startServer(dir, env);
  const { job_id, video_id } = await postUpload(
    server.url,
    key,
    await postCollection(server.url, key),
    clip,
    "long.mp4",
  );

  // Wait (bounded) until indexing is under way and some frames are written, then kill -9.
  let killedAt: any = null;
  for (let i = 0; i < 600 && !killedAt; i++) {
    const job = (await (await fetch(`${server.url}/v1/jobs/${job_id}`, { headers: auth })).json()).data;
    if (job.status === "done") break;
    if (job.status === "processing" && job.progress_pct >= 12) killedAt = job;
    else await Bun.sleep(25);
  }
  await server.stop("SIGKILL");
  expect(killedAt, "the job finished before it could be interrupted").not.toBeNull();

  server = await startServer(dir, env);
  let job: any;
  try {
    for (let i = 0; i < 1200; i++) {
      job = (await (await fetch(`${server.url}/v1/jobs/${job_id}`, { headers: auth })).json()).data;
      if (job.status === "done" || job.status === "failed") break;
      await Bun.sleep(50);
    }
  } finally {
    await server.stop();
  }
  expect(job.status, JSON.stringify(job.error)).toBe("done");

  const stores = openStores(dir);
  try {
    const frames = await stores.index.framesOf(video_id);
    expect(frames.length).toBeGreaterThan(10);
    expect(new Set(frames.map((f) => f.timestamp)).size).toBe(frames.length);
    // One vector per frame, and no vector left over from the killed run.
    expect(frames.every((f) => f.has_vector)).toBe(true);
    expect((await stores.system.counts()).frames).toBe(frames.length);
    expect((await stores.system.orphanVectors()).frame_vectors).toBe(0);
    const shots = (await stores.search.shotsOfVideos([video_id])).get(video_id) ?? [];
    expect(new Set(shots.map((s) => s.shot_index)).size).toBe(shots.length);
    expect(await stores.events.list({ type: "job.completed" })).toHaveLength(1);
    const jobs = await stores.jobs.list(acct.id, { videoId: video_id }, 10, 0);
    expect(jobs).toHaveLength(1);
    expect(jobs[0].attempts).toBe(2);
  } finally {
    stores.close();
  }
}, 120_000);
