/**
 * Issue 26: two `vsearch serve` processes, each with its own data dir, on one PostgreSQL database
 * (what a load balancer puts in front of). What one server does, the other knows: a video deleted
 * through A leaves B's search within a second (LISTEN/NOTIFY sent in A's transaction), a video
 * indexed by either is found by both, and a server whose listening connection was cut while a
 * video was deleted catches up once it reconnects; a per-key limit and a sign-in lock-out count
 * requests to both servers together (rate windows in the database); exactly one of them is the
 * leader, and when it is killed the other takes over. PostgreSQL only (PG_ONLY in vitest.config.ts).
 */
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { databaseUrlFor } from "../pg/backend.ts";
import { pgTest } from "../pg/database.ts";
import { postCollection, postUpload, runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { startReceiver } from "../webhooks/receiver.ts";

const ENV = {
  VSEARCH_RATE_LIMIT_JOBS: "100000",
  VSEARCH_RATE_LIMIT_SEARCH: "100000",
  VSEARCH_RATE_LIMIT_VIDEOS: "100000",
  VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "6",
  VSEARCH_RATE_LIMIT_AUTH_EMAIL: "3",
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
};
type Server = Awaited<ReturnType<typeof startServer>>;
const dirA = tempDir("vsearch-cluster-a-");
const dirB = tempDir("vsearch-cluster-b-");
let envB: Record<string, string>;
let a: Server;
let b: Server;
let key: string;
let accountId: string;
const media = scratchDir("cluster");
const rx = startReceiver();

beforeAll(async () => {
  // B's data dir, A's database: two nodes of one install.
  // B mounts A's media: A's data dir is the media root (its default), and the cluster secret on it is B's too.
  envB = { ...ENV, VSEARCH_DATABASE_URL: (await databaseUrlFor(dirA))!, VSEARCH_MEDIA_ROOT: dirA };
  await Promise.all(
    [
      { dir: dirA, env: ENV },
      { dir: dirB, env: envB },
    ].map(async ({ dir, env }) => {
      const args = ["--data-dir", dir, "models", "import", join(FIXTURE_MODELS, "tiny-random-clip")];
      await runCliJson([...args, "--role", "image-text", "--no-load-check"], env);
    }),
  );
  accountId = (await runCliJson(["--data-dir", dirA, "accounts", "create", "--name", "two"], ENV)).id;
  key = (await runCliJson(["--data-dir", dirA, "keys", "create", "--account", accountId, "--name", "k"], ENV)).key;
  [a, b] = await Promise.all([startServer(dirA, ENV), startServer(dirB, envB)]);
}, 240_000);

afterAll(async () => {
  await rx.stop();
  await a?.stop("SIGKILL");
  await b?.stop("SIGKILL");
});

const auth = () => ({ authorization: `Bearer ${key}` });

/** The video ids a search for `image` answers on `url`. */
async function found(url: string, image: string): Promise<string[]> {
  const fd = new FormData();
  fd.append("image", Bun.file(image), "frame.png");
  fd.append("modes", "video");
  const res = await fetch(`${url}/v1/search`, { method: "POST", headers: auth(), body: fd });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data.map((v: any) => v.video_id);
}

async function indexed(url: string, jobId: string): Promise<boolean> {
  const job = ((await (await fetch(`${url}/v1/jobs/${jobId}`, { headers: auth() })).json()) as any).data;
  if (job.status === "failed") throw new Error(`job failed: ${JSON.stringify(job)}`);
  return job.status === "done";
}

async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  // One sample, labelled with the node (instance) on PostgreSQL.
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
}
const leaderGauge = (url: string) => gauge(url, "vsearch_leader");
/** The vectors a server's in-memory index holds (a search drops hits of deleted rows anyway: this is what it still holds). */
const heldVectors = (url: string) => gauge(url, "vsearch_search_index_vectors");

test("a per-key limit counts the requests to both servers together", async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++)
    statuses.push((await fetch(`${(i % 2 ? b : a).url}/v1/collections`, { headers: auth() })).status);
  // Limit 6 a minute: in memory per process, each server would have allowed 6 (all 8 through).
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
});

