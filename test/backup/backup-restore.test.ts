import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tar from "tar-stream";
import { afterAll, expect, test } from "vitest";
import { postCollection, postUpload, runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { FIXTURE_MODELS } from "../helpers/models.ts";

const root = mkdtempSync(join(tmpdir(), "vsearch-backup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const env = {
  VSEARCH_RATE_LIMIT_JOBS: "100000",
  VSEARCH_RATE_LIMIT_SEARCH: "100000",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000",
};

/** What a search answers, without what legitimately differs between two servers (URLs, timing). */
async function searchResults(url: string, key: string, image: string) {
  const fd = new FormData();
  // A frame of an indexed clip: random-weight models still find their own frame, above any threshold.
  fd.append("image", Bun.file(image), "frame.png");
  fd.append("modes", "video");
  fd.append("modes", "scene");
  const res = await fetch(`${url}/v1/search`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: fd,
  });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data.map((v: any) => ({
    video_id: v.video_id,
    filename: v.filename,
    segments: v.segments.map((s: any) => ({
      start: s.timestamp_start,
      end: s.timestamp_end,
      score: s.score,
      raw: s.raw_score,
      type: s.type,
    })),
  }));
}

/** The entry names of a tar archive. */
async function archiveNames(file: string): Promise<string[]> {
  const extract = tar.extract();
  const names: string[] = [];
  const done = Array.fromAsync(extract, (entry) => {
    names.push(entry.header.name);
    entry.resume();
  });
  extract.end(await Bun.file(file).bytes());
  await done;
  return names;
}

async function waitJobs(url: string, key: string, ids: string[]) {
  for (let i = 0; i < 1200; i++) {
    const jobs = await Promise.all(
      ids.map(
        async (id) =>
          ((await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any)
            .data,
      ),
    );
    if (jobs.every((j) => j.status === "done" || j.status === "failed")) return jobs;
    await Bun.sleep(50);
  }
  throw new Error("jobs did not finish");
}

test("backup while serve runs → restore into an empty dir → the same search results; non-empty dir refused unless --force", async () => {
  const media = scratchDir("backup");
  const clips = await Promise.all(
    ["testsrc2", "smptebars", "rgbtestsrc"].map((src, i) =>
      ffmpeg(
        [
          "-f",
          "lavfi",
          "-i",
          `${src}=size=320x240:rate=10:duration=${3 + i}`,
          "-c:v",
          "libx264",
          "-preset",
          "ultrafast",
          "-pix_fmt",
          "yuv420p",
        ],
        join(media, `${src}.mp4`),
      ),
    ),
  );
  const frame = await ffmpeg(["-ss", "1", "-i", clips[0], "-frames:v", "1"], join(media, "frame.png"));
  const a = join(root, "a");
  await runCliJson([
    "--data-dir",
    a,
    "models",
    "import",
    join(FIXTURE_MODELS, "tiny-random-clip"),
    "--role",
    "image-text",
    "--no-load-check",
  ]);
  const acct = await runCliJson(["--data-dir", a, "accounts", "create", "--name", "backup"]);
  const key = (await runCliJson(["--data-dir", a, "keys", "create", "--account", acct.id, "--name", "k"])).key;
  const auth = { authorization: `Bearer ${key}` };

  let server = await startServer(a, env);
  let before: any;
  let inSnapshot = 0;
  const archive = join(root, "out", "backup.tar");
  try {
    const col = await postCollection(server.url, key);
    const jobIds: string[] = [];
    for (const clip of clips.slice(0, 2))
      jobIds.push((await postUpload(server.url, key, col, clip, clip.split("/").pop()!)).job_id);
    expect((await waitJobs(server.url, key, jobIds)).map((j) => j.status)).toEqual(["done", "done"]);
    before = await searchResults(server.url, key, frame);
    expect(before.length).toBeGreaterThan(0);
    expect(before[0].filename).toBe("testsrc2.mp4");
    // A job's scratch (the frame decode's JPEGs, the gray frames left for OCR) as a crash leaves it.
    const videoDir = join(a, "videos", before[0].video_id);
    for (const scratch of ["frames.tmp", "ocr-frames.tmp"]) {
      mkdirSync(join(videoDir, scratch), { recursive: true });
      writeFileSync(join(videoDir, scratch, "000001.bin"), "scratch");
    }

    // A third upload lands while the backup runs: the snapshot has it or not, never half of it.
    const fd = new FormData();
    fd.append("collection_id", col);
    fd.append("file", Bun.file(clips[2]), "late.mp4");
    const [late, backup] = await Promise.all([
      fetch(`${server.url}/v1/upload`, { method: "POST", headers: auth, body: fd }).then(
        async (r) => ((await r.json()) as any).data,
      ),
      runCliJson(["--data-dir", a, "backup", archive, "--include-models"], env),
    ]);
    expect(backup).toMatchObject({ file: archive, include_models: true, videos_without_files: [] });
    expect(backup.videos === 2 || backup.videos === 3).toBe(true);
    const names = await archiveNames(archive);
    expect(names.some((n) => n.startsWith(`videos/${before[0].video_id}/`))).toBe(true);
    expect(names.filter((n) => n.includes("frames.tmp/"))).toEqual([]);
    await waitJobs(server.url, key, [late.job_id]);
    // Scores are calibrated against the account's own vectors: compare with the corpus the snapshot has.
    if (backup.videos === 3) before = await searchResults(server.url, key, frame);
    inSnapshot = backup.videos;
    expect(existsSync(`${archive}.partial`)).toBe(false);
    expect(readdirSync(join(a, "backup.tmp"))).toEqual([]); // the snapshot is removed
  } finally {
    await server.stop();
  }

  // Into an empty (new) dir.
  const b = join(root, "b");
  const restored = await runCliJson(["--data-dir", b, "restore", archive]);
  expect(restored.backup.include_models).toBe(true);
  expect(restored.videos).toBeGreaterThanOrEqual(2);
  const check = await runCliJson(["--data-dir", b, "check"]);
  expect(check).toMatchObject({
    ok: true,
    sqlite_integrity: "ok",
    foreign_key_violations: 0,
    orphan_video_dirs: [],
    videos_missing_source: [],
  });

  // A non-empty dir is refused, nothing changes; --force replaces it.
  const c = join(root, "c");
  mkdirSync(c);
  writeFileSync(join(c, "keep.txt"), "mine");
  const refused = await runCli(["--data-dir", c, "restore", archive]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("DATA_DIR_NOT_EMPTY");
  expect(readdirSync(c)).toEqual(["keep.txt"]);
  const forced = await runCliJson(["--data-dir", c, "restore", archive, "--force"]);
  expect(forced.videos).toBe(restored.videos);
  expect(existsSync(join(c, "keep.txt"))).toBe(false);

  // A truncated archive is refused and leaves the dir as it was.
  const truncated = join(root, "out", "truncated.tar");
  writeFileSync(truncated, (await Bun.file(archive).bytes()).subarray(0, 20_000));
  const bad = await runCli(["--data-dir", join(root, "d"), "restore", truncated]);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain("BACKUP_INVALID");
  expect(readdirSync(join(root, "d")).filter((n) => n !== "runtime")).toEqual([]);

  // Archives that would write outside the data dir, or plant files a backup never has, are refused.
  for (const evil of ["../escaped.txt", "runtime/0.1.0/vec0.so", "/abs.txt", "videos/../../x"]) {
    const pack = tar.pack();
    pack.entry({ name: evil }, "boom");
    pack.finalize();
    const file = join(root, "out", "evil.tar");
    writeFileSync(file, Buffer.concat((await Array.fromAsync(pack)) as Buffer[]));
    const target = join(root, `evil-${evil.length}`);
    const r = await runCli(["--data-dir", target, "restore", file]);
    expect(r.code, evil).toBe(1);
    expect(r.stderr).toContain("BACKUP_INVALID");
    expect(existsSync(join(root, "escaped.txt"))).toBe(false);
    expect(readdirSync(target).filter((n) => n !== "runtime")).toEqual([]);
  }

  // The restored dir serves the same results (the key, the videos, the vectors and the model came along).
  server = await startServer(b, env);
  try {
    const underServer = await runCli(["--data-dir", b, "restore", archive, "--force"]);
    expect(underServer.code).toBe(1);
    expect(underServer.stderr).toContain("SERVER_RUNNING");
    // A job the snapshot caught mid-run runs again on start; then the corpus is the same.
    const jobs = ((await (await fetch(`${server.url}/v1/jobs?per_page=100`, { headers: auth })).json()) as any).data;
    expect(jobs).toHaveLength(inSnapshot);
    await waitJobs(
      server.url,
      key,
      jobs.map((j: any) => j.id),
    );
    const after = await searchResults(server.url, key, frame);
    expect(after).toEqual(before);
    const media = (
      (await (await fetch(`${server.url}/v1/videos/${before[0].video_id}`, { headers: auth })).json()) as any
    ).data;
    const poster = await fetch(media.thumbnail_url);
    expect(poster.status).toBe(200);
    expect(poster.headers.get("content-type")).toContain("image/jpeg");
  } finally {
    await server.stop();
  }
}, 180_000);
