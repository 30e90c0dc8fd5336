import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClipModel } from "../../src/inference/clip.ts";
import { ClipQueryEmbedder, type QueryEmbedder } from "../../src/search/embedder.ts";
import { decodeImageRgb } from "../../src/search/image-input.ts";
import { ffmpeg, FFMPEG, scratchDir } from "../helpers/ffmpeg.ts";
import {
  addVideo,
  createCollection,
  createTenant,
  indexVideo,
  rng,
  search,
  type SearchTestApp,
  segmentsOf,
  startSearchApp,
  type Tenant,
  unit,
} from "./helpers.ts";

/**
 * Image queries with the real tiny CLIP (random weights, real code path): a query image must
 * find the frame that was embedded from the same picture, by upload (PNG, JPEG) and by URL.
 */
const CLIP_DIR = join(import.meta.dirname, "..", "fixtures", "models", "tiny-random-clip");
const TESTDATA = join(import.meta.dirname, "..", "fixtures", "testdata");
const SOURCES = [
  "testsrc",
  "smptebars",
  "mandelbrot",
  "rgbtestsrc",
  "color=c=red",
  "color=c=navy",
  "cellauto",
  "testsrc2",
  "yuvtestsrc",
  "pal100bars",
];

/** Counts model calls, to see the query-embedding cache at work. */
class Counting implements QueryEmbedder {
  texts = 0;
  constructor(private readonly inner: QueryEmbedder) {}
  available = () => this.inner.available();
  modelId = () => this.inner.modelId();
  embedText(t: string[]) {
    this.texts++;
    return this.inner.embedText(t);
  }
  embedImageRgb(rgb: Uint8Array) {
    return this.inner.embedImageRgb(rgb);
  }
}

let clip: ClipModel;
let embedder: Counting;
let t: SearchTestApp;
let a: Tenant;
let video: string;
const files: string[] = [];
let dir: string;
let pngBytes: (i: number) => Uint8Array<ArrayBuffer>;

