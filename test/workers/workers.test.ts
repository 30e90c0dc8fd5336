/**
 * `vsearch worker` processes over one PostgreSQL database (issue 26, SPEC §13): a `serve --role
 * serve` takes the uploads and claims nothing; three workers (separate data dirs, the media
 * folder shared as every node mounts it) claim the ingest tasks. One worker is killed with
 * SIGKILL while it holds a task: its lease runs out (VSEARCH_QUEUE_LEASE_SECS=3) and another
 * worker runs the task again. Every job ends done once, every video is ready with the same rows
 * as its identical siblings, credits are charged once per video, and one job.completed event is
 * written per job. A worker whose active model differs from the servers' claims nothing.
 * PostgreSQL only (vitest.config.ts PG_ONLY): a worker needs database_url.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { postCollection, postUpload, runCli, runCliJson, startServer, startWorker } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";
import { openStores } from "../helpers/stores.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { databaseUrlFor } from "../pg/backend.ts";

const CLIPS = 20;
const dir = tempDir("vsearch-workers-");
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

/** A worker's data dir: its own node id and runtime (the media are the server's: VSEARCH_MEDIA_ROOT). */
const workerDir = (name: string): string => tempDir(`vsearch-worker-${name}-`);

test("3 workers ingest 20 clips while one is SIGKILLed mid-job: every job done once, credits and job.completed once each; a worker with another model claims nothing", async () => {
  const url = (await databaseUrlFor(dir))!;
  expect(url).toMatch(/^postgres/);
  // Twenty distinct files (the upload's duplicate check) of one content: a remux with another title each.
  const media = scratchDir("workers");
  const base = await ffmpeg(
    [
      ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=5:duration=3"],
      ["-f", "lavfi", "-i", "sine=frequency=300:duration=3"],
      ["-c:v", "libx264", "-preset", "ultrafast", "-g", "5", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ].flat(),
    join(media, "base.mp4"),
  );
  const clips = await Promise.all(
    Array.from({ length: CLIPS }, (_, i) =>
      ffmpeg(["-i", base, "-c", "copy", "-metadata", `title=clip ${i}`], join(media, `clip${i}.mp4`)),
    ),
  );
  const env = { VSEARCH_OCR_THREADS: "0", VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_RATE_LIMIT_UPLOAD: "100000" };
  for (const [model, role] of [
    ["tiny-random-clip", "image-text"],
    ["tiny-random-whisper", "speech"],
  ])
    await runCliJson(
      ["--data-dir", dir, "models", "import", join(FIXTURE_MODELS, model), "--role", role, "--no-load-check"],
      env,
    );
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "workers"]);
  const granted = (await runCliJson(["--data-dir", dir, "credits", "grant", "--account", acct.id, "--amount", "1000"]))
    .balance as number;
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;

  const server = await startServer(dir, env, ["--role", "serve"]);
  stops.push(() => server.stop());
  mkdirSync(join(dir, "videos"), { recursive: true });
  const workerEnv = {
    ...env,
    VSEARCH_DATABASE_URL: url,
    VSEARCH_MODELS_DIR: join(dir, "models"),
    VSEARCH_QUEUE_LEASE_SECS: "3",
    // The server's data dir is its media root (the default): the workers mount it there.
    VSEARCH_MEDIA_ROOT: dir,
  };
  const dirs = ["a", "b", "c"].map(workerDir);
  const workers = await Promise.all(dirs.map((d) => startWorker(d, workerEnv, ["--kinds", "ingest,ocr"])));
  for (const w of workers) stops.push(() => w.stop());
  expect(workers.map((w) => w.refused)).toEqual([null, null, null]);
  const victimNode = readFileSync(join(dirs[0], "node-id"), "utf8").trim();

  const col = await postCollection(server.url, key);
  const uploads: { job_id: string; video_id: string }[] = [];
  for (let i = 0; i < CLIPS; i++) uploads.push(await postUpload(server.url, key, col, clips[i], `clip${i}.mp4`));
  expect(uploads.every((u) => u.job_id && u.video_id)).toBe(true);

  // SIGKILL the first worker while it holds an ingest task.
  const stores = openStores(dir);
  let victimTask: { job_id: string | null } | undefined;
  expect(
    await until(
      async () => {
        victimTask = (await stores.tasks.list()).find(
          (t) => t.kind === "ingest" && t.state === "running" && t.lease_node === victimNode,
        );
        return victimTask !== undefined;
      },
      120_000,
      10,
    ),
  ).toBe(true);
  workers[0].proc.kill("SIGKILL");
  await workers[0].proc.exited;

  const jobs = async () => await Promise.all(uploads.map(async (u) => (await stores.jobs.getById(u.job_id))!));
  expect(
    await until(async () => (await jobs()).every((j) => j.status === "done" || j.status === "failed"), 300_000, 250),
  ).toBe(true);
  const done = await jobs();
  expect(done.map((j) => j.status)).toEqual(uploads.map(() => "done"));
  // The killed worker's task ran again elsewhere (a second claim); every other task once.
  const killed = done.find((j) => j.id === victimTask!.job_id)!;
  expect(killed.attempts).toBe(2);
  expect(done.reduce((n, j) => n + j.attempts, 0)).toBe(CLIPS + 1);
  // Ready once, with the same rows as every identical sibling (nothing written twice).
  const videos = await Promise.all(uploads.map(async (u) => (await stores.videos.getById(u.video_id))!));
  expect(videos.map((v) => v.status)).toEqual(uploads.map(() => "ready"));
  const rows = await Promise.all(uploads.map(async (u) => await stores.videos.segmentsCount(u.video_id)));
  expect(rows[0]).toBeGreaterThan(0);
  expect(new Set(rows).size).toBe(1);
  // Credits: one indexing charge per video, the balance down by exactly twenty of them.
  const ledger = await stores.credits.ledger(acct.id, 1000);
  const charges = ledger.filter((r) => r.reason.startsWith("indexing"));
  expect(charges).toHaveLength(CLIPS);
  const spent = charges.reduce((n, r) => n - r.delta, 0);
  expect(await stores.credits.balance(acct.id)).toBeCloseTo(granted - spent, 5);
  expect(new Set(charges.map((r) => r.delta)).size).toBe(1);
  // One job.completed outbox event per job.
  const completed = await stores.events.list({ accountId: acct.id, type: "job.completed" });
  const jobIdOf = (payload: string) => {
    const p = JSON.parse(payload);
    return (p.job_id ?? p.data?.job_id) as string;
  };
  expect(completed.map((e) => jobIdOf(e.payload)).sort()).toEqual(uploads.map((u) => u.job_id).sort());
  // --kinds ingest,ocr: no worker took a rendition, and `serve --role serve` claims nothing.
  const left = await stores.tasks.list();
  expect(left.filter((t) => t.kind === "rendition").map((t) => t.state)).toEqual(uploads.map(() => "queued"));

  // The registry: the server and the three workers, with what they run.
  const { nodes } = await runCliJson(["--data-dir", dir, "nodes"]);
  const byId = new Map((nodes as any[]).map((n) => [n.id, n]));
  const serveNode = byId.get(readFileSync(join(dir, "node-id"), "utf8").trim());
  expect(serveNode).toMatchObject({ role: "serve", kinds: [], status: "running" });
  expect(serveNode.models["image-text"]).toMatch(/^tiny-random-clip@/);
  for (const d of dirs) {
    const n = byId.get(readFileSync(join(d, "node-id"), "utf8").trim());
    expect(n).toMatchObject({ role: "worker", kinds: ["ingest", "ocr"], device: "cpu", refused: null });
    expect(n.models).toEqual(serveNode.models);
  }

  // A worker without the cluster's models claims nothing (and says why) while the others are stopped.
  await workers[1].stop();
  await workers[2].stop();
  mkdirSync(join(dir, "no-models"));
  const wrongDir = workerDir("wrong");
  const wrong = await startWorker(wrongDir, { ...workerEnv, VSEARCH_MODELS_DIR: join(dir, "no-models") });
  stops.push(() => wrong.stop());
  expect(wrong.refused).toMatch(/image-text model \(none\) differs from the cluster's \(tiny-random-clip@/);
  const extraClip = await ffmpeg(["-i", base, "-c", "copy", "-metadata", "title=extra"], join(media, "extra.mp4"));
  const extra = await postUpload(server.url, key, col, extraClip, "extra.mp4");
  // It polls every second: three seconds without a claim is three chances refused.
  await Bun.sleep(3000);
  const waiting = (await stores.tasks.list({ videoId: extra.video_id })).find((t) => t.kind === "ingest");
  expect(waiting).toMatchObject({ state: "queued", attempts: 0 });
  const listed = (await runCliJson(["--data-dir", dir, "nodes"])).nodes.find(
    (n: any) => n.id === readFileSync(join(wrongDir, "node-id"), "utf8").trim(),
  );
  expect(listed.refused).toMatch(/differs from the cluster's/);
  const human = await runCli(["--data-dir", dir, "nodes"]);
  expect(human.stdout).toMatch(/refusing jobs/);
  // The same task is claimable: a worker with the cluster's models takes it.
  const right = await startWorker(dirs[1], workerEnv, ["--kinds", "ingest,ocr"]);
  stops.push(() => right.stop());
  expect(await until(async () => (await stores.jobs.getById(extra.job_id))!.status === "done", 120_000, 250)).toBe(
    true,
  );
}, 900_000);
