import { cpSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, metric, startTestApp, type Tenant, type TestApp, uploadAndWait } from "../helpers/app.ts";
import { cutsMp4, ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { LONG_CUTS, imageDimensions, isJpeg, mediaBins, mediaFixture, meanRgb } from "../helpers/media.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";

/** An image's pixels as RGB24, scaled down to 16×16. */
async function decodeRgb(path: string): Promise<Uint8Array> {
  const p = Bun.spawn(
    [
      mediaBins().ffmpeg,
      "-v",
      "error",
      "-i",
      path,
      "-vf",
      "scale=16:16",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "pipe:1",
    ],
    { stdout: "pipe" },
  );
  return new Uint8Array(await new Response(p.stdout).arrayBuffer());
}

const media = scratchDir("ingest");
let withCuts: string;
let silentVideo: string;

/** Three 2-second colour segments (two hard cuts) with a tone track. */
async function makeMedia() {
  withCuts = await cutsMp4(media, "cuts.mp4");
  silentVideo = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=160x120:rate=10:duration=2",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ],
    join(media, "silent.mp4"),
  );
}

describe("ingest pipeline with the tiny models", () => {
  let t: TestApp;
  let tenant: Tenant;
  let col: string;
  beforeAll(async () => {
    await makeMedia();
    t = await startTestApp(
      { VSEARCH_RATE_LIMIT_JOBS: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper }) },
    );
    await t.app.start();
    tenant = await createTenant(t);
    col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data.id;
  });
  afterAll(() => t.close());

  test("frames, shots, labels, transcript and thumbnails end up in the index", async () => {
    const { video_id, job_id, job } = await uploadAndWait(t, tenant, col, withCuts);
    expect(job).toMatchObject({ status: "done", progress_pct: 100, error: null });
    const video = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
    expect(video).toMatchObject({ status: "ready", width: 320, height: 240, has_audio: true, codec: "h264" });
    expect(video.duration_secs).toBeCloseTo(6, 0);
    for (const s of ["probe", "shots", "frames", "embeddings", "scenes", "audio", "transcript", "thumbnails"]) {
      expect(video.stages[s]?.status, s).toBe("ran");
    }
    expect(video.stages.shots.count).toBe(3);
    expect(video.thumbnail_url).toContain(`/media/videos/${video_id}/poster.jpg`);
    const frames = await t.stores.index.framesOf(video_id);
    expect(frames.length).toBeGreaterThanOrEqual(3);
    expect(new Set(frames.map((f) => f.shot_index))).toEqual(new Set([0, 1, 2]));
    expect(frames.every((f) => f.model_id === tinyClip.modelId)).toBe(true);
    expect(frames.filter((f) => f.has_vector)).toHaveLength(frames.length);
    expect(await metric(t, "vsearch_inference_running")).toBe(1); // the pool that embedded them (the gauge can say so)
    const shots = (await t.stores.search.shotsOfVideos([video_id])).get(video_id)!;
    expect(shots.map((s) => s.shot_index)).toEqual([0, 1, 2]);
    expect(shots.map((s) => Math.round(s.start_secs))).toEqual([0, 2, 4]);
    for (const s of shots) {
      expect(JSON.parse(s.labels).length).toBeGreaterThan(0);
      expect(existsSync(join(t.dir, s.thumbnail_path!))).toBe(true);
    }
    const ev = await t.stores.events.list({ type: "job.completed" });
    expect(ev.map((e) => JSON.parse(e.payload))).toContainEqual({ job_id, video_id });
    expect(video.segments_count).toBeGreaterThanOrEqual(frames.length + shots.length);
    // collection figures are real now
    const c = (await json(await t.request("GET", `/v1/collections/${col}`, { token: tenant.key }))).data;
    expect(c.video_count).toBe(1);
    expect(c.total_duration_secs).toBeCloseTo(6, 0);
    expect(c.thumbnail_urls).toHaveLength(1);
    expect(c.storage_bytes).toBeGreaterThan(video.file_size_bytes);
  });

  test("2 s keyframes: one decode gives frames, shots and the shots' thumbnails; nothing temporary is left", async () => {
    const file = await mediaFixture("longCuts");
    const { video_id, job } = await uploadAndWait(t, tenant, col, file);
    expect(job.status).toBe("done");
    const v = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
    expect(v.stages.shots).toMatchObject({
      status: "ran",
      count: 5,
      reason: "keyframe decode, scored on the sampled frames",
    });
    expect(v.stages.frames.reason).toMatch(/^keyframe decode/);
    expect(v.stages.thumbnails).toMatchObject({
      status: "ran",
      count: 5,
      reason: "5 shots and the poster from the frame decode",
    });
    // The poster is the first sampled frame at 10 % (2 s): the testsrc2 shot, 640 wide.
    expect(await imageDimensions(join(t.dir, "videos", video_id, "poster.jpg"))).toEqual([640, 480]);
    const shots = (await t.stores.search.shotsOfVideos([video_id])).get(video_id)!;
    expect(shots.map((s) => s.start_secs)).toEqual([0, ...LONG_CUTS.boundaries]);
    for (const s of shots) {
      const path = join(t.dir, s.thumbnail_path!);
      expect(isJpeg(readFileSync(path))).toBe(true);
      expect(await imageDimensions(path)).toEqual([320, 240]);
    }
    // The shot's thumbnail is its keyframe: the red shot's is red.
    expect(meanRgb(await decodeRgb(join(t.dir, shots[1].thumbnail_path!)))[0]).toBeGreaterThan(200);
    const videoDir = join(t.dir, "videos", video_id);
    expect(readdirSync(videoDir).sort()).toEqual(["poster.jpg", "shots", "source.mp4"]);
    expect(readdirSync(join(videoDir, "shots")).length).toBe(5);
  });

  test("a video without audio: transcript stage skipped with the reason", async () => {
    const { video_id, job } = await uploadAndWait(t, tenant, col, silentVideo);
    expect(job.status).toBe("done");
    const v = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
    expect(v.has_audio).toBe(false);
    expect(v.stages.transcript).toEqual({ status: "skipped", reason: "no audio stream" });
    expect(v.stages.embeddings.status).toBe("ran");
  });
});

