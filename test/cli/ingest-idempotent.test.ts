import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";

const dir = mkdtempSync(join(tmpdir(), "vsearch-ingest-twice-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("ingest of the same folder twice adds only new files; --force re-indexes; other collections are their own set; an HTTP upload of known bytes is that video (issue 22)", async () => {
  const media = scratchDir("ingest-twice");
  const folder = join(media, "folder");
  mkdirSync(folder, { recursive: true });
  const a = await ffmpeg(
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
    join(folder, "a.mp4"),
  );
  await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "smptebars=size=160x120:rate=10:duration=1",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(folder, "b.mp4"),
  );
  const acct = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "twice"]);
  const ingest = (...extra: string[]) =>
    runCliJson(["--data-dir", dir, "ingest", folder, "--account", acct.id, "--collection", "clips", ...extra]);

  const first = await ingest();
  expect(first.summary).toEqual({ indexed: 2 });
  const ids = Object.fromEntries(first.files.map((f: any) => [f.path.split("/").pop(), f.video_id]));

  // The same bytes under another name count as known; a new file is added.
  copyFileSync(a, join(folder, "a-copy.mp4"));
  await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "rgbtestsrc=size=160x120:rate=10:duration=1",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(folder, "c.mp4"),
  );
  const second = await ingest();
  expect(second.summary).toEqual({ unchanged: 3, indexed: 1 });
  const byName = Object.fromEntries(second.files.map((f: any) => [f.path.split("/").pop(), f]));
  expect(byName["a.mp4"]).toMatchObject({ status: "unchanged", video_id: ids["a.mp4"], job_id: null });
  expect(byName["a-copy.mp4"]).toMatchObject({ status: "unchanged", video_id: ids["a.mp4"] });
  expect(byName["b.mp4"]).toMatchObject({ status: "unchanged", video_id: ids["b.mp4"] });
  expect(byName["c.mp4"].status).toBe("indexed");

  // --force: known files are indexed again (same video, a new job), still not duplicated.
  const forced = await ingest("--force");
  expect(forced.summary).toEqual({ indexed: 4 });
  expect(new Set(forced.files.map((f: any) => f.video_id)).size).toBe(3);
  expect(forced.files.find((f: any) => f.path.endsWith("/a.mp4")).video_id).toBe(ids["a.mp4"]);

  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const server = await startServer(dir, { VSEARCH_RATE_LIMIT_VIDEOS: "1000" });
  try {
    const videos = async (q = "") =>
      (await (
        await fetch(`${server.url}/v1/videos?per_page=100${q}`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any;
    expect((await videos()).meta.total).toBe(3);
    const jobs = (await (
      await fetch(`${server.url}/v1/jobs?per_page=100`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as any;
    expect(jobs.meta.total).toBe(2 + 1 + 4); // first run, c, then one forced re-run per file (a and its copy share a video)
    // An HTTP upload of bytes the collection holds answers that video, as ingest does (issue 22).
    const col = (await videos()).data[0].collection_id;
    const fd = new FormData();
    fd.append("collection_id", col);
    fd.append("file", Bun.file(a), "again.mp4");
    const up = await fetch(`${server.url}/v1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(up.status).toBe(200);
    expect(((await up.json()) as any).data).toMatchObject({ duplicate: true });
    expect((await videos()).meta.total).toBe(3);
  } finally {
    await server.stop();
  }
  // Another collection is its own set.
  const other = await runCliJson([
    "--data-dir",
    dir,
    "ingest",
    join(folder, "a.mp4"),
    "--account",
    acct.id,
    "--collection",
    "other",
    "--no-wait",
  ]);
  expect(other.files[0].status).toBe("queued");
}, 120_000);
