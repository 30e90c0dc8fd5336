/**
 * Search passes `probe` to the vector index (search/probe-policy.ts: image-only and text queries
 * without a collection or label filter, unless the request asks for `exact`): through
 * the search service, on an account over the index's `trainAt` (lowered through the `vectorIndex`
 * option) whose lists were retrained in the background. The index is watched on a search domain
 * of its own over the app's database file, built as the app's is; the app's answer over HTTP is
 * checked against it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchDomain } from "../../src/search/domain.ts";
import type { SearchRequest } from "../../src/search/schema.ts";
import { ffmpeg, scratchDir } from "../helpers/ffmpeg.ts";
import {
  addVideo,
  background,
  concept,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  multipart,
  near,
  rng,
  searchDomainOf,
  searchRequest,
  type SearchTestApp,
  segmentsOf,
  startSearchApp,
  type Tenant,
} from "../search/helpers.ts";

const FRAMES = 20_000;
let t: SearchTestApp;
let a: Tenant;
let video: string;
let png: string;
let domain: SearchDomain;
const embedder = new HandEmbedder({ wall: concept(3) });
const VECTOR_INDEX = { trainAt: 4096, lists: 64, centerSample: 256 };

beforeAll(async () => {
  png = await ffmpeg(
    ["-f", "lavfi", "-i", "color=c=red:size=64x64", "-frames:v", "1"],
    join(scratchDir("app-probe"), "red.png"),
  );
  // The hand embedder maps any image to concept 14 and "wall" to concept 3.
  t = await startSearchApp({ embedder, vectorIndex: VECTOR_INDEX });
  a = await createTenant(t);
  video = await addVideo(t, a.accountId, await createCollection(t, a.accountId, "Clips"), { duration: FRAMES });
  const r = rng(5);
  const frames = Array.from({ length: FRAMES }, (_, i) => ({
    timestamp: i,
    embedding: i >= 5000 && i < 5004 ? near(14, 0.97, r) : i >= 9000 && i < 9004 ? near(3, 0.97, r) : background(r),
  }));
  await indexVideo(t, video, { frames });
  domain = searchDomainOf(t, { embedder, vectorIndex: VECTOR_INDEX });
}, 120_000);

afterAll(() => t?.close());

async function post(body: FormData) {
  const res = await t.request("POST", "/v1/search", { token: a.readOnlyKey, body });
  expect(res.status).toBe(200);
  return segmentsOf(await res.json()).sort((x: any, y: any) => x.rank - y.rank);
}
const imageBytes = () => Uint8Array.from(readFileSync(png));
const imageQuery = () => multipart({ image: new Blob([imageBytes()], { type: "image/png" }), modes: "video" }).body;
async function run(req: SearchRequest) {
  return segmentsOf({ data: (await domain.search.search(a.accountId, req)).videos }).sort(
    (x: any, y: any) => x.rank - y.rank,
  );
}

describe("searches probe the inverted lists", () => {
  it("passes probe for image and text queries once the account has lists, and none for `exact`", async () => {
    // First search loads the account into the index; that queues its retrain (background).
    const first = await run(searchRequest({ modes: "video" }, imageBytes()));
    expect(first[0].video_id).toBe(video);
    await domain.indexes.whenVectorIndexIdle();

    const best = await run(searchRequest({ modes: "video" }, imageBytes()));
    const info = domain.indexes.lastVectorSearch!;
    // 2.8 % at a million rows, the rows read growing as √n around it.
    expect(info.probe).toEqual({ share: 0.028, at: 1_000_000, inDistribution: true });
    // Only the lists nearest the query were read: ≥ 4 096 rows (the probe's floor), well under all.
    expect(info.scanned).toBeGreaterThanOrEqual(4096);
    expect(info.scanned).toBeLessThan(FRAMES / 2);
    expect(info.lists).toBeLessThan(40);
    expect(best[0].video_id).toBe(video);
    expect(best[0].timestamp_start).toBeLessThanOrEqual(5003);
    expect(best[0].timestamp_end).toBeGreaterThanOrEqual(5000);

    // A text query probes a larger share (issue 27): 30 % from a million rows, more below.
    const text = await run(searchRequest({ query: "a wall", modes: "video" }));
    const textInfo = domain.indexes.lastVectorSearch!;
    expect(textInfo.probe).toEqual({ share: 0.3, at: 1_000_000, growth: [0.9, 1] });
    expect(textInfo.scanned).toBeLessThan(FRAMES);
    expect(textInfo.scanned).toBeGreaterThan(4096);
    expect(text[0].timestamp_start).toBeLessThanOrEqual(9003);
    expect(text[0].timestamp_end).toBeGreaterThanOrEqual(9000);

    // `exact` reads every row, for text and image alike; so does a collection filter.
    for (const req of [
      searchRequest({ query: "a wall", modes: "video", exact: "true" }),
      searchRequest({ modes: "video", exact: "1" }, imageBytes()),
    ]) {
      const hits = await run(req);
      const exact = domain.indexes.lastVectorSearch!;
      expect(exact.probe).toBeUndefined();
      expect(exact.scanned).toBe(FRAMES);
      expect(hits[0].video_id).toBe(video);
    }

    // The app, over HTTP, finds the same moment for the same image (its own index, not yet retrained, scans every row).
    const viaHttp = await post(imageQuery());
    expect(viaHttp[0].video_id).toBe(video);
    expect(viaHttp[0].timestamp_start).toBeLessThanOrEqual(5003);
    expect(viaHttp[0].timestamp_end).toBeGreaterThanOrEqual(5000);
  }, 120_000);

  it("a one-video search reads that video's rows, not the account's, and follows a re-index", async () => {
    const small = await addVideo(t, a.accountId, await createCollection(t, a.accountId, "Short"), { duration: 300 });
    const r = rng(9);
    const framesOf = (wallAt: number) =>
      Array.from({ length: 300 }, (_, i) => ({
        timestamp: i,
        embedding: i >= wallAt && i < wallAt + 3 ? near(3, 0.97, r) : background(r),
      }));
    // This domain is the app's twin, not the app: it hears of the app's writes by the same hook.
    await indexVideo(t, small, { frames: framesOf(100) });
    await domain.indexes.onVideoIndexed(small);
    await domain.indexes.whenVectorIndexIdle();
    const scoped = async () => {
      const hits = await run(searchRequest({ query: "a wall", modes: "video", video_id: small }));
      const info = domain.indexes.lastVectorSearch!;
      // The chunks holding its 300 rows (random frames, so spread over up to ~64 lists' chunks), not the 20 300 of the account.
      expect(info.scanned).toBeGreaterThanOrEqual(300);
      expect(info.scanned).toBeLessThan(FRAMES / 4);
      expect(hits.length).toBeGreaterThan(0);
      for (const h of hits) expect(h.video_id).toBe(small);
      return hits;
    };
    const before = await scoped();
    expect(before[0].timestamp_start).toBeLessThanOrEqual(102);
    expect(before[0].timestamp_end).toBeGreaterThanOrEqual(100);
    // Re-indexing replaces the video's rows: the scoped search finds the new ones only.
    await indexVideo(t, small, { frames: framesOf(250) });
    await domain.indexes.onVideoIndexed(small);
    const after = await scoped();
    expect(after[0].timestamp_start).toBeLessThanOrEqual(252);
    expect(after[0].timestamp_end).toBeGreaterThanOrEqual(250);
    expect(after.some((h: any) => h.timestamp_start <= 102 && h.timestamp_end >= 100 && h.rank === 1)).toBe(false);
  }, 120_000);
});
