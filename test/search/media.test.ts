import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateSecret, UrlSigner } from "../../src/signing/url-signer.ts";
import {
  addVideo,
  concept,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  search,
  type SearchTestApp,
  segmentsOf,
  startSearchApp,
  type Tenant,
} from "./helpers.ts";

/** Presigned media: no Authorization, HMAC over path + expiry, byte ranges for seeking. */
const SIZE = 10_000;
const SOURCE = Uint8Array.from({ length: SIZE }, (_, i) => (i * 7) % 256);
const JPEG = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 300 }, (_, i) => i % 200), 0xff, 0xd9]);

let t: SearchTestApp;
let a: Tenant;
let vid: string;
let playback: string;
/** Signs as the app does: its secret from the data dir, its link lifetime, its clock (a link for any path, known or not). */
let signer: UrlSigner;

/** The path + query of a presigned URL (app.fetch needs no host), fragment dropped. */
const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};
const get = (url: string, headers: Record<string, string> = {}, method = "GET") =>
  t.request(method, local(url), { headers });
const bytes = async (res: Response) => new Uint8Array(await res.arrayBuffer());

beforeAll(async () => {
  t = await startSearchApp({ embedder: new HandEmbedder({ red: concept(0) }) });
  signer = new UrlSigner(
    loadOrCreateSecret(join(t.dir, "secret.key")),
    () => "http://localhost",
    t.config.presignTtlSecs,
    () => t.clock.now,
  );
  a = await createTenant(t);
  const col = await createCollection(t, a.accountId, "Media");
  vid = await addVideo(t, a.accountId, col, { bytes: SOURCE, mime: "video/webm", ext: "webm", duration: 10 });
  const dir = join(t.dir, "videos", vid);
  writeFileSync(join(dir, "poster.jpg"), JPEG);
  writeFileSync(join(dir, "shots", "0.jpg"), JPEG);
  await t.stores.videos.update(vid, { poster_path: `videos/${vid}/poster.jpg` });
  await indexVideo(t, vid, {
    frames: [{ timestamp: 1, embedding: concept(0) }],
    shots: [{ shotIndex: 0, start: 0, end: 10, thumbnailPath: `videos/${vid}/shots/0.jpg`, embedding: concept(0) }],
  });
  const res = await t.request("GET", `/v1/videos/${vid}`, { token: a.key });
  playback = (await res.json()).data.playback_url;
});

afterAll(async () => t?.close());

