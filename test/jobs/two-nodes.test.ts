/**
 * Two servers over one database (what PostgreSQL and `vsearch worker` will make common; here two
 * apps on one data dir, each with its own connection and node id): a second server that starts
 * while the first indexes a video, on a machine whose clock runs five minutes ahead, does not take
 * the job. Leases are on the database's clock and nothing is released at start but a node's own;
 * before, the second start released every lease and its clock saw the first's lease as expired.
 */
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp, type TestApp, upload } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { until } from "../helpers/wait.ts";

const ENV = { VSEARCH_BATCH_SIZE: "1", VSEARCH_RATE_LIMIT_JOBS: "100000" };
const models = fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper });
const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps.reverse()) await t.close();
});

test("a second server started beside a running job, its clock five minutes ahead, leaves the job to the first: it runs once", async () => {
  const clip = await ffmpeg(
    [
      ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=40"],
      ["-f", "lavfi", "-i", "sine=frequency=300:duration=40"],
      ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ].flat(),
    join(scratchDir("two-nodes"), "clip.mp4"),
  );
  const first = await startTestApp(ENV, { models, prefix: "vsearch-two-nodes-" });
  apps.push(first);
  await first.app.start();
  const a = await createKeyTenant(first);
  const col = (await json(await first.request("POST", "/v1/collections", { token: a.key, json: { name: "c" } }))).data
    .id;
  const { job_id } = (await json(await upload(first, a, col, clip))).data;
  const job = async () => await first.app.services.jobs.get(a.accountId, job_id);
  expect(await until(async () => (await job()).status === "processing", 120_000, 20)).toBe(true);

  const second = await startTestApp(ENV, { models, dataDir: first.dir, nodeId: "node_second" });
  apps.push(second);
  second.clock.now += 5 * 60_000;
  await second.app.start();
  expect(
    await until(async () => (await job()).status === "done" || (await job()).status === "failed", 300_000, 50),
  ).toBe(true);
  expect(await job()).toMatchObject({ status: "done", error: null });
  expect((await first.stores.jobs.getById(job_id))!.attempts).toBe(1); // claimed once: by the first server
}, 600_000);
