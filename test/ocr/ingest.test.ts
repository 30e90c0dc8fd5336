import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, upload, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog } from "../helpers/models.ts";

const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const media = scratchDir("ocr-ingest");

/**
 * 9 s at 1280×720, no audio: 0–4 s "Quarterly revenue forecast" on navy, 4–9 s moving soft
 * colour with grain and "Harbour lighthouse tour" in a caption box (a hard cut at 4 s). Not sharp
 * colour bars: tesseract takes a full-height bar edge for a ruled line and erases it, strokes and all.
 */
async function makeClip(): Promise<string> {
  const text = (t: string, extra: string) => `drawtext=fontfile=${FONT}:text='${t}':fontcolor=white:${extra}`;
  return ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "color=c=navy:size=1280x720:rate=10:duration=4",
      // "Footage": a moving test pattern blurred into soft colour fields, with grain.
      // (blurred small and scaled up: a 1280×720 blur of every frame is slow on a busy box)
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x180:rate=10:duration=5",
      "-filter_complex",
      `[0:v]${text("Quarterly revenue forecast", "fontsize=40:x=120:y=320")}[a];` +
        `[1:v]gblur=sigma=6,scale=1280:720:flags=bicubic,noise=alls=14:allf=t,${text("Harbour lighthouse tour", "fontsize=36:x=(w-tw)/2:y=h-120:box=1:boxcolor=black:boxborderw=12")}[b];` +
        "[a][b]concat=n=2:v=1:a=0[v]",
      "-map",
      "[v]",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "10",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "slides.mp4"),
    180_000,
  );
}

function form(fields: Record<string, string | string[]>): { body: string; headers: Record<string, string> } {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
  return { body: p.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } };
}

