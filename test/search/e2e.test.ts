import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp, uploadAndWait } from "../helpers/app.ts";
import { cutsMp4, ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { multipart, segmentsOf } from "./helpers.ts";

/**
 * The whole chain with the tiny models: upload → pipeline (worker pool) → the pipeline's
 * video.content_changed event → search with the server's own query embedder (the pool + model catalog) →
 * presigned thumbnail and playback with ranges → moment.
 */
let t: TestApp;
let tenant: Tenant;
let videoId: string;
let dir: string;

beforeAll(async () => {
  dir = scratchDir("search-e2e");
  // 2 s test pattern, 2 s solid red, 2 s solid blue (two hard cuts), with a tone.
  const clip = await cutsMp4(dir, "cuts.mp4");
  t = await startTestApp(
    { VSEARCH_RATE_LIMIT_JOBS: "100000" },
    { models: fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }) },
  );
  await t.app.start();
  tenant = await createTenant(t);
  const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "e2e" } })))
    .data.id;
  const up = await uploadAndWait(t, tenant, col, clip, { timeoutMs: 60_000, filename: "cuts.mp4" });
  if (up.job.status !== "done") throw new Error(`ingest did not finish: ${JSON.stringify(up.job)}`);
  videoId = up.video_id;
});

afterAll(async () => t?.close());

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

describe("search over a video the pipeline indexed", () => {
  it("a red picture finds the red shot; its thumbnail and clip are served", async () => {
    const red = await ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=200x150", "-frames:v", "1"], join(dir, "red.png"));
    const b = multipart({
      image: new Blob([Uint8Array.from(readFileSync(red))], { type: "image/png" }),
      modes: "video",
      include_thumbnail_base64: "true",
    });
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
    const { data } = await json(
      await t.request("GET", `/v1/videos/${videoId}/moment?timestamp=3`, { token: tenant.key }),
    );
    expect(data.scene_start).toBeCloseTo(2, 0);
    expect(data.scene_end).toBeCloseTo(4, 0);
    expect(data.labels.length).toBeGreaterThan(0);
    expect(data.thumbnail_url).toContain(`/media/videos/${videoId}/shots/1.jpg`);
  });
});
