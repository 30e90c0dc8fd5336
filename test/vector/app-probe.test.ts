/**
 * The app passes `probe` to the vector index for image-only queries (and only for them): through
 * HTTP and the search service, an account over the index's `trainAt` (lowered through the app's
 * `vectorIndex` option) whose lists were retrained in the background.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import {
  addVideo, background, concept, createCollection, createTenant, HandEmbedder, indexVideo, multipart, near, rng, type SearchTestApp, segmentsOf,
  startSearchApp, type Tenant,
} from "../search/helpers.ts";

const FRAMES = 20_000;
let t: SearchTestApp;
let a: Tenant;
let video: string;
let png: string;

beforeAll(async () => {
  png = await ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=64x64", "-frames:v", "1"], join(scratchDir("app-probe"), "red.png"));
  // The hand embedder maps any image to concept 14 and "wall" to concept 3.
  t = await startSearchApp({ embedder: new HandEmbedder({ wall: concept(3) }), vectorIndex: { trainAt: 4096, lists: 64, centerSample: 256 } });
  a = createTenant(t);
  video = addVideo(t, a.accountId, createCollection(t, a.accountId, "Clips"), { duration: FRAMES });
  const r = rng(5);
  const frames = Array.from({ length: FRAMES }, (_, i) => ({
    timestamp: i,
    embedding: i >= 5000 && i < 5004 ? near(14, 0.97, r) : i >= 9000 && i < 9004 ? near(3, 0.97, r) : background(r),
  }));
  indexVideo(t, video, { frames });
}, 120_000);

afterAll(() => t?.close());

async function post(body: FormData) {
  const res = await t.request("POST", "/v1/search", { token: a.readOnlyKey, body });
  expect(res.status).toBe(200);
  return segmentsOf(await res.json()).sort((x: any, y: any) => x.rank - y.rank);
}
const imageQuery = () => multipart({ image: new Blob([Uint8Array.from(readFileSync(png))], { type: "image/png" }), modes: "video" }).body;

describe("image-only searches probe the inverted lists", () => {
  it("passes probe for an image query once the account has lists, and not for text", async () => {
    // First search loads the account into the index; that queues its retrain (background).
    const first = await post(imageQuery());
    expect(first[0].video_id).toBe(video);
    await t.app.internals.search.indexes.whenVectorIndexIdle();

    const best = await post(imageQuery());
    const info = t.app.internals.search.indexes.lastVectorSearch!;
    expect(info.probe).toBe(0.04);
    // Only the lists nearest the query were read: ≥ 4 096 rows (the probe's floor), well under all.
    expect(info.scanned).toBeGreaterThanOrEqual(4096);
    expect(info.scanned).toBeLessThan(FRAMES / 2);
    expect(info.lists).toBeLessThan(40);
    expect(best[0].video_id).toBe(video);
    expect(best[0].timestamp_start).toBeLessThanOrEqual(5003);
    expect(best[0].timestamp_end).toBeGreaterThanOrEqual(5000);

    const text = await post(multipart({ query: "a wall", modes: "video" }).body);
    const textInfo = t.app.internals.search.indexes.lastVectorSearch!;
    expect(textInfo.probe).toBeUndefined();
    expect(textInfo.scanned).toBe(FRAMES);
    expect(text[0].timestamp_start).toBeLessThanOrEqual(9003);
    expect(text[0].timestamp_end).toBeGreaterThanOrEqual(9000);
  }, 120_000);
});
