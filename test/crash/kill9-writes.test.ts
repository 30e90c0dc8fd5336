/**
 * kill -9 in the middle of writes that are not ingest stages: an upload being streamed, a backup
 * being written, a collection being deleted. After the restart `vsearch check` finds SQLite's
 * integrity intact, no folder without a row and no row without its files, and every job ends.
 * (Webhook attempts: test/webhooks/crash.test.ts; ingest stages: kill9-stages.test.ts.)
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { testBackend } from "../pg/backend.ts";
import { BUN, MAIN, postCollection, runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";

const dir = mkdtempSync(join(tmpdir(), "vsearch-kill9-writes-"));
const out = mkdtempSync(join(tmpdir(), "vsearch-kill9-backup-"));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
});
// OCR off (the servers and the ingests below): the kills here land in byte copies and deletes, and
// reading the test pattern's clock on every sampled frame slowed the ingest of big.avi past the
// CLI's one-minute bound at load 18.
const env = {
  VSEARCH_OCR_THREADS: "0",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  VSEARCH_RATE_LIMIT_VIDEOS: "100000",
  VSEARCH_RATE_LIMIT_JOBS: "100000",
  VSEARCH_RATE_LIMIT_COLLECTIONS_WRITE: "1000",
};

async function healthyAfterRestart(auth: Record<string, string>) {
  const server = await startServer(dir, env);
  try {
    const get = async (path: string) => (await (await fetch(`${server.url}${path}`, { headers: auth })).json()) as any;
    for (let i = 0; i < 1200; i++) {
      const jobs = (await get("/v1/jobs?per_page=100")).data as any[];
      if (jobs.every((j) => j.status === "done" || (j.status === "failed" && j.error?.code))) break;
      await Bun.sleep(50);
    }
    const jobs = (await get("/v1/jobs?per_page=100")).data as any[];
    for (const j of jobs)
      expect(j.status === "done" || (j.status === "failed" && j.error.code), JSON.stringify(j)).toBeTruthy();
  } finally {
    await server.stop();
  }
  const check = await runCliJson(["--data-dir", dir, "check"]);
  expect(check).toMatchObject({
    ok: true,
    sqlite_integrity: "ok",
    foreign_key_violations: 0,
    orphan_video_dirs: [],
    videos_missing_source: [],
    temp_uploads: 0,
  });
  return check;
}

test("kill -9 during an upload, a backup and a collection delete: nothing half-written survives a restart", async () => {
  const media = scratchDir("kill9-writes");
  const small = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=160x120:rate=10:duration=1",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "small.mp4"),
  );
  // ~110 MB of uncompressed video: wide windows to kill a backup (or an upload) in.
  const big = await ffmpeg(
    ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=20", "-c:v", "rawvideo", "-pix_fmt", "rgb24"],
    join(media, "big.avi"),
  );
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "writes"]);
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const auth = { authorization: `Bearer ${key}` };

  // 1. An upload killed while its body streams in: a temp file, no row.
  let server = await startServer(dir, env);
  const col = await postCollection(server.url, key);
  const boundary = "----kill9";
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(ctl) {
      if (sent === 0)
        ctl.enqueue(
          new TextEncoder().encode(
            `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
          ),
        );
      sent++;
      if (sent > 2000) return ctl.close(); // bounded; the server is killed long before
      ctl.enqueue(new Uint8Array(256 * 1024).fill(sent & 0xff));
      await Bun.sleep(5);
    },
  });
  const pending = fetch(`${server.url}/v1/upload`, {
    method: "POST",
    headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: "half",
  } as RequestInit).catch((e) => e);
  const tmp = join(dir, "uploads", "tmp");
  for (
    let i = 0;
    i < 2000 && !(existsSync(tmp) && readdirSync(tmp).some((f) => statSync(join(tmp, f)).size > 1024 * 1024));
    i++
  )
    await Bun.sleep(5);
  expect(readdirSync(tmp)).toHaveLength(1); // mid-upload
  await server.stop("SIGKILL");
  expect(await pending).toBeInstanceOf(Error);
  expect((await healthyAfterRestart(auth)).videos).toBe(0);

  // 2. A backup killed while it copies a video: no archive, and its snapshot is cleared at the next start.
  // The embedded backup's database snapshot: PostgreSQL mode's backup (media and registry, rows by
  // pg_dump) has none, and is tested in test/backup/pg-operations.test.ts.
  await runCliJson(["--data-dir", dir, "ingest", big, small, "--account", acct.id, "--collection", "c"], env);
  if (testBackend() === "sqlite") await backupKilledMidCopy();

  async function backupKilledMidCopy() {
    server = await startServer(dir, env); // the backup runs beside a live server
    const archive = join(out, "backup.tar");
    try {
      const proc = Bun.spawn([BUN, MAIN, "--data-dir", dir, "backup", archive], {
        env: { ...process.env, VSEARCH_LOG_LEVEL: "silent" },
        stdout: "ignore",
        stderr: "ignore",
      });
      for (
        let i = 0;
        i < 20_000 && !(existsSync(`${archive}.partial`) && statSync(`${archive}.partial`).size > 1024 * 1024);
        i++
      )
        await Bun.sleep(1);
      proc.kill("SIGKILL");
      await proc.exited;
      expect(existsSync(`${archive}.partial`)).toBe(true); // killed mid-copy
      expect(existsSync(archive)).toBe(false); // never a half archive under the real name
      expect(readdirSync(join(dir, "backup.tmp")).length).toBe(1); // its snapshot, until the next start
    } finally {
      await server.stop();
    }
    await healthyAfterRestart(auth);
    expect(readdirSync(join(dir, "backup.tmp"))).toEqual([]);
    const redo = await runCliJson(["--data-dir", dir, "backup", archive]);
    expect(redo.videos).toBe(2);
    expect(existsSync(`${archive}.partial`)).toBe(false);
  }

  // 3. A collection delete killed while it purges its videos: what remains is whole.
  const doomedDir = scratchDir("kill9-doomed");
  for (let i = 0; i < 12; i++) {
    // Distinct bytes (the title), so ingest does not treat them as one file.
    await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=160x120:rate=10:duration=1",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-metadata",
        `title=clip ${i}`,
      ],
      join(doomedDir, `clip-${i}.mp4`),
    );
  }
  const doomed = await runCliJson(
    ["--data-dir", dir, "ingest", doomedDir, "--account", acct.id, "--collection", "doomed"],
    env,
  );
  const doomedCol = doomed.collection_id;
  expect(doomed.summary).toEqual({ indexed: 12 });
  server = await startServer(dir, env);
  try {
    const videosDir = join(dir, "videos");
    const before = readdirSync(videosDir).length;
    const del = fetch(`${server.url}/v1/collections/${doomedCol}`, { method: "DELETE", headers: auth }).catch((e) => e);
    // Busy-wait (bounded) for the first folder to go, then kill at once: mid-purge.
    const until = Date.now() + 10_000;
    while (readdirSync(videosDir).length === before && Date.now() < until);
    server.proc.kill("SIGKILL");
    await del;
  } finally {
    await server.stop();
  }
  const after = await healthyAfterRestart(auth);
  // Either it finished or it stopped part-way; both leave only whole videos (checked above).
  expect(after.videos).toBeLessThan(2 + doomed.files.length); // the purge had begun
  console.info(`collection delete killed with ${after.videos - 2} of ${doomed.files.length} videos left`);
}, 240_000);