describe("speech beside the visual stages", () => {
  test("a speech model that cannot load fails the job with its own error; no transcript rows, the progress never went back", async () => {
    await makeMedia();
    const broken = join(media, "broken-whisper");
    cpSync(tinyWhisper.dir, broken, { recursive: true });
    writeFileSync(join(broken, "onnx", "encoder_model.onnx"), "not an onnx model");
    const t = await startTestApp(
      { VSEARCH_RATE_LIMIT_JOBS: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip, speech: { ...tinyWhisper, dir: broken } }) },
    );
    try {
      const seen: number[] = [];
      await t.app.start();
      const tenant = await createTenant(t);
      const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
        .data.id;
      const { video_id, job } = await uploadAndWait(t, tenant, col, withCuts, {
        onPoll: (j) => seen.push(j.progress_pct),
      });
      expect(job.status).toBe("failed");
      expect(job.error.code).toBe("MODEL_LOAD_FAILED");
      expect(job.error.message).toContain("Whisper");
      expect(await t.stores.playback.transcript(video_id)).toEqual([]);
      expect(seen.every((p, i) => i === 0 || p >= seen[i - 1])).toBe(true);
    } finally {
      await t.close();
    }
  });
});

describe("ingest without models", () => {
  test("stages that need a model are skipped with the reason; the video is still ready", async () => {
    await makeMedia();
    const t = await startTestApp();
    try {
      await t.app.start();
      const tenant = await createTenant(t);
      const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
        .data.id;
      const { video_id, job } = await uploadAndWait(t, tenant, col, withCuts);
      expect(job.status).toBe("done");
      const v = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
      expect(v.stages.embeddings).toMatchObject({
        status: "skipped",
        reason: expect.stringContaining("no image-text model"),
      });
      expect(v.stages.transcript).toMatchObject({
        status: "skipped",
        reason: expect.stringContaining("no speech model"),
      });
      expect(v.stages.thumbnails.status).toBe("ran");
      expect(await metric(t, "vsearch_inference_running")).toBe(0);
    } finally {
      await t.close();
    }
  });
});