beforeAll(async () => {
  dir = scratchDir("search-images");
  for (const [i, src] of SOURCES.entries()) {
    files.push(
      await ffmpeg(
        ["-f", "lavfi", "-i", `${src}${src.includes("=") ? ":" : "="}size=320x240`, "-frames:v", "1"],
        join(dir, `${i}.png`),
      ),
    );
  }
  files.push(join(TESTDATA, "astronaut.png"), join(TESTDATA, "chelsea.png"));
  pngBytes = (i) => Uint8Array.from(readFileSync(files[i]));

  clip = await ClipModel.load(CLIP_DIR, { dtype: "fp32" });
  embedder = new Counting(new ClipQueryEmbedder(clip));
  t = await startSearchApp({ embedder, env: { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8" } });
  a = await createTenant(t);
  const col = await createCollection(t, a.accountId, "Pictures");

  // One frame per picture, at t = 10 × index (apart: not one moment), embedded from the same
  // decoder the query path uses.
  video = await addVideo(t, a.accountId, col, { filename: "pictures.mp4", duration: 10 * files.length });
  const rgbs = [];
  for (const f of files) rgbs.push(await decodeImageRgb(FFMPEG, dir, Uint8Array.from(readFileSync(f)), "image"));
  const vectors = await clip.embedImages(rgbs.map((rgb) => ({ rgb, width: 224, height: 224 })));
  await indexVideo(t, video, {
    modelId: clip.id,
    frames: vectors.map((embedding, i) => ({ timestamp: 10 * i, shotIndex: i, embedding })),
  });

  // Unrelated footage of the same model, so the account's null sample is not just these pictures.
  const r = rng(3);
  const library = await addVideo(t, a.accountId, col, { filename: "library.mp4", duration: 300 });
  await indexVideo(t, library, {
    modelId: clip.id,
    frames: Array.from({ length: 300 }, (_, s) => ({
      timestamp: s,
      embedding: unit(Float32Array.from({ length: clip.dim }, () => r() - 0.5)),
    })),
  });
});

afterAll(async () => {
  await t?.close();
  await clip?.dispose();
});

const top = (body: any) => {
  const segs = segmentsOf(body).filter((s) => s.video_id === video);
  return segs.sort((x, y) => x.rank - y.rank)[0];
};

describe("image queries", () => {
  it("a PNG upload finds its own frame first", async () => {
    const i = files.length - 1; // chelsea.png
    const { res, body } = await search(
      t,
      a.key,
      { image: new Blob([pngBytes(i)], { type: "image/png" }), modes: "video" },
      "multipart",
    );
    expect(res.status).toBe(200);
    expect(body.meta.modes).toEqual(["video"]);
    expect(top(body)).toMatchObject({ timestamp_start: 10 * i, timestamp_end: 10 * i + 1, type: "frame" });
    expect(top(body).raw_score).toBeGreaterThan(0.999);
  });

  it("a JPEG upload (recompressed) finds its picture's frame first", async () => {
    const jpg = await ffmpeg(["-i", files[2], "-q:v", "3"], join(dir, "mandelbrot.jpg"));
    const bytes = Uint8Array.from(readFileSync(jpg));
    expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8]);
    const { res, body } = await search(t, a.key, { image: new Blob([bytes], { type: "image/jpeg" }) }, "multipart");
    expect(res.status).toBe(200);
    // No text: transcript was defaulted and skipped, the image ran against frames and shots.
    expect(body.meta.skipped_modes).toEqual({ transcript: "needs a text query", ocr: "needs a text query" });
    expect(top(body)).toMatchObject({ timestamp_start: 20 });
    expect(top(body).raw_score).toBeGreaterThan(0.95);
  });

  it("image_url: fetched from an allowed loopback server", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/astronaut.png")
          return new Response(pngBytes(files.length - 2), { headers: { "content-type": "image/png" } });
        if (path === "/moved") return new Response(null, { status: 302, headers: { location: "/astronaut.png" } });
        if (path === "/text") return new Response("hello, not an image");
        return new Response("nope", { status: 404 });
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const ok = await search(t, a.key, { image_url: `${base}/astronaut.png`, modes: "video" });
      expect(ok.res.status).toBe(200);
      expect(top(ok.body)).toMatchObject({ timestamp_start: 10 * (files.length - 2) });
      for (const [path, type] of [
        ["/moved", "url_redirect"],
        ["/missing", "url_status"],
        ["/text", "image_format"],
      ]) {
        const r = await search(t, a.key, { image_url: `${base}${path}`, modes: "video" });
        expect(r.res.status, path).toBe(422);
        expect(r.body.detail[0]).toMatchObject({ loc: ["body", "image_url"], type });
      }
      const bad = await search(t, a.key, { image_url: "ftp://127.0.0.1/x.png", modes: "video" });
      expect(bad.res.status).toBe(422);
      expect(bad.body.detail[0].loc).toEqual(["body", "image_url"]);
    } finally {
      await server.stop(true);
    }
  });

  it("image_url to loopback is refused by default, before any connection", async () => {
    let hits = 0;
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (hits++, new Response(pngBytes(0))) });
    const strict = await startSearchApp({ embedder });
    try {
      const c = await createTenant(strict);
      for (const url of [
        `http://127.0.0.1:${server.port}/x.png`,
        `http://localhost:${server.port}/x.png`,
        `http://[::ffff:127.0.0.1]:${server.port}/x.png`,
        "http://169.254.169.254/latest",
      ]) {
        const r = await search(strict, c.key, { image_url: url, modes: "video" });
        expect(r.res.status, url).toBe(422);
        expect(r.body.detail[0]).toMatchObject({ loc: ["body", "image_url"], type: "url_forbidden" });
      }
      expect(hits).toBe(0);
    } finally {
      await server.stop(true);
      await strict.close();
    }
  });

  it("bad images are 422s on `image`: not JPEG/PNG, too small, undecodable, over 10 MB; over the body cap is 413", async () => {
    const tiny = await ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=32x32", "-frames:v", "1"], join(dir, "tiny.png"));
    const broken = pngBytes(0).slice(0, 200); // a real PNG header, then nothing
    const cases: [Uint8Array<ArrayBuffer>, string][] = [
      [new TextEncoder().encode("GIF89a not really"), "image_format"],
      [Uint8Array.from(readFileSync(tiny)), "image_too_small"],
      [broken, "image_decode"],
      [new Uint8Array(10 * 1024 * 1024 + 1), "too_long"],
    ];
    for (const [bytes, type] of cases) {
      const r = await search(t, a.key, { image: new Blob([bytes]), modes: "video" }, "multipart");
      expect(r.res.status, type).toBe(422);
      expect(r.body.detail[0], type).toMatchObject({ loc: ["body", "image"], type });
    }
    const huge = await search(t, a.key, { image: new Blob([new Uint8Array(12 * 1024 * 1024)]) }, "multipart");
    expect(huge.res.status).toBe(413);
  });

  it("text queries go through the CLIP text tower once; repeats come from the cache", async () => {
    const before = embedder.texts;
    const first = await search(t, a.key, { query: "a photo of a cat", modes: "video" });
    expect(first.res.status).toBe(200);
    expect(embedder.texts).toBe(before + 1);
    await search(t, a.key, { query: "  A photo   of a CAT ", modes: ["video", "scene"] });
    expect(embedder.texts).toBe(before + 1);
    // Text and image together: one vector from both.
    const both = await search(
      t,
      a.key,
      { query: "cat", image: new Blob([pngBytes(files.length - 1)]), modes: "video" },
      "multipart",
    );
    expect(both.res.status).toBe(200);
  });
});
