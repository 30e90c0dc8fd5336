/**
 * Issue 22, "decode what can be decoded": the first 100 kB of a real 10 s clip (its index still
 * claims 10 s) is indexed as far as its data goes, with a warning on the video
 * (`partial: decoded 0:00–0:03 of 0:10`); a truncated Matroska file (no index left to seek with)
 * too; a complete file gets no warning; only a file with no decodable frame fails.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readablePart } from "../../src/media/readable.ts";
import {
  createKeyTenant,
  json,
  startTestApp,
  type Tenant,
  type TestApp,
  upload,
  uploadAndWait,
} from "../helpers/app.ts";
import { FFMPEG, ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";

const FFPROBE = join(import.meta.dirname, "..", "..", "node_modules", "@ffprobe-installer", "linux-x64", "ffprobe");
const bins = { ffmpeg: FFMPEG, ffprobe: FFPROBE };
const dir = scratchDir("partial-decode");
let clip: string;
let truncated: string;
let t: TestApp;
let a: Tenant;
let col: string;

/** The first `bytes` of `file`, as `name`. */
const head = (file: string, bytes: number, name: string) => {
  const out = join(dir, name);
  writeFileSync(out, readFileSync(file).subarray(0, bytes));
  return out;
};

beforeAll(async () => {
  // 10 s at ~250 kbit/s with its index up front (+faststart): 100 kB hold about the first 3 s.
  clip = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x240:rate=25:duration=10",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "25",
      "-b:v",
      "250k",
      "-maxrate",
      "250k",
      "-bufsize",
      "250k",
      "-pix_fmt",
      "yuv420p",
      "-movflags",
      "+faststart",
    ],
    join(dir, "full.mp4"),
  );
  truncated = head(clip, 100_000, "first-100kB.mp4");
  t = await startTestApp({ VSEARCH_RATE_LIMIT_UPLOAD: "1000" }, { models: fixedCatalog({ "image-text": tinyClip }) });
  await t.app.start();
  a = await createKeyTenant(t);
  col = (await json(await t.request("POST", "/v1/collections", { token: a.key, json: { name: "damaged" } }))).data.id;
}, 120_000);
afterAll(() => t?.close());

const video = async (id: string) => (await json(await t.request("GET", `/v1/videos/${id}`, { token: a.key }))).data;

describe("a truncated file is indexed as far as it decodes", () => {
  test("the first 100 kB of a 10 s MP4: ready, searchable up to where the data ends, with the warning", async () => {
    const up = await uploadAndWait(t, a, col, truncated);
    expect(up.job.status, JSON.stringify(up.job.error)).toBe("done");
    const v = await video(up.video_id);
    expect(v.status).toBe("ready");
    expect(v.warning).toMatch(/^partial: decoded 0:00–0:0[2-4] of 0:10$/);
    expect(v.duration_secs).toBeGreaterThan(1.5);
    expect(v.duration_secs).toBeLessThan(4.5);
    expect(v.stages.probe.reason).toBe(v.warning);
    expect(v.stages.frames.status).toBe("ran");
    expect(v.stages.frames.count).toBeGreaterThanOrEqual(2);
    expect(v.thumbnail_url).not.toBeNull();
    // The list shows the warning too (the dashboard's video cards read it there).
    const listed = (await json(await t.request("GET", `/v1/videos?collection_id=${col}`, { token: a.key }))).data;
    expect(listed.find((x: any) => x.id === up.video_id).warning).toBe(v.warning);
  }, 120_000);

  test("a truncated Matroska file, whose seeks fail without their index, gets thumbnails by decoding", async () => {
    const mkv = join(dir, "full.mkv");
    await ffmpeg(["-i", clip, "-c", "copy"], mkv);
    const up = await uploadAndWait(t, a, col, head(mkv, 100_000, "first-100kB.mkv"));
    expect(up.job.status, JSON.stringify(up.job.error)).toBe("done");
    const v = await video(up.video_id);
    expect(v.warning).toMatch(/^partial: decoded 0:00–0:0\d of 0:10$/);
    expect(v.thumbnail_url).not.toBeNull();
    expect(v.stages.thumbnails.count).toBeGreaterThanOrEqual(1);
  }, 120_000);

  test("a complete file has no warning; a file with no decodable frame still fails", async () => {
    const whole = await uploadAndWait(t, a, col, clip);
    expect(whole.job.status).toBe("done");
    expect((await video(whole.video_id)).warning).toBeNull();
    // The index and no picture data at all: refused at the upload's sniff, nothing stored.
    const res = await upload(t, a, col, head(clip, 6_000, "index-only.mp4"));
    expect(res.status).toBe(415);
    expect((await json(res)).detail).toMatchObject({
      code: "UNSUPPORTED_FORMAT",
      message: expect.stringMatching(/decod/),
    });
  }, 120_000);
});

describe("readablePart (media/readable.ts)", () => {
  test("no false alarm on a complete file, nor on a video stream shorter than the audio", async () => {
    expect(await readablePart(bins, clip, 10)).toBeNull();
    const shortVideo = await ffmpeg(
      [
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=160x120:rate=10:duration=4",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=8",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-c:a",
        "aac",
      ],
      join(dir, "short-video.mp4"),
    );
    expect(await readablePart(bins, shortVideo, 8)).toBeNull();
    const p = await readablePart(bins, truncated, 10);
    expect(p?.claimedSecs).toBe(10);
    expect(p!.endSecs).toBeGreaterThan(1.5);
    expect(p!.endSecs).toBeLessThan(4.5);
  }, 60_000);
});
