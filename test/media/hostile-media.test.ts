import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { encodeTimeoutMs, scanTimeline } from "../../src/media/bounds.ts";
import { createKeyTenant, json, type Tenant } from "../helpers/app.ts";
import { scratchDir } from "../helpers/ffmpeg.ts";
import { pngMov, timestampGapMkv } from "../helpers/hostile-media.ts";
import { mediaBins } from "../helpers/media.ts";
import { startTestServer, type TestServer } from "../helpers/server.ts";
import { collection, waitForRendition } from "../playback/helpers.ts";

/**
 * Issue 21's hostile files, made in setup, sent through real HTTP on a real socket:
 * - a 1.3 MB MOV of 12000×12000 PNG frames (144 megapixels: 4.6 GB in a rendition ffmpeg before
 *   max_video_pixels) is refused at upload with 415 VIDEO_TOO_LARGE, whether its container says
 *   so or claims 320×240, and leaves no video, job or file behind;
 * - a 49-frame MKV whose last frame is at t = 100 000 s (its rendition ran 27+ minutes under a
 *   timeout of 4.6 days) is indexed and gets its rendition from its 49 real frames, keeping the
 *   frame times, within a minute; its encode timeout is computed from those frames.
 */
let s: TestServer;
let a: Tenant;
let col: string;
const media = scratchDir("hostile-media");

beforeAll(async () => {
  s = await startTestServer({
    VSEARCH_RATE_LIMIT_VIDEOS: "100000",
    VSEARCH_RATE_LIMIT_JOBS: "100000",
    VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  });
  await s.app.start();
  a = await createKeyTenant(s, "A");
  col = await collection(s, a);
}, 60_000);
afterAll(() => s?.close());

function uploadFile(path: string): Promise<Response> {
  const fd = new FormData();
  fd.append("collection_id", col);
  fd.append("file", Bun.file(path), path.split("/").pop());
  return s.http("/v1/upload", { method: "POST", token: a.key, body: fd });
}

/** Files under the data dir's videos folder (each accepted upload has one there). */
const storedFiles = () => {
  const dir = join(s.dir, "videos");
  return existsSync(dir) ? readdirSync(dir, { recursive: true }).length : 0;
};

describe("frames over max_video_pixels", () => {
  test.each([
    ["as its container declares", undefined],
    ["while its container claims 320×240", [320, 240] as [number, number]],
  ])(
    "a 12000×12000 PNG-in-MOV is refused at upload (415 VIDEO_TOO_LARGE) %s; nothing is kept",
    async (_, declared) => {
      const name = declared ? "liar" : "huge";
      const file = await pngMov(media, name, [[12000, 12000]], declared);
      expect(statSync(file).size).toBeLessThan(4 * 1024 * 1024); // small on disk, 432 MB a decoded frame
      const before = storedFiles();
      const res = await uploadFile(file);
      expect(res.status).toBe(415);
      const body = await json(res);
      expect(body.detail.code).toBe("VIDEO_TOO_LARGE");
      expect(body.detail.message).toContain("12000×12000");
      expect(body.detail.message).toContain("max_video_pixels");
      const list = await json(await s.http(`/v1/videos?collection_id=${col}`, { token: a.key }));
      expect(list.data.filter((v: { filename: string }) => v.filename === `${name}.mov`)).toEqual([]);
      expect(storedFiles()).toBe(before);
    },
    120_000,
  );

  test("the same picture under the bound is a video like any other (the refusal is the bound, not the format)", async () => {
    const file = await pngMov(media, "small", [
      [640, 480],
      [640, 480],
    ]);
    const res = await uploadFile(file);
    expect(res.status).toBe(202);
  }, 60_000);
});

describe("a timestamp gap of 100 000 s", () => {
  let gap: string;
  beforeAll(async () => {
    gap = await timestampGapMkv(media);
  }, 60_000);

  test("the encode budget comes from the file's 49 frames, not from its 27-hour span", async () => {
    const line = await scanTimeline(mediaBins(), gap);
    expect(line.frames).toBe(49);
    expect(line.lastSecs).toBeGreaterThan(99_999);
    expect(line.maxGapSecs).toBeGreaterThan(99_990);
    // 49 frames of 320×240: well under two minutes (the span-based formula allowed 4.6 days).
    expect(encodeTimeoutMs(line.frames, 320 * 240)).toBeLessThan(120_000);
  }, 60_000);

  test("uploaded through HTTP, it is indexed and its rendition is encoded from its 49 frames, keeping their times", async () => {
    const res = await uploadFile(gap);
    expect(res.status).toBe(202);
    const { data } = await json(res);
    // Without -vsync vfr the rendition is 2.5 million duplicated frames (hours): this waits 2 minutes at most.
    const v = await waitForRendition(s, a, data.video_id, 120_000);
    expect(v.status).toBe("ready");
    expect(v.rendition).toMatchObject({ status: "ready", reason: expect.stringContaining("mkv") });
    const web = join(s.dir, "videos", data.video_id, "web.mp4");
    const line = await scanTimeline(mediaBins(), web);
    expect(line.frames).toBeLessThanOrEqual(49);
    expect(line.frames).toBeGreaterThanOrEqual(48);
    // The last frame is still at t ≈ 100 000 s: a search hit there plays the same moment in the rendition.
    expect(line.lastSecs).toBeGreaterThan(99_990);
    expect(statSync(web).size).toBeLessThan(2 * 1024 * 1024);
  }, 240_000);
});
