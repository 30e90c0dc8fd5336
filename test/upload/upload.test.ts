import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, metric, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";

let t: TestApp;
let a: Tenant;
let b: Tenant;
let colA: string;
let colB: string;
let mp4: string;
const media = scratchDir("upload");

beforeAll(async () => {
  t = await startTestApp({ VSEARCH_MAX_UPLOAD_BYTES: String(2 * 1024 * 1024), VSEARCH_RATE_LIMIT_UPLOAD: "1000" });
  a = await createTenant(t, "A");
  b = await createTenant(t, "B");
  colA = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "clips" } }))).data.id;
  colB = (await json(await t.request("POST", "/v1/collections", { token: b.key, json: { name: "clips" } }))).data.id;
  mp4 = await smallMp4(media);
});
afterAll(() => t.close());

function form(fields: Record<string, string>, file?: { path?: string; bytes?: Uint8Array; name: string }) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  if (file)
    fd.append(
      "file",
      file.path ? Bun.file(file.path) : new Blob([(file.bytes ?? new Uint8Array()) as Uint8Array<ArrayBuffer>]),
      file.name,
    );
  return fd;
}

const upload = (token: string, fd: FormData) => t.request("POST", "/v1/upload", { token, body: fd });
const tmpFiles = () => (existsSync(join(t.dir, "uploads", "tmp")) ? readdirSync(join(t.dir, "uploads", "tmp")) : []);

/** Rows of every account: videos, jobs and outbox events. */
const snapshot = async () => ({
  videos: (await t.stores.videos.allIds()).length,
  jobs: (await t.stores.jobs.countsByStatus()).reduce((n, r) => n + r.n, 0),
  events: (await t.stores.events.list()).length,
});
async function expectNothingChanged(before: { videos: number; jobs: number; events: number }) {
  expect(await snapshot()).toEqual(before);
  expect(tmpFiles()).toEqual([]);
}

