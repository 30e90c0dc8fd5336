import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApp } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { probeMedia } from "../../src/media/index.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import { mediaBins } from "../helpers/media.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { collection, makeFormat, type Requester, uploadAndIndex, waitForRendition } from "./helpers.ts";

const ENV = { VSEARCH_RATE_LIMIT_VIDEOS: "100000", VSEARCH_RATE_LIMIT_JOBS: "100000" };
const media = scratchDir("renditions");
const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

/** Index of the first top-level box of this type in an MP4, or -1. */
function topLevelBox(bytes: Uint8Array, type: string): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let off = 0, i = 0; off + 8 <= bytes.length && i < 64; i++) {
    const size = view.getUint32(off);
    if (new TextDecoder().decode(bytes.subarray(off + 4, off + 8)) === type) return off;
    if (size < 8) return -1;
    off += size;
  }
  return -1;
}

describe("web renditions", () => {
  let t: TestApp;
  let a: Tenant;
  let col: string;
  let avi: string;
  let control: string;
  beforeAll(async () => {
    [avi, control] = await Promise.all([makeFormat(media, "mpeg4-avi"), makeFormat(media, "h264-mp4")]);
    // The tiny CLIP model: so a search finds the video and its video_url can be checked.
    t = await startTestApp(
      { ...ENV, VSEARCH_RATE_LIMIT_SEARCH: "100000" },
      { models: fixedCatalog({ "image-text": tinyClip }) },
    );
    await t.app.start();
    a = await createTenant(t);
    col = await collection(t, a);
  });
  afterAll(() => t.close());

  test("an MPEG-4 Part 2 AVI gets an H.264 + AAC faststart MP4, no larger than the source frame; playback_url points at it", async () => {
    const id = await uploadAndIndex(t, a, col, avi);
    const v = await waitForRendition(t, a, id);
    expect(v.rendition).toMatchObject({ status: "ready", reason: expect.stringContaining("avi container") });
    expect(v.has_web_rendition).toBe(true);
    expect(v.playback_url).toContain(`/media/videos/${id}/web.mp4?`);
    expect(v.rendition.size_bytes).toBeGreaterThan(1000);
    expect(v.rendition.size_bytes).toBeLessThanOrEqual(v.file_size_bytes);

    const file = join(t.dir, "videos", id, "web.mp4");
    const info = await probeMedia(mediaBins(), file);
    expect(info).toMatchObject({
      container: "mp4",
      videoCodec: "h264",
      audioCodec: "aac",
      pixFmt: "yuv420p",
      width: 320,
      height: 240,
    });
    expect(info.durationSecs).toBeCloseTo(2, 0);
    const bytes = new Uint8Array(await Bun.file(file).arrayBuffer());
    const moov = topLevelBox(bytes, "moov");
    const mdat = topLevelBox(bytes, "mdat");
    expect(moov).toBeGreaterThan(0);
    expect(moov).toBeLessThan(mdat); // +faststart: the index comes first

    // Served with byte ranges, as players seek.
    const range = await t.request("GET", pathOf(v.playback_url), { headers: { range: "bytes=0-99" } });
    expect(range.status).toBe(206);
    expect(range.headers.get("content-type")).toBe("video/mp4");
    expect(range.headers.get("content-range")).toBe(`bytes 0-99/${bytes.length}`);
    expect((await range.arrayBuffer()).byteLength).toBe(100);
    // A link to the rendition signed for another video's path does not open it.
    const forged = pathOf(v.playback_url).replace(id, "vid_someoneElse1");
    expect((await t.request("GET", forged)).status).toBe(403);
    // The record keeps the source's own facts.
    expect(v.codec).toBe("mpeg4");

    // Search results point at the rendition, with the moment's fragment.
    const fd = new FormData();
    fd.append("query", "colour bars");
    fd.append("collection_id", col);
    fd.append("min_score", "0");
    const found = await json(await t.request("POST", "/v1/search", { token: a.key, body: fd }));
    const mine = found.data.find((r: any) => r.video_id === id);
    expect(mine.segments.length).toBeGreaterThan(0);
    for (const seg of mine.segments)
      expect(seg.video_url).toMatch(
        new RegExp(`/media/videos/${id}/web\\.mp4\\?expires=\\d+&signature=[0-9a-f]+#t=[\\d.]+,[\\d.]+$`),
      );
  });

  test("a browser-playable H.264 MP4 is served as it is", async () => {
    const id = await uploadAndIndex(t, a, col, control);
    const v = await waitForRendition(t, a, id);
    expect(v.rendition).toMatchObject({ status: "not_needed", size_bytes: null });
    expect(v.has_web_rendition).toBe(false);
    expect(v.playback_url).toContain(`/media/videos/${id}/source?`);
    expect(existsSync(join(t.dir, "videos", id, "web.mp4"))).toBe(false);
  });

  test("deleting a video removes its rendition and cached clips", async () => {
    const id = await uploadAndIndex(t, a, col, avi);
    await waitForRendition(t, a, id);
    const clip = await t.request("GET", `/v1/videos/${id}/clip?start=0&end=1`, { token: a.key });
    expect(clip.status).toBe(200);
    expect(existsSync(join(t.dir, "videos", id, "web.mp4"))).toBe(true);
    expect(existsSync(join(t.dir, "videos", id, "clips", "0-1000.mp4"))).toBe(true);
    expect((await t.request("DELETE", `/v1/videos/${id}`, { token: a.key })).status).toBe(204);
    expect(existsSync(join(t.dir, "videos", id))).toBe(false);
  });
});

describe("the rendition queue survives a restart", () => {
  test("a server stopped while a rendition is queued or encoding finishes it after the next start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vsearch-rendition-restart-"));
    // Long enough that the encode is still running when the first server stops.
    const long = await ffmpeg(
      ["-f", "lavfi", "-i", "testsrc2=size=640x480:rate=25:duration=20", "-c:v", "mpeg4", "-q:v", "3", "-an"],
      join(media, "long.avi"),
    );
    const open = async () => {
      const config = loadConfig({ dataDir: dir, logLevel: "silent" }, ENV);
      return createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent") });
    };
    /** TestApp's request(), on whichever app is running now. */
    const via = (app: Awaited<ReturnType<typeof open>>): Requester => ({
      request: async (method, path, o = {}) => {
        const headers: Record<string, string> = { ...o.headers };
        if (o.token) headers.authorization = `Bearer ${o.token}`;
        if (o.json !== undefined) headers["content-type"] = "application/json";
        return app.fetch(
          new Request(`http://localhost${path}`, {
            method,
            headers,
            body: o.json !== undefined ? JSON.stringify(o.json) : o.body,
          }),
        );
      },
    });
    try {
      let app = await open();
      await app.start();
      const account = await app.services.accounts.createAccount({ name: "R", plan: "enterprise" });
      const tenant = { key: (await app.services.apiKeys.create(account.id, { name: "k", permissions: "all" })).key };
      const id = await uploadAndIndex(via(app), tenant, await collection(via(app), tenant), long);
      const before = (await json(await via(app).request("GET", `/v1/videos/${id}`, { token: tenant.key }))).data;
      expect(["pending", "processing"]).toContain(before.rendition.status);
      expect(before.playback_url).toContain("/source?"); // searchable already; the source plays meanwhile
      await app.close();

      app = await open();
      await app.start();
      const v = await waitForRendition(via(app), tenant, id);
      expect(v.rendition.status).toBe("ready");
      expect(v.playback_url).toContain("/web.mp4?");
      expect(existsSync(join(dir, "videos", id, "web.mp4.tmp"))).toBe(false);
      await app.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
