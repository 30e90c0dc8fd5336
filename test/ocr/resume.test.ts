import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { postCollection, postUpload, runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";

const dir = mkdtempSync(join(tmpdir(), "vsearch-ocr-resume-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("kill -9 during OCR, restart: the job picks up at the pending stage, the video stays searchable, the first stages are not redone", async () => {
  const media = scratchDir("ocr-resume");
  // 40 s of a test pattern whose clock changes every frame: every sampled frame is read (a wide window to kill in).
  const clip = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=5:duration=40",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "5",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "clock.mp4"),
  );
  // Every frame is read here: no OCR bound may cut the stage short on a busy machine.
  const env = {
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_VIDEOS: "100000",
    VSEARCH_OCR_MAX_FRAMES_PER_MINUTE: "600",
    VSEARCH_OCR_BUDGET_SECS_PER_MINUTE: "36000",
  };
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "resume"]);
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const auth = { authorization: `Bearer ${key}` };

  let server = await startServer(dir, env);
  const get = async (path: string) => (await (await fetch(`${server.url}${path}`, { headers: auth })).json()).data;
  const { job_id, video_id } = await postUpload(
    server.url,
    key,
    await postCollection(server.url, key),
    clip,
    "clock.mp4",
  );

  // Wait (bounded) until OCR is under way, then kill -9.
  let before: any = null;
  for (let i = 0; i < 1200 && !before; i++) {
    const job = await get(`/v1/jobs/${job_id}`);
    if (job.status === "done") break;
    if (job.stage === "ocr") before = await get(`/v1/videos/${video_id}`);
    else await Bun.sleep(25);
  }
  await server.stop("SIGKILL");
  expect(before, "OCR finished before it could be interrupted").not.toBeNull();
  expect(before.status).toBe("ready");
  expect(before.stages.ocr.status).toBe("pending");

  server = await startServer(dir, env);
  let job: any;
  const statuses = new Set<string>();
  try {
    for (let i = 0; i < 2400; i++) {
      job = await get(`/v1/jobs/${job_id}`);
      statuses.add((await get(`/v1/videos/${video_id}`)).status);
      if (job.status === "done" || job.status === "failed") break;
      await Bun.sleep(50);
    }
    expect(job).toMatchObject({ status: "done", stages_pending: [], error: null });
    // Searchable the whole time after the restart.
    expect([...statuses]).toEqual(["ready"]);
    const after = await get(`/v1/videos/${video_id}`);
    // The first stages' outcomes are the ones from before the kill (same timings: not run again).
    for (const s of ["probe", "shots", "frames", "embeddings", "scenes", "thumbnails"])
      expect(after.stages[s], s).toEqual(before.stages[s]);
    expect(after.stages.ocr.status).toBe("ran");
    expect(after.stages.ocr.reason).toMatch(/^\d+ frames \(own decode\): /);
  } finally {
    await server.stop();
  }
}, 180_000);