describe("on-screen text with no model imported", () => {
  let t: TestApp;
  let tenant: Tenant;
  let other: Tenant;
  let videoId: string;
  let jobId: string;
  /** What the polls saw: the video searchable while OCR was still to come. */
  const seen = { readyWithOcrPending: false, jobPendingOcr: false };

  beforeAll(async () => {
    const clip = await makeClip();
    t = await startTestApp(
      { VSEARCH_RATE_LIMIT_JOBS: "100000", VSEARCH_RATE_LIMIT_VIDEOS: "100000" },
      { models: fixedCatalog({}) },
    );
    await t.app.start();
    tenant = await createTenant(t);
    other = await createTenant(t, "Other");
    const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
      .data.id;
    const up = await upload(t, tenant, col, clip, { filename: "slides.mp4" });
    expect(up.status).toBe(202);
    ({ video_id: videoId, job_id: jobId } = (await json(up)).data);
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error("indexing did not finish in 120 s");
      const job = (await json(await t.request("GET", `/v1/jobs/${jobId}`, { token: tenant.key }))).data;
      const video = (await json(await t.request("GET", `/v1/videos/${videoId}`, { token: tenant.key }))).data;
      if (video.status === "ready" && video.stages.ocr?.status === "pending") seen.readyWithOcrPending = true;
      if (job.status !== "done" && job.stages_pending.includes("ocr")) seen.jobPendingOcr = true;
      if (job.status === "done" || job.status === "failed") break;
      await Bun.sleep(20);
    }
  }, 180_000);
  afterAll(() => t?.close());

  test("the job lists ocr as still to come, the video is ready before it runs, and the stage records what it read", async () => {
    expect(seen.jobPendingOcr).toBe(true);
    expect(seen.readyWithOcrPending).toBe(true);
    const job = (await json(await t.request("GET", `/v1/jobs/${jobId}`, { token: tenant.key }))).data;
    expect(job).toMatchObject({ status: "done", stages_pending: [], error: null });
    const video = (await json(await t.request("GET", `/v1/videos/${videoId}`, { token: tenant.key }))).data;
    expect(video.status).toBe("ready");
    expect(video.stages.embeddings.status).toBe("skipped");
    expect(video.stages.ocr).toMatchObject({ status: "ran" });
    // Two captions, each one time range (not one row per frame).
    expect(video.stages.ocr.count).toBe(2);
    // No image model: no frame decode to take the frames from, so the stage decodes on its own.
    expect(video.stages.ocr.reason).toMatch(
      /^\d+ frames \(own decode\): \d+ read \(\d+ lines? recognized, \d+ kept from earlier frames\), \d+ without text, \d+ unchanged$/,
    );
  });

  test("modes=ocr finds a word shown on screen, as one clip over the time it was shown", async () => {
    const res = await t.request("POST", "/v1/search", {
      token: tenant.key,
      ...form({ query: "lighthouse", modes: "ocr" }),
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.data).toHaveLength(1);
    const segs = body.data[0].segments;
    expect(segs).toHaveLength(1);
    expect(segs[0]).toMatchObject({ type: "ocr", threshold_key: "ocr:default", score: 1 });
    expect(segs[0].text_content).toMatch(/Harbour lighthouse tour/i);
    expect(segs[0].timestamp_start).toBeGreaterThanOrEqual(3.9);
    expect(segs[0].timestamp_start).toBeLessThanOrEqual(4.6);
    expect(segs[0].timestamp_end).toBeGreaterThanOrEqual(8.5);
    expect(body.meta.facets.types).toEqual({ ocr: 1 });
  });

  test("the default modes include ocr; the other modes are skipped without their models, each saying why", async () => {
    const body = await json(
      await t.request("POST", "/v1/search", { token: tenant.key, ...form({ query: "revenue forecast" }) }),
    );
    expect(body.meta.modes).toEqual(["ocr"]);
    expect(Object.keys(body.meta.skipped_modes).sort()).toEqual(["scene", "transcript", "video"]);
    expect(body.meta.skipped_modes.transcript).toMatch(/^MODEL_NOT_INSTALLED: no speech model/);
    const segs = body.data[0].segments;
    expect(segs[0].type).toBe("ocr");
    expect(segs[0].text_content).toMatch(/Quarterly revenue forecast/i);
    expect(segs[0].timestamp_start).toBeLessThan(0.5);
    expect(segs[0].timestamp_end).toBeGreaterThanOrEqual(3.5);
    expect(segs[0].timestamp_end).toBeLessThanOrEqual(4.6);
  });

  test("a word that is not shown finds nothing; another tenant finds nothing", async () => {
    const none = await json(
      await t.request("POST", "/v1/search", { token: tenant.key, ...form({ query: "submarine", modes: "ocr" }) }),
    );
    expect(none.data).toEqual([]);
    const theirs = await json(
      await t.request("POST", "/v1/search", { token: other.key, ...form({ query: "lighthouse", modes: "ocr" }) }),
    );
    expect(theirs.data).toEqual([]);
    expect((await t.request("GET", `/v1/videos/${videoId}/moment?timestamp=1`, { token: other.key })).status).toBe(404);
  });

  test("modes=ocr without a text query is a 422", async () => {
    const res = await t.request("POST", "/v1/search", {
      token: tenant.key,
      ...form({ modes: "ocr", image_url: "http://example.com/x.jpg" }),
    });
    expect(res.status).toBe(422);
    expect((await json(res)).detail[0]).toMatchObject({ loc: ["body", "modes"] });
  });

  test("the moment endpoint shows the text on screen during that shot, with box and confidence", async () => {
    const res = await t.request("GET", `/v1/videos/${videoId}/moment?timestamp=1`, { token: tenant.key });
    expect(res.status).toBe(200);
    const m = (await json(res)).data;
    expect(m.on_screen_text).toHaveLength(1);
    const line = m.on_screen_text[0];
    expect(line.text).toMatch(/Quarterly revenue forecast/i);
    expect(line.confidence).toBeGreaterThan(80);
    // drawtext put it at x = 120, y = 320 of 1280×720.
    expect(line.box.x).toBeCloseTo(120 / 1280, 1);
    expect(line.box.y).toBeCloseTo(320 / 720, 1);
    expect(line.box.w).toBeGreaterThan(0.2);
    const later = (
      await json(await t.request("GET", `/v1/videos/${videoId}/moment?timestamp=6`, { token: tenant.key }))
    ).data;
    expect(later.on_screen_text.map((l: any) => l.text).join(" ")).toMatch(/lighthouse/i);
  });

  test("feedback finds an ocr segment by its start", async () => {
    const hit = (
      await json(
        await t.request("POST", "/v1/search", { token: tenant.key, ...form({ query: "lighthouse", modes: "ocr" }) }),
      )
    ).data[0].segments[0];
    const res = await t.request("POST", "/v1/search/feedback", {
      token: tenant.key,
      ...form({
        video_id: videoId,
        timestamp_start: String(hit.timestamp_start),
        signal: "down",
        threshold_key: "ocr:default",
      }),
    });
    expect(res.status).toBeLessThan(300);
    const after = await json(
      await t.request("POST", "/v1/search", { token: tenant.key, ...form({ query: "lighthouse", modes: "ocr" }) }),
    );
    expect(after.data).toEqual([]);
  });
});
