/**
 * Ingest of a long-GOP file of 20 s or more splits its full decode over two ffmpeg processes
 * (config frame_decode_processes; media/split-decode.ts) and indexes it as one process does: as
 * many shots and frames, thumbnails for every shot and the poster. (That the frames and cuts are
 * the same ones, pixel for pixel, is test/media/split-decode.test.ts.)
 */
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { createTenant, json, startTestApp, upload, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { filterGraphOf, loggedFfmpeg } from "../helpers/media.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";

const dir = scratchDir("split-decode");
let clip: string;
let logged: ReturnType<typeof loggedFfmpeg>;
const calls = () => logged.calls();

/** Starts an app with `processes`, ingests the clip, returns the video and the frame-sampling ffmpeg calls. */
async function ingestWith(processes: string): Promise<{ video: any; sampling: string[][] }> {
  const t: TestApp = await startTestApp(
    { VSEARCH_FFMPEG_PATH: logged.path, VSEARCH_FRAME_DECODE_PROCESSES: processes, VSEARCH_RATE_LIMIT_JOBS: "100000" },
    { models: fixedCatalog({ "image-text": tinyClip }) },
  );
  try {
    await t.app.start();
    const tenant = await createTenant(t);
    const before = calls().length;
    const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
      .data.id;
    const up = await upload(t, tenant, col, clip, { filename: "long-gop.mp4" });
    const { video_id, job_id } = (await json(up)).data;
    let job: any;
    for (const deadline = Date.now() + 90_000; Date.now() < deadline; await Bun.sleep(100)) {
      job = (await json(await t.request("GET", `/v1/jobs/${job_id}`, { token: tenant.key }))).data;
      if (job.status === "done" || job.status === "failed") break;
    }
    expect(job.status).toBe("done");
    const video = (await json(await t.request("GET", `/v1/videos/${video_id}`, { token: tenant.key }))).data;
    return {
      video,
      sampling: calls()
        .slice(before)
        .filter((args) => filterGraphOf(args).includes("crop=224:224")),
    };
  } finally {
    await t.close();
  }
}

describe("split decode in the pipeline", () => {
  beforeAll(async () => {
    // 26 s, 25 fps, x264's default keyframe rules (250 frames, a keyframe at each hard cut: 6.4,
    // 13.4 and 19.2), so the seam falls on a cut.
    const seg = (src: string, d: number, extra = "") => [
      "-f",
      "lavfi",
      "-i",
      `${src}${src.includes("=") ? ":" : "="}s=320x240:r=25:d=${d}${extra}`,
    ];
    clip = await ffmpeg(
      [
        ...seg("testsrc2", 6.4),
        ...seg("color=c=red", 7),
        ...seg("smptebars", 5.8),
        ...seg("testsrc2", 6.8, ",negate"),
        "-filter_complex",
        "[0:v][1:v][2:v][3:v]concat=n=4:v=1:a=0,format=yuv420p[v]",
        "-map",
        "[v]",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
      ],
      join(dir, "long-gop.mp4"),
    );
    logged = loggedFfmpeg(dir);
  }, 90_000);

  test("two processes index the file as one does", async () => {
    const one = await ingestWith("1");
    const two = await ingestWith("2");
    expect(one.sampling).toHaveLength(1);
    expect(two.sampling).toHaveLength(2);
    // The two start at once: which one's command line is logged first varies with the load.
    const halves = two.sampling.map((args) => args.join(" "));
    const second = /-copyts -start_at_zero -noaccurate_seek -ss 13\.\d+/;
    expect(halves.filter((a) => second.test(a))).toHaveLength(1);
    expect(halves.filter((a) => / -ss /.test(a))).toHaveLength(1);
    expect(two.video.stages.frames.reason).toMatch(/in 2 processes split at keyframes 13\.40 s/);
    expect(one.video.stages.frames.reason).not.toMatch(/processes/);
    for (const k of ["frames", "embeddings", "shots"])
      expect(two.video.stages[k].count, k).toBe(one.video.stages[k].count);
    expect(one.video.stages.shots.count).toBe(4);
    expect(two.video.stages.thumbnails.reason).toBe("4 shots and the poster from the frame decode");
  }, 120_000);

  test("frame_decode_processes out of range stops the start", () => {
    for (const bad of ["-1", "65", "1.5", "many"]) {
      expect(
        () => loadConfig({ dataDir: dir, logLevel: "silent" }, { VSEARCH_FRAME_DECODE_PROCESSES: bad }),
        bad,
      ).toThrow(/VSEARCH_FRAME_DECODE_PROCESSES must be/);
    }
  });
});
