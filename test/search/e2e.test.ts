import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { multipart, segmentsOf } from "./helpers.ts";

/**
 * The whole chain with the tiny models: upload → pipeline (worker pool) → the pipeline's
 * onIndexed hook → search with the server's own query embedder (the pool + model catalog) →
 * presigned thumbnail and playback with ranges → moment.
 */
let t: TestApp;
let tenant: Tenant;
let videoId: string;
let dir: string;

beforeAll(async () => {
  dir = scratchDir("search-e2e");
  // 2 s test pattern, 2 s solid red, 2 s solid blue (two hard cuts), with a tone.
  const clip = await ffmpeg(
    ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=12:duration=2", "-f", "lavfi", "-i", "color=c=red:size=320x240:rate=12:duration=2",
     "-f", "lavfi", "-i", "color=c=blue:size=320x240:rate=12:duration=2", "-f", "lavfi", "-i", "sine=frequency=440:duration=6",
     "-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]", "-map", "[v]", "-map", "3:a",
     "-c:v", "libx264", "-preset", "ultrafast", "-g", "12", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    join(dir, "cuts.mp4"),
  );
  t = await startTestApp({ VSEARCH_RATE_LIMIT_JOBS: "100000" }, { models: fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }) });
  await t.app.start();
  tenant = await createTenant(t);
  const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "e2e" } }))).data.id;
  const fd = new FormData();
  fd.append("collection_id", col);
  fd.append("file", Bun.file(clip), "cuts.mp4");
  const up = (await json(await t.request("POST", "/v1/upload", { token: tenant.key, body: fd }))).data;
  videoId = up.video_id;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = (await json(await t.request("GET", `/v1/jobs/${up.job_id}`, { token: tenant.key }))).data;
    if (job.status === "done") break;
    if (job.status === "failed" || Date.now() > deadline) throw new Error(`ingest did not finish: ${JSON.stringify(job)}`);
    await Bun.sleep(100);
  }
});

afterAll(async () => t?.close());

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

describe("search over a video the pipeline indexed", () => {
  it("a red picture finds the red shot; its thumbnail and clip are served", async () => {
    const red = await ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=200x150", "-frames:v", "1"], join(dir, "red.png"));
    const b = multipart({ image: new Blob([Uint8Array.from(readFileSync(red))], { type: "image/png" }), modes: "video", include_thumbnail_base64: "true" });
    const res = await t.request("POST", "/v1/search", { token: tenant.readOnlyKey, body: b.body });
    expect(res.status).toBe(200);
    const body = await res.json();
    const best = segmentsOf(body).sort((x: any, y: any) => x.rank - y.rank)[0];
    expect(best.video_id).toBe(videoId);
    expect(best.timestamp_start).toBeGreaterThanOrEqual(1.9);
    expect(best.timestamp_end).toBeLessThanOrEqual(4.1);
    expect(best.raw_score).toBeGreaterThan(0.99);
    expect(best.thumbnail_base64).toMatch(/^\/9j\//); // a JPEG

    const thumb = await t.request("GET", local(best.thumbnail_url));
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(await thumb.arrayBuffer()).toString("base64")).toBe(best.thumbnail_base64);

    const clip = await t.request("GET", local(best.video_url), { headers: { range: "bytes=-1000" } });
    expect(clip.status).toBe(206);
    expect(clip.headers.get("content-type")).toBe("video/mp4");
    expect((await clip.arrayBuffer()).byteLength).toBe(1000);
  });

  it("text queries run through the pool's text tower; all modes answer", async () => {
    const b = multipart({ query: "a red wall" });
    const res = await t.request("POST", "/v1/search", { token: tenant.key, body: b.body });
    expect(res.status).toBe(200);
    expect((await res.json()).meta.modes).toEqual(["video", "scene", "transcript", "ocr"]);
  });

  it("the moment of the red shot has its labels, span and thumbnail", async () => {
    const { data } = await json(await t.request("GET", `/v1/videos/${videoId}/moment?timestamp=3`, { token: tenant.key }));
    expect(data.scene_start).toBeCloseTo(2, 0);
    expect(data.scene_end).toBeCloseTo(4, 0);
    expect(data.labels.length).toBeGreaterThan(0);
    expect(data.thumbnail_url).toContain(`/media/videos/${videoId}/shots/1.jpg`);
  });
});
