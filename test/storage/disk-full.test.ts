/**
 * A real full disk: the data dir lives on a small tmpfs (`mount -t tmpfs -o size=…`, needs root
 * or CAP_SYS_ADMIN, which this project's CI has). Where mounting is not allowed the test is
 * skipped and says so — SQLite's `max_page_count` would only fake SQLITE_FULL for the database,
 * not ENOSPC for the files a server writes (uploads, thumbnails), and RLIMIT_FSIZE kills the
 * process with SIGXFSZ instead of failing the write.
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";

const base = mkdtempSync(join(tmpdir(), "vsearch-diskfull-"));
const mnt = join(base, "mnt");
mkdirSync(mnt);
const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt]).status === 0;
if (!mounted)
  console.warn("disk-full test skipped: `mount -t tmpfs` is not permitted here (needs root / CAP_SYS_ADMIN)");
afterAll(() => {
  if (mounted) spawnSync("umount", ["-l", mnt]);
  rmSync(base, { recursive: true, force: true });
});

/**
 * Writes zeros until the filesystem refuses (ENOSPC), then gives back `slackBytes`: SQLite needs
 * a few KiB to even open a WAL database (its 32 KiB index file is memory-mapped), which a disk
 * that filled while the server ran already has. Returns the filler's path.
 */
function fillDisk(dir: string, slackBytes: number): string {
  const file = join(dir, "filler");
  const fd = openSync(file, "w");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (let i = 0; i < 100_000; i++) writeSync(fd, chunk);
    throw new Error("the disk never filled");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
  } finally {
    closeSync(fd);
  }
  truncateSync(file, statSync(file).size - slackBytes);
  return file;
}

test.skipIf(!mounted)(
  "disk full: writes are 507 and leave nothing, reads work, /readyz says so, the queued job runs by itself once space is freed",
  async () => {
    const dir = join(mnt, "data");
    const env = {
      VSEARCH_MODELS_DIR: join(base, "models"),
      VSEARCH_RATE_LIMIT_JOBS: "100000",
      VSEARCH_RATE_LIMIT_UPLOAD: "1000",
    };
    const media = scratchDir("diskfull");
    const clip = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=10:duration=3",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
      ],
      join(media, "full.mp4"),
    );
    // Larger than the space left, so its upload runs out of room while streaming.
    const big = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=640x480:rate=25:duration=4",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-qp",
        "0",
        "-pix_fmt",
        "yuv420p",
      ],
      join(media, "big.mp4"),
    );
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
    const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "full"]);
    const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
    const auth = { authorization: `Bearer ${key}` };
    // Queued with no server running: it waits for the next serve, which starts on a full disk.
    const queued = (
      await runCliJson(["--data-dir", dir, "ingest", clip, "--account", acct.id, "--collection", "c", "--no-wait"], env)
    ).files[0];
    expect(queued.status).toBe("queued");

    // ~96 KiB left: enough for SQLite's index and a few pages, too little for the job's thumbnails.
    const filler = fillDisk(mnt, 96 * 1024);
    const server = await startServer(dir, { ...env, VSEARCH_LOG_LEVEL: "warn" });
    try {
      const get = (path: string) => fetch(`${server.url}${path}`, { headers: auth });
      const ready = await fetch(`${server.url}/readyz`);
      const readyBody = (await ready.json()) as any;
      expect(ready.status).toBe(503);
      expect(readyBody.checks.storage).toMatch(/^full/);

      // Reads keep working.
      const cols = (await (await get("/v1/collections")).json()) as any;
      expect(cols.data.map((c: any) => c.name)).toEqual(["c"]);
      expect((await get(`/v1/jobs/${queued.job_id}`)).status).toBe(200);

      // An upload is refused with 507 and leaves no temp file and no row.
      const fd = new FormData();
      fd.append("collection_id", cols.data[0].id);
      fd.append("file", Bun.file(big), "more.mp4");
      const up = await fetch(`${server.url}/v1/upload`, { method: "POST", headers: auth, body: fd });
      expect(up.status).toBe(507);
      expect(((await up.json()) as any).detail).toMatchObject({ code: "INSUFFICIENT_STORAGE" });
      const tmp = join(dir, "uploads", "tmp");
      expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
      expect(((await (await get("/v1/videos")).json()) as any).meta.total).toBe(1);

      // The job cannot finish while the disk is full, and is not failed for it.
      await Bun.sleep(1500);
      const waiting = ((await (await get(`/v1/jobs/${queued.job_id}`)).json()) as any).data;
      expect(["queued", "pending", "processing"]).toContain(waiting.status);

      // Space comes back: no new upload wakes the task queue; it resumes by itself.
      rmSync(filler);
      let job: any;
      for (let i = 0; i < 900; i++) {
        job = ((await (await get(`/v1/jobs/${queued.job_id}`)).json()) as any).data;
        if (job.status === "done" || job.status === "failed") break;
        await Bun.sleep(50);
      }
      expect(job.status, JSON.stringify(job.error)).toBe("done");
      let readyAgain = 0;
      for (let i = 0; i < 300 && readyAgain !== 200; i++) {
        readyAgain = (await fetch(`${server.url}/readyz`)).status;
        if (readyAgain !== 200) await Bun.sleep(50);
      }
      expect(readyAgain).toBe(200);
    } finally {
      await server.stop();
    }
    // The runner said what happened and backed off (JSON log lines on stderr).
    const log = (await new Response(server.proc.stderr).text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const interrupted = log.filter(
      (l) =>
        l.msg === "job interrupted: disk full; it will run again" ||
        (l.msg === "store error; backing off" && l.disk_full),
    );
    expect(interrupted.length, JSON.stringify(log.slice(0, 5))).toBeGreaterThan(0);
    expect(log.filter((l) => l.msg === "job failed" || l.msg === "job crashed")).toEqual([]);
    const check = await runCliJson(["--data-dir", dir, "check"], env);
    expect(check).toMatchObject({
      ok: true,
      sqlite_integrity: "ok",
      temp_uploads: 0,
      orphan_video_dirs: [],
      jobs: { done: 1 },
    });
  },
  120_000,
);
