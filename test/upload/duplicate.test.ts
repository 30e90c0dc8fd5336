/**
 * Issue 22: an HTTP upload of a file the collection already holds is not indexed twice, as
 * `vsearch ingest` does not: the answer is that video with `duplicate: true` (200), and
 * `force=true` re-indexes it (202). Only byte-identical files are duplicates: a file of the same
 * size with other bytes is a new video. Throughput: bench/upload-dedupe.ts (BENCHMARKS.md).
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { runCliJson } from "../helpers/cli.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";

let t: TestApp;
let a: Tenant;
let clip: string;
let twin: string;
beforeAll(async () => {
  t = await startTestApp({ VSEARCH_RATE_LIMIT_UPLOAD: "1000" });
  a = await createKeyTenant(t);
  const dir = scratchDir("upload-duplicate");
  clip = await smallMp4(dir, 2);
  // The same size, other bytes: one byte of the media data flipped near the end.
  twin = join(dir, "twin.mp4");
  const bytes = readFileSync(clip);
  bytes[bytes.length - 200] ^= 0xff;
  writeFileSync(twin, bytes);
});
afterAll(() => t.close());

async function send(collectionId: string, path: string, extra: Record<string, string> = {}) {
  const fd = new FormData();
  fd.append("collection_id", collectionId);
  for (const [k, v] of Object.entries(extra)) fd.append(k, v);
  fd.append("file", Bun.file(path), "renamed.mp4");
  const res = await t.request("POST", "/v1/upload", { token: a.key, body: fd });
  return { status: res.status, data: (await json(res)).data };
}
const collection = async (name: string) =>
  (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name } }))).data.id as string;
const videoCount = async (col: string) =>
  (await json(await t.request("GET", `/v1/videos?collection_id=${col}`, { token: a.key }))).meta.total;

describe("uploads skip byte-identical files", () => {
  test("the same bytes again answer the existing video; other bytes of the same size are a new one", async () => {
    const col = await collection("dupes");
    const first = await send(col, clip);
    expect(first).toMatchObject({ status: 202, data: { status: "queued", duplicate: false } });
    const again = await send(col, clip);
    expect(again.status).toBe(200);
    expect(again.data).toMatchObject({ video_id: first.data.video_id, job_id: first.data.job_id, duplicate: true });
    expect(await videoCount(col)).toBe(1);

    const other = await send(col, twin);
    expect(other).toMatchObject({ status: 202, data: { duplicate: false } });
    expect(other.data.video_id).not.toBe(first.data.video_id);
    expect((await send(col, twin)).data).toMatchObject({ video_id: other.data.video_id, duplicate: true });
    expect(await videoCount(col)).toBe(2);

    // Another collection holds its own copy.
    const elsewhere = await send(await collection("elsewhere"), clip);
    expect(elsewhere).toMatchObject({ status: 202, data: { duplicate: false } });
  });

  test("force=true re-indexes the video the collection holds instead", async () => {
    const col = await collection("forced");
    const first = await send(col, clip);
    const forced = await send(col, clip, { force: "true" });
    expect(forced.status).toBe(202);
    expect(forced.data).toMatchObject({ video_id: first.data.video_id, status: "queued", duplicate: true });
    expect(forced.data.job_id).not.toBe(first.data.job_id);
    expect(await videoCount(col)).toBe(1);
    const jobs = (await json(await t.request("GET", `/v1/jobs?video_id=${first.data.video_id}`, { token: a.key })))
      .data;
    expect(jobs.map((j: any) => j.id).sort()).toEqual([first.data.job_id, forced.data.job_id].sort());
  });
});

describe("vsearch ingest and HTTP uploads agree", () => {
  test("ingest of a file uploaded over HTTP is unchanged, not a second video", async () => {
    const d = join(scratchDir("upload-duplicate-cli"), `dd-${Date.now()}`);
    const served = await startTestApp({}, { dataDir: d });
    let col: string;
    try {
      const tenant = await createKeyTenant(served, "Solo");
      col = (
        await json(await served.request("POST", "/v1/collections", { token: tenant.key, json: { name: "clips" } }))
      ).data.id;
      const fd = new FormData();
      fd.append("collection_id", col);
      fd.append("file", Bun.file(clip), "clip.mp4");
      expect((await served.request("POST", "/v1/upload", { token: tenant.key, body: fd })).status).toBe(202);
    } finally {
      await served.close();
    }
    const copy = join(scratchDir("upload-duplicate-cli"), "copy.mp4");
    copyFileSync(clip, copy);
    const r = await runCliJson(["--data-dir", d, "ingest", copy, "--collection", "clips", "--no-wait"]);
    expect(r.files.map((f: any) => f.status)).toEqual(["unchanged"]);
  }, 120_000);
});