describe("presigned playback", () => {
  it("whole file: 200 with Accept-Ranges, Content-Length and the video's MIME type, no Authorization needed", async () => {
    expect(playback).toMatch(new RegExp(`/media/videos/${vid}/source\\?expires=\\d+&signature=[0-9a-f]{64}$`));
    const res = await get(playback);
    expect(res.status).toBe(200);
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(res.headers.get("content-type")).toBe("video/webm");
    expect(res.headers.get("content-length")).toBe(String(SIZE));
    expect(await bytes(res)).toEqual(SOURCE);
  });

  it("byte ranges: closed, open, suffix, clamped; 206 with Content-Range", async () => {
    const cases: [string, number, number][] = [
      ["bytes=0-99", 0, 99],
      ["bytes=9990-", 9990, 9999],
      ["bytes=-500", 9500, 9999],
      ["bytes=9000-20000", 9000, 9999],
      ["bytes=-20000", 0, 9999],
      ["bytes=1234-1234", 1234, 1234],
    ];
    for (const [range, start, end] of cases) {
      const res = await get(playback, { range });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("content-range"), range).toBe(`bytes ${start}-${end}/${SIZE}`);
      expect(res.headers.get("content-length"), range).toBe(String(end - start + 1));
      expect(res.headers.get("accept-ranges")).toBe("bytes");
      expect(await bytes(res), range).toEqual(SOURCE.slice(start, end + 1));
    }
  });

  it("unsatisfiable ranges are 416 with bytes */size; multi-range and malformed ranges get the whole file", async () => {
    for (const range of ["bytes=10000-", "bytes=20000-30000", "bytes=-0"]) {
      const res = await get(playback, { range });
      expect(res.status, range).toBe(416);
      expect(res.headers.get("content-range")).toBe(`bytes */${SIZE}`);
    }
    for (const range of ["bytes=0-1,5-6", "bytes=100-50", "items=0-5", "bytes=abc"]) {
      const res = await get(playback, { range });
      expect(res.status, range).toBe(200);
      expect((await bytes(res)).length).toBe(SIZE);
    }
  });

  it("HEAD answers the headers without a body", async () => {
    const res = await get(playback, {}, "HEAD");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(SIZE));
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it("wrong, missing, borrowed or expired signatures are 403 FORBIDDEN", async () => {
    const u = new URL(playback);
    const sig = u.searchParams.get("signature")!;
    const tampered = new URL(playback);
    tampered.searchParams.set("signature", `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`);
    const longer = new URL(playback);
    longer.searchParams.set("expires", String(Number(u.searchParams.get("expires")) + 3600));
    const noSig = new URL(playback);
    noSig.searchParams.delete("signature");
    const otherPath = new URL(playback.replace("/source", "/poster.jpg"));
    for (const bad of [tampered, longer, noSig, otherPath]) {
      const res = await get(bad.toString(), { authorization: `Bearer ${a.key}` });
      expect(res.status, bad.toString()).toBe(403);
      expect((await res.json()).detail.code).toBe("FORBIDDEN");
    }
    const saved = t.clock.now;
    t.clock.now += (t.config.presignTtlSecs + 5) * 1000;
    try {
      const res = await get(playback);
      expect(res.status).toBe(403);
      expect((await res.json()).detail).toMatchObject({ code: "FORBIDDEN", message: expect.stringMatching(/expired/) });
    } finally {
      t.clock.now = saved;
    }
  });

  it("a validly signed link to an unknown video is 404", async () => {
    const res = await get(signer.sign("/media/videos/vid_unknown000000000000/source"));
    expect(res.status).toBe(404);
    expect((await res.json()).detail.code).toBe("VIDEO_NOT_FOUND");
  });
});

describe("thumbnails", () => {
  it("search results carry a presigned shot thumbnail (and base64 when asked); the poster is served too", async () => {
    const { body } = await search(t, a.key, { query: "red", modes: "video", include_thumbnail_base64: "true" });
    const seg = segmentsOf(body)[0];
    expect(seg.thumbnail_url).toMatch(
      new RegExp(`/media/videos/${vid}/shots/0\\.jpg\\?expires=\\d+&signature=[0-9a-f]{64}$`),
    );
    expect(seg.thumbnail_base64).toBe(Buffer.from(JPEG).toString("base64"));
    const thumb = await get(seg.thumbnail_url);
    expect(thumb.status).toBe(200);
    expect(thumb.headers.get("content-type")).toBe("image/jpeg");
    expect(await bytes(thumb)).toEqual(JPEG);

    // The segment's video_url is the playback link with the clip as a media fragment, and seeks.
    expect(seg.video_url).toMatch(/#t=1,2$/);
    const part = await get(seg.video_url.replace(/#.*$/, ""), { range: "bytes=0-9" });
    expect(part.status).toBe(206);

    const noBase64 = segmentsOf((await search(t, a.key, { query: "red", modes: "video" })).body)[0];
    expect(noBase64.thumbnail_base64).toBeUndefined();

    const video = (await (await t.request("GET", `/v1/videos/${vid}`, { token: a.key })).json()).data;
    const poster = await get(video.thumbnail_url);
    expect(poster.status).toBe(200);
    expect(poster.headers.get("content-type")).toBe("image/jpeg");
    expect(await bytes(poster)).toEqual(JPEG);
  });

  it("a shot without a thumbnail file, or a bad file name, is 404", async () => {
    expect((await get(signer.sign(`/media/videos/${vid}/shots/7.jpg`))).status).toBe(404);
    expect((await get(signer.sign(`/media/videos/${vid}/shots/x.jpg`))).status).toBe(404);
  });

  it("once the video is deleted its links are 404", async () => {
    const col = await createCollection(t, a.accountId, "Gone");
    const gone = await addVideo(t, a.accountId, col, { bytes: SOURCE });
    const link = signer.sign(`/media/videos/${gone}/source`);
    expect((await get(link)).status).toBe(200);
    expect((await t.request("DELETE", `/v1/videos/${gone}`, { token: a.key })).status).toBe(204);
    expect((await get(link)).status).toBe(404);
  });
});