test("a sign-in lock-out holds on both servers", async () => {
  const email = "lock@example.com";
  const password = "correct horse battery";
  await runCliJson(
    ["--data-dir", dirA, "users", "create", "--account", accountId, "--email", email, "--password", password],
    ENV,
  );
  const signIn = async (s: Server, pw: string) =>
    (
      await fetch(`${s.url}/v1/auth/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password: pw }),
      })
    ).status;
  // Three wrong guesses, spread over both servers, use up the e-mail's three.
  expect([await signIn(a, "wrong-1"), await signIn(b, "wrong-2"), await signIn(a, "wrong-3")]).toEqual([401, 401, 401]);
  // Locked on both, even with the right password.
  expect(await signIn(b, password)).toBe(429);
  expect(await signIn(a, password)).toBe(429);
}, 60_000);

test("indexed by either, found on both; deleted through A, gone from B's search within 1 s; a reconnect catches up", async () => {
  const clips = [await smallMp4(media, 2), await smallMp4(media, 3)];
  const frames = [
    await ffmpeg(["-i", clips[0]!, "-frames:v", "1"], join(media, "frame-1.png")),
    await ffmpeg(["-i", clips[1]!, "-frames:v", "1"], join(media, "frame-2.png")),
  ];
  const hook = await fetch(`${a.url}/v1/webhooks`, {
    method: "POST",
    headers: { ...auth(), "content-type": "application/json" },
    body: JSON.stringify({ url: rx.url, events: ["video.created", "video.deleted"] }),
  });
  expect(hook.status).toBe(201);
  rx.setSecret(((await hook.json()) as any).data.secret);
  // Both servers answer (and load the account's index) before anything is indexed.
  for (const s of [a, b]) expect(await found(s.url, frames[0]!)).toEqual([]);
  const col = await postCollection(a.url, key);
  const up = [
    await postUpload(a.url, key, col, clips[0]!, "one.mp4"),
    await postUpload(b.url, key, col, clips[1]!, "two.mp4"),
  ];
  for (const u of up) expect(await until(async () => await indexed(a.url, u.job_id), 180_000, 100)).toBe(true);
  // Whichever server ran each job, the other one's index got the video through a notification.
  const findsOwn = async (s: Server, i: number) => (await found(s.url, frames[i]!)).includes(up[i]!.video_id);
  for (const s of [a, b])
    for (const i of [0, 1]) expect(await until(async () => await findsOwn(s, i), 10_000, 50)).toBe(true);

  const both = await heldVectors(b.url);
  expect(both).toBeGreaterThan(0);
  expect(await heldVectors(a.url)).toBe(both);

  const res = await fetch(`${a.url}/v1/videos/${up[0]!.video_id}`, { method: "DELETE", headers: auth() });
  expect(res.status).toBe(204);
  const deletedAt = Date.now();
  // B's index lets go of the video's rows (a notification sent by A), and its search no longer finds it.
  expect(await until(async () => (await heldVectors(b.url)) < both, 5_000, 20)).toBe(true);
  expect(Date.now() - deletedAt).toBeLessThan(1000);
  expect(await findsOwn(b, 0)).toBe(false);
  expect(await heldVectors(b.url)).toBeGreaterThan(0); // the other video's rows

  // B stops (SIGSTOP) with its listening connection cut: the deletion's notification is lost to it.
  b.proc.kill("SIGSTOP");
  try {
    const admin = pgTest().admin;
    const cut = await admin`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE datname = ${new URL(envB.VSEARCH_DATABASE_URL!).pathname.slice(1)} AND query ILIKE 'listen%'`;
    expect(cut.length).toBe(2); // A's and B's listeners (A's reconnects at once)
    const second = await fetch(`${a.url}/v1/videos/${up[1]!.video_id}`, { method: "DELETE", headers: auth() });
    expect(second.status).toBe(204);
  } finally {
    b.proc.kill("SIGCONT");
  }
  // B reconnects, finds that a video it holds is gone, and drops it.
  expect(await until(async () => (await heldVectors(b.url)) === 0, 15_000, 50)).toBe(true);
  expect(await findsOwn(b, 1)).toBe(false);

  // Both servers dispatch webhooks: each of the four events was delivered once, signed.
  expect(await until(async () => rx.hits.length >= 4, 30_000, 50)).toBe(true);
  await Bun.sleep(1000);
  expect(rx.hits.map((h) => `${h.body.event} ${h.body.data.video_id}`).sort()).toEqual(
    up.flatMap((u) => [`video.created ${u.video_id}`, `video.deleted ${u.video_id}`]).sort(),
  );
  expect(rx.hits.every((h) => h.signatureOk)).toBe(true);
}, 300_000);

test("exactly one server is the leader; killed, the other takes over within its retry", async () => {
  expect(await until(async () => (await leaderGauge(a.url)) + (await leaderGauge(b.url)) === 1, 10_000, 100)).toBe(
    true,
  );
  const [leader, other] = (await leaderGauge(a.url)) === 1 ? [a, b] : [b, a];
  await leader.stop("SIGKILL");
  const killedAt = Date.now();
  expect(await until(async () => (await leaderGauge(other.url)) === 1, 20_000, 100)).toBe(true);
  // PostgreSQL ends the killed process's session at once; the other's next try (every 2 s) wins.
  expect(Date.now() - killedAt).toBeLessThan(10_000);
}, 60_000);
