/**
 * Ingest of video with keyframes far apart decodes it once: every ffmpeg the app starts is logged
 * by a wrapper binary (config ffmpeg_path), and the visual stages must have started exactly one
 * decode of the source — the frame sampler with the cut analysis in its graph — and no separate
 * shot detection or thumbnail seek.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { createTenant, json, startTestApp, upload, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { filterGraphOf, loggedFfmpeg } from "../helpers/media.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";

const dir = scratchDir("one-decode");
let clip: string;
let logged: ReturnType<typeof loggedFfmpeg>;
const calls = () => logged.calls();

/** Uploads the clip, waits for its job, returns the video. */
async function ingest(t: TestApp, tenant: Tenant): Promise<any> {
  const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data
    .id;
  const up = await upload(t, tenant, col, clip, { filename: "long-gop.mp4" });
  expect(up.status).toBe(202);
  const { video_id, job_id } = (await json(up)).data;
  let job: any;
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await Bun.sleep(100)) {
    job = (await json(await t.request("GET", `/v1/jobs/${job_id}`, { token: tenant.key }))).data;
    if (job.status === "done" || job.status === "failed") break;
  }
  expect(job.status).toBe("done");
  return (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
}

describe("ingest at a 250-frame keyframe interval", () => {
  let t: TestApp;
  let tenant: Tenant;
  beforeAll(async () => {
    // 18 s (past the 15 s below which everything is decoded anyway), keyframes 10 s apart, cuts at 4, 8, 12.
    const seg = (src: string, d: number, extra = "") => [
      "-f",
      "lavfi",
      "-i",
      `${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=${d}${extra}`,
    ];
    clip = await ffmpeg(
      [
        ...seg("testsrc2", 4),
        ...seg("color=c=red", 4),
        ...seg("smptebars", 4),
        ...seg("testsrc2", 6, ",negate"),
        "-filter_complex",
        "[0:v][1:v][2:v][3:v]concat=n=4:v=1:a=0,format=yuv420p[v]",
        "-map",
        "[v]",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-g",
        "250",
        "-keyint_min",
        "250",
        "-sc_threshold",
        "0",
      ],
      join(dir, "long-gop.mp4"),
    );
    logged = loggedFfmpeg(dir);
    t = await startTestApp(
      { VSEARCH_FFMPEG_PATH: logged.path, VSEARCH_RATE_LIMIT_JOBS: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip }) },
    );
    await t.app.start();
    tenant = await createTenant(t);
  }, 90_000);
  afterAll(() => t?.close());

  test("one ffmpeg decode gives the frames, the cuts, the thumbnails and the poster", async () => {
    const before = calls().length;
    const video = await ingest(t, tenant);
    expect(video.duration_secs).toBeCloseTo(18, 1);
    expect(video.stages.shots).toMatchObject({ status: "ran", count: 4 });
    // x264 veryfast writes ref=1 into the stream: every B picture may be skipped, exactly.
    expect(video.stages.shots.reason).toMatch(/^full decode \(bidir pictures skipped\), cuts found in the same pass/);
    expect(video.stages.frames).toMatchObject({ status: "ran", count: 18 }); // the 1 s grid, once
    expect(video.stages.thumbnails.reason).toBe("4 shots and the poster from the frame decode");

    // The calls that decode video pictures (a filter graph) or seek for a thumbnail. Exactly one
    // samples the model's frames, and it also carries the cut analysis; no separate shot detection,
    // no seek. (Later enrichment stages, such as on-screen text, may decode for their own needs.)
    const after = calls().slice(before);
    const sampling = after.filter((args) => filterGraphOf(args).includes("crop=224:224"));
    expect(sampling).toHaveLength(1);
    expect(filterGraphOf(sampling[0])).toContain("showinfo@cuts");
    expect(filterGraphOf(sampling[0])).toContain("select='gt(scene,0.3)'");
    expect(sampling[0].join(" ")).toContain("-skip_frame bidir -skip_loop_filter bidir");
    expect(after.filter((args) => filterGraphOf(args).includes("gt(scene"))).toHaveLength(1);
    expect(after.filter((args) => args.includes("-ss"))).toHaveLength(0);

    // The OCR stage (after the video is ready) reads the 1280×720 gray frames that same decode
    // wrote (its text branch): the long GOP is not decoded a second time. Its one ffmpeg reads
    // those JPEG files (a concat list), not the video.
    expect(filterGraphOf(sampling[0])).toContain("format=gray");
    expect(video.stages.ocr).toMatchObject({ status: "ran" });
    expect(video.stages.ocr.reason).toMatch(/^18 frames \(frame decode\): /);
    const ocrReads = after.filter((args) => args.includes("concat") && filterGraphOf(args).includes("format=gray"));
    expect(ocrReads).toHaveLength(1);
    const decodes = after.filter(
      (args) =>
        args.some((a) => /[\\/]source\.mp4$/.test(a)) && (args.includes("-filter_complex") || args.includes("-vf")),
    );
    expect(decodes).toEqual(sampling);
  }, 120_000);

  test("frame_loop_filter skip: the one decode runs without the loop filter, for the model and OCR alike; same cuts", async () => {
    const t2 = await startTestApp(
      { VSEARCH_FFMPEG_PATH: logged.path, VSEARCH_FRAME_LOOP_FILTER: "skip", VSEARCH_RATE_LIMIT_JOBS: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip }) },
    );
    try {
      await t2.app.start();
      const before = calls().length;
      const video = await ingest(t2, await createTenant(t2));
      expect(video.stages.shots).toMatchObject({ status: "ran", count: 4 });
      expect(video.stages.shots.reason).toMatch(/^full decode \(bidir pictures skipped, no loop filter\)/);
      const after = calls().slice(before);
      const sampling = after.filter((args) => filterGraphOf(args).includes("crop=224:224"));
      expect(sampling).toHaveLength(1);
      expect(sampling[0].join(" ")).toContain("-skip_frame bidir -skip_loop_filter all");
      expect(filterGraphOf(sampling[0])).toContain("format=gray");
      expect(video.stages.ocr.reason).toMatch(/^18 frames \(frame decode\): /);
    } finally {
      await t2.close();
    }
    for (const bad of ["off", "all", ""]) {
      expect(() => loadConfig({ dataDir: dir, logLevel: "silent" }, { VSEARCH_FRAME_LOOP_FILTER: bad }), bad).toThrow(
        /VSEARCH_FRAME_LOOP_FILTER must be/,
      );
    }
  }, 120_000);

  test("frame_interval_secs sets the grid (2 s: 9 frames of 18 s, same cuts); out of range stops the start", async () => {
    const t2 = await startTestApp(
      { VSEARCH_FRAME_INTERVAL_SECS: "2", VSEARCH_RATE_LIMIT_JOBS: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip }) },
    );
    try {
      await t2.app.start();
      const video = await ingest(t2, await createTenant(t2));
      expect(video.stages.frames).toMatchObject({ status: "ran", count: 9 });
      expect(video.stages.shots).toMatchObject({ status: "ran", count: 4 });
    } finally {
      await t2.close();
    }
    for (const bad of ["0", "-1", "61", "soon"]) {
      expect(() => loadConfig({ dataDir: dir, logLevel: "silent" }, { VSEARCH_FRAME_INTERVAL_SECS: bad }), bad).toThrow(
        /VSEARCH_FRAME_INTERVAL_SECS must be/,
      );
    }
  }, 120_000);
});