describe("POST /v1/upload", () => {
  test("202 with job_id, video_id, queued; video, job and video.created event recorded; file stored", async () => {
    const res = await upload(a.key, form({ collection_id: colA }, { path: mp4, name: "My Clip.mp4" }));
    expect(res.status).toBe(202);
    const { data } = await json(res);
    expect(data).toEqual({
      job_id: expect.stringMatching(/^job_/),
      video_id: expect.stringMatching(/^vid_/),
      status: "queued",
      duplicate: false,
    });
    const video = (await json(await t.request("GET", `/v1/videos/${data.video_id}`, { token: a.readOnlyKey }))).data;
    expect(video).toMatchObject({
      id: data.video_id,
      filename: "My Clip.mp4",
      collection_id: colA,
      user_id: a.accountId,
      status: "queued",
      mime_type: "video/mp4",
    });
    expect(video.file_size_bytes).toBe(Bun.file(mp4).size);
    expect(video.playback_url).toContain(`/media/videos/${data.video_id}/source?expires=`);
    const job = (await json(await t.request("GET", `/v1/jobs/${data.job_id}`, { token: a.key }))).data;
    expect(job).toMatchObject({
      id: data.job_id,
      job_id: data.job_id,
      video_id: data.video_id,
      user_id: a.accountId,
      status: "queued",
      error: null,
    });
    const ev = await t.stores.events.list({ accountId: a.accountId, type: "video.created" });
    expect(ev.map((e) => JSON.parse(e.payload))).toContainEqual({
      video_id: data.video_id,
      job_id: data.job_id,
      collection_id: colA,
      filename: "My Clip.mp4",
    });
    expect(await metric(t, "vsearch_jobs", { status: "queued" })).toBeGreaterThanOrEqual(1);
    const stored = readdirSync(join(t.dir, "videos", data.video_id));
    expect(stored).toContain("source.mp4");
    expect(tmpFiles()).toEqual([]);
  });

  test("over the size limit: 413 UPLOAD_TOO_LARGE while streaming, partial file removed", async () => {
    const before = await snapshot();
    const big = new Uint8Array(3 * 1024 * 1024);
    big.set(new TextEncoder().encode("\x00\x00\x00\x20ftypisom"));
    const res = await upload(a.key, form({ collection_id: colA }, { bytes: big, name: "big.mp4" }));
    expect(res.status).toBe(413);
    expect((await json(res)).detail.code).toBe("UPLOAD_TOO_LARGE");
    await expectNothingChanged(before);
    // Without Content-Length (chunked), only the per-chunk check can stop it.
    const boundary = "cap-test";
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${colA}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\n\r\n`,
    );
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent === 0) c.enqueue(head);
        if (sent >= 3 * 1024 * 1024) return c.close();
        c.enqueue(new Uint8Array(64 * 1024));
        sent += 64 * 1024;
      },
    });
    const chunked = await t.app.fetch(
      new Request("http://localhost/v1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${a.key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    expect(chunked.status).toBe(413);
    expect((await json(chunked)).detail.code).toBe("UPLOAD_TOO_LARGE");
    expect(sent).toBeLessThan(3 * 1024 * 1024); // stopped reading part-way
    await expectNothingChanged(before);
  });

  test("415 for a PNG named .mp4, a text file and an audio-only file; nothing left behind", async () => {
    const png = await ffmpeg(["-f", "lavfi", "-i", "color=red:size=64x64", "-frames:v", "1"], join(media, "red.png"));
    const renamed = join(media, "image.mp4");
    writeFileSync(renamed, await Bun.file(png).bytes());
    const text = join(media, "notes.mp4");
    writeFileSync(text, "just some text, not a video\n".repeat(50));
    const audio = await ffmpeg(
      ["-f", "lavfi", "-i", "sine=frequency=300:duration=1", "-c:a", "aac"],
      join(media, "tone.m4a"),
    );
    for (const path of [renamed, text, audio]) {
      const before = await snapshot();
      const res = await upload(a.key, form({ collection_id: colA }, { path, name: path.split("/").pop()! }));
      expect(res.status, path).toBe(415);
      expect((await json(res)).detail.code).toBe("UNSUPPORTED_FORMAT");
      await expectNothingChanged(before);
    }
  });

  test("a zero-byte file and missing fields are 422; nothing stored", async () => {
    const before = await snapshot();
    const empty = await upload(a.key, form({ collection_id: colA }, { bytes: new Uint8Array(), name: "empty.mp4" }));
    expect(empty.status).toBe(422);
    expect((await json(empty)).detail[0]).toMatchObject({ loc: ["body", "file"] });
    const noFile = await upload(a.key, form({ collection_id: colA }));
    expect((await json(noFile)).detail[0]).toMatchObject({ loc: ["body", "file"], type: "missing" });
    const noCollection = await upload(a.key, form({}, { path: mp4, name: "x.mp4" }));
    expect((await json(noCollection)).detail[0]).toMatchObject({ loc: ["body", "collection_id"], type: "missing" });
    const json422 = await t.request("POST", "/v1/upload", { token: a.key, json: { collection_id: colA } });
    expect(json422.status).toBe(422);
    await expectNothingChanged(before);
  });

  test("collection must exist in the caller's account (404); read_only keys cannot upload (403)", async () => {
    const before = await snapshot();
    const other = await upload(a.key, form({ collection_id: colB }, { path: mp4, name: "x.mp4" }));
    expect(other.status).toBe(404);
    expect((await json(other)).detail.code).toBe("COLLECTION_NOT_FOUND");
    const ro = await upload(a.readOnlyKey, form({ collection_id: colA }, { path: mp4, name: "x.mp4" }));
    expect(ro.status).toBe(403);
    await expectNothingChanged(before);
  });
});

describe("videos and jobs", () => {
  test("list, filter, get; another account's ids are 404; delete removes files, rows and records video.deleted", async () => {
    const { data } = await json(await upload(a.key, form({ collection_id: colA }, { path: mp4, name: "del.mp4" })));
    const list = await json(
      await t.request("GET", `/v1/videos?collection_id=${colA}&status=queued,processing`, { token: a.key }),
    );
    expect(list.data.map((v: any) => v.id)).toContain(data.video_id);
    expect(list.meta).toMatchObject({ page: 1, per_page: 20 });
    expect((await t.request("GET", "/v1/videos?status=bogus", { token: a.key })).status).toBe(422);
    expect((await t.request("GET", "/v1/videos?per_page=101", { token: a.key })).status).toBe(422);
    expect((await t.request("GET", `/v1/videos/${data.video_id}`, { token: b.key })).status).toBe(404);
    expect((await t.request("GET", `/v1/jobs/${data.job_id}`, { token: b.key })).status).toBe(404);
    expect(
      (await json(await t.request("GET", `/v1/jobs?video_id=${data.video_id}`, { token: a.key }))).data,
    ).toHaveLength(1);
    expect((await json(await t.request("GET", "/v1/jobs?status=done", { token: a.key }))).data).toEqual([]);
    expect((await t.request("GET", "/v1/jobs?status=nope", { token: a.key })).status).toBe(422);
    expect((await t.request("DELETE", `/v1/videos/${data.video_id}`, { token: b.key })).status).toBe(404);
    expect((await t.request("DELETE", `/v1/videos/${data.video_id}`, { token: a.readOnlyKey })).status).toBe(403);

    const del = await t.request("DELETE", `/v1/videos/${data.video_id}`, { token: a.key });
    expect(del.status).toBe(204);
    expect(existsSync(join(t.dir, "videos", data.video_id))).toBe(false);
    const gone = await t.request("GET", `/v1/videos/${data.video_id}`, { token: a.key });
    expect((await json(gone)).detail.code).toBe("VIDEO_NOT_FOUND");
    expect((await t.request("GET", `/v1/jobs/${data.job_id}`, { token: a.key })).status).toBe(404);
    const ev = await t.stores.events.list({ type: "video.deleted" });
    expect(ev.map((e) => JSON.parse(e.payload))).toContainEqual({ video_id: data.video_id, collection_id: colA });
  });

  test("deleting a collection cascades to its videos and their files", async () => {
    const col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "doomed" } })))
      .data.id;
    const { data } = await json(await upload(a.key, form({ collection_id: col }, { path: mp4, name: "c.mp4" })));
    const got = (await json(await t.request("GET", `/v1/collections/${col}`, { token: a.key }))).data;
    expect(got.video_count).toBe(1);
    expect(got.storage_bytes).toBe(Bun.file(mp4).size);
    expect((await t.request("DELETE", `/v1/collections/${col}`, { token: a.key })).status).toBe(204);
    expect(existsSync(join(t.dir, "videos", data.video_id))).toBe(false);
    expect(await t.stores.videos.getById(data.video_id)).toBeNull();
  });
});
