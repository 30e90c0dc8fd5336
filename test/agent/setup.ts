/** A data dir with the tiny models, two accounts and an indexed video, served by a real `vsearch serve`. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCliJson, startServer } from "../helpers/cli.ts";
import { cutsMp4, ffmpeg } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";

export interface AgentFixture {
  dir: string;
  url: string;
  accountId: string;
  key: string;
  readOnlyKey: string;
  otherAccountId: string;
  otherKey: string;
  collectionId: string;
  videoId: string;
  jobId: string;
  /** 1280×720, 2 s: get_frame must shrink it to 768 px. */
  wideVideoId: string;
  otherVideoId: string;
  /** Generated clip: 320×240, 6 s (test pattern, red, blue), with a tone. */
  clip: string;
  stop(): Promise<void>;
}

const ENV = { VSEARCH_LOG_LEVEL: "silent" };

async function upload(url: string, key: string, collectionId: string, file: string, name: string) {
  const fd = new FormData();
  fd.append("collection_id", collectionId);
  fd.append("file", Bun.file(file), name);
  const res = await fetch(`${url}/v1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: fd,
  });
  if (res.status !== 202 && res.status !== 201 && res.status !== 200)
    throw new Error(`upload: ${res.status} ${await res.text()}`);
  return (await res.json()).data as { video_id: string; job_id: string };
}

/**
 * Until the job is done and its video's web rendition (made after the job, in the background) has
 * settled: the rendition adds to `storage_bytes`, so comparing transports while it lands would race.
 */
async function waitForJob(url: string, key: string, jobId: string) {
  const deadline = Date.now() + 90_000;
  const get = async (path: string) =>
    (await (await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()).data;
  for (;;) {
    const job = await get(`/v1/jobs/${jobId}`);
    if (job.status === "done") {
      const video = await get(`/v1/videos/${job.video_id}`);
      if (!["pending", "processing"].includes(video.rendition?.status)) return;
    }
    if (job.status === "failed" || Date.now() > deadline)
      throw new Error(`ingest did not finish: ${JSON.stringify(job)}`);
    await Bun.sleep(200);
  }
}

async function createCollection(url: string, key: string, name: string): Promise<string> {
  const res = await fetch(`${url}/v1/collections`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  return (await res.json()).data.id;
}

export async function startAgentFixture(env: Record<string, string> = {}): Promise<AgentFixture> {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-agent-"));
  const d = ["--data-dir", dir];
  await runCliJson(
    [...d, "models", "import", join(FIXTURE_MODELS, "tiny-random-clip"), "--role", "image-text", "--no-load-check"],
    ENV,
  );
  await runCliJson(
    [...d, "models", "import", join(FIXTURE_MODELS, "tiny-random-whisper"), "--role", "speech", "--no-load-check"],
    ENV,
  );
  const account = await runCliJson([...d, "accounts", "create", "--name", "Agents", "--plan", "enterprise"], ENV);
  const other = await runCliJson([...d, "accounts", "create", "--name", "Others", "--plan", "enterprise"], ENV);
  const key = (await runCliJson([...d, "keys", "create", "--account", account.id, "--name", "all"], ENV)).key;
  const readOnlyKey = (
    await runCliJson(
      [...d, "keys", "create", "--account", account.id, "--name", "ro", "--permissions", "read_only"],
      ENV,
    )
  ).key;
  const otherKey = (await runCliJson([...d, "keys", "create", "--account", other.id, "--name", "all"], ENV)).key;

  const clip = await cutsMp4(dir, "cuts.mp4");

  const wide = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=1280x720:rate=10:duration=2",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(dir, "wide.mp4"),
  );

  const server = await startServer(dir, {
    // No tool reads on-screen text; reading the test pattern's clock made this setup outlast its
    // three minutes at load 18.
    VSEARCH_OCR_THREADS: "0",
    VSEARCH_RATE_LIMIT_AGENT: "100000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_VIDEOS: "100000",
    ...env,
  });
  try {
    const collectionId = await createCollection(server.url, key, "Beach");
    const up = await upload(server.url, key, collectionId, clip, "beach day.mp4");
    const wideUp = await upload(server.url, key, collectionId, wide, "wide.mp4");
    const otherCol = await createCollection(server.url, otherKey, "Theirs");
    const theirs = await upload(server.url, otherKey, otherCol, clip, "theirs.mp4");
    await waitForJob(server.url, key, up.job_id);
    await waitForJob(server.url, otherKey, theirs.job_id);
    await waitForJob(server.url, key, wideUp.job_id);
    return {
      dir,
      url: server.url,
      accountId: account.id,
      key,
      readOnlyKey,
      otherAccountId: other.id,
      otherKey,
      collectionId,
      videoId: up.video_id,
      jobId: up.job_id,
      wideVideoId: wideUp.video_id,
      otherVideoId: theirs.video_id,
      clip,
      async stop() {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await server.stop();
    throw e;
  }
}

/** Width and height from a JPEG's start-of-frame marker (written here, independent of src/). */
export function jpegDimensions(b: Uint8Array): { width: number; height: number } {
  if (b[0] !== 0xff || b[1] !== 0xd8) throw new Error("not a JPEG (no SOI)");
  let i = 2;
  while (i < b.length - 8) {
    if (b[i] !== 0xff) throw new Error(`bad marker at ${i}`);
    const m = b[i + 1];
    const len = b[i + 2] * 256 + b[i + 3];
    if ([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf].includes(m)) {
      return { height: b[i + 5] * 256 + b[i + 6], width: b[i + 7] * 256 + b[i + 8] };
    }
    i += 2 + len;
  }
  throw new Error("no SOF marker");
}

export const b64 = (s: string) => Uint8Array.from(Buffer.from(s, "base64"));
