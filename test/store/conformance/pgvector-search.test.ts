/**
 * `vector_backend = "pgvector"` (issue 25): nearest neighbours asked of PostgreSQL. Two apps on this
 * file's PostgreSQL database — one with the in-memory index, one with pgvector — answer the same
 * searches through HTTP: account A holds more rows than the backend scans exactly (its HNSW path),
 * its collections and videos fewer (exact scans in the database). The backend itself, on its HNSW
 * path for every scope (exactScanMax 0), must keep every scope — no other account's, collection's
 * or video's row, even when those are the nearest — and its recall against the exact answer is
 * measured and printed; only a loose floor is asserted. Rows are written through IndexStore on an
 * executor of this file's database, as the pipeline writes them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexStore } from "../../../src/indexing/store.ts";
import { PgVectorBackend } from "../../../src/search/pgvector-backend.ts";
import { PgVectorStore } from "../../../src/search/pgvector-store.ts";
import { SearchStore } from "../../../src/search/store.ts";
import type { Executor } from "../../../src/store/executor.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import { createKeyTenant, startTestApp, type TestApp, type Tenant } from "../../helpers/app.ts";
import { until } from "../../helpers/wait.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import {
  background,
  concept,
  HAND_MODEL,
  HandEmbedder,
  near,
  rng,
  search,
  segmentsOf,
  unit,
} from "../../search/helpers.ts";
import { openPg } from "./backends.ts";

const RED = 0;
const BEACH = 1;
/** Frames per video: A's three videos (6 000 rows) pass the backend's exact-scan bound (5 000), each collection stays under it. */
const FRAMES = 2000;

interface Corpus {
  a: Tenant;
  b: Tenant;
  trips: string;
  home: string;
  /** A's videos: red moments in v1 (trips) and v2 (home); v3 (trips) has a beach moment. */
  v1: string;
  v2: string;
  v3: string;
  /** B's video: frames closer to "red" than any of A's (the scope filter must drop them). */
  vb: string;
}

const embedder = () => new HandEmbedder({ red: concept(RED), beach: concept(BEACH) });

async function addReadyVideo(t: TestApp, exec: Executor, accountId: string, collectionId: string): Promise<string> {
  const path = `${t.dir}/upload-${Math.random().toString(36).slice(2)}.bin`;
  await Bun.write(
    path,
    Uint8Array.from({ length: 1024 }, (_, i) => i % 251),
  );
  const { video_id } = await t.app.services.videos.createFromUpload({
    accountId,
    collectionId,
    filename: "clip.mp4",
    tempFile: path,
    ext: "mp4",
    container: "mp4",
    mimeType: "video/mp4",
    sizeBytes: 1024,
  });
  await new VideoStore(exec).update(video_id, { status: "ready", progress_pct: 100, duration_secs: FRAMES });
  return video_id;
}

/** Background frames with `strong` (second → cos to `conceptIdx`) planted. */
function frames(r: () => number, conceptIdx: number, strong: Record<number, number>): Float32Array[] {
  return Array.from({ length: FRAMES }, (_, s) => (strong[s] ? near(conceptIdx, strong[s], r) : background(r)));
}

async function buildCorpus(t: TestApp, exec: Executor): Promise<Corpus> {
  const a = await createKeyTenant(t, "A");
  const b = await createKeyTenant(t, "B");
  const col = async (acc: string, name: string) => (await t.app.services.collections.create(acc, { name })).id;
  const trips = await col(a.accountId, "Trips");
  const home = await col(a.accountId, "Home");
  const bcol = await col(b.accountId, "B's");
  const index = new IndexStore(exec, false);
  const r = rng(11);
  const add = async (accountId: string, collectionId: string, vectors: Float32Array[]) => {
    const videoId = await addReadyVideo(t, exec, accountId, collectionId);
    await index.replaceFrames(
      { accountId, collectionId, videoId },
      vectors.map((embedding, i) => ({ shotIndex: Math.floor(i / 10), timestamp: i, embedding })),
      HAND_MODEL,
    );
    return videoId;
  };
  const v1 = await add(a.accountId, trips, frames(r, RED, { 40: 0.9, 41: 0.92, 42: 0.9, 120: 0.95 }));
  const v2 = await add(a.accountId, home, frames(r, RED, { 7: 0.97, 8: 0.96, 200: 0.88 }));
  const v3 = await add(a.accountId, trips, frames(r, BEACH, { 50: 0.9, 51: 0.93 }));
  const vb = await add(b.accountId, bcol, frames(r, RED, { 1: 0.999, 2: 0.999, 3: 0.998, 4: 0.999 }));
  return { a, b, trips, home, v1, v2, v3, vb };
}

const topOf = (body: unknown, n: number) =>
  segmentsOf(body)
    .sort(
      (x, y) =>
        y.raw_score - x.raw_score || x.video_id.localeCompare(y.video_id) || x.timestamp_start - y.timestamp_start,
    )
    .slice(0, n)
    .map((s) => `${s.video_id}@${s.timestamp_start}-${s.timestamp_end}`);

describe.skipIf(!pgAvailable())("vector_backend = pgvector", () => {
  let pgApp: TestApp;
  let memApp: TestApp;
  let exec: Executor;
  let c: Corpus;

  beforeAll(async () => {
    const env = { VSEARCH_DATABASE_URL: pgTest().url, VSEARCH_RATE_LIMIT_SEARCH: "100000" };
    pgApp = await startTestApp({ ...env, VSEARCH_VECTOR_BACKEND: "pgvector" }, { queryEmbedder: embedder() });
    // One database, one cluster secret: the second server mounts the first's media root (its secret with it).
    memApp = await startTestApp({ ...env, VSEARCH_MEDIA_ROOT: pgApp.dir }, { queryEmbedder: embedder() });
    exec = (await openPg()).exec;
    c = await buildCorpus(pgApp, exec);
  });

  afterAll(async () => {
    await pgApp?.close();
    await memApp?.close();
  });

  it("is what the app searches with, and /readyz says so (no in-memory index to load)", async () => {
    const ready = (await (await pgApp.request("GET", "/readyz")).json()) as { checks: Record<string, string> };
    expect(ready.checks.search_index).toBe("pgvector: HNSW indexes in PostgreSQL (no in-memory index, no warm-up)");
    const memReady = (await (await memApp.request("GET", "/readyz")).json()) as { checks: Record<string, string> };
    expect(memReady.checks.search_index).not.toMatch(/pgvector/);
  });

  it("answers the same top moments as the in-memory index, through HTTP (HNSW for the account, exact for a collection or video)", async () => {
    for (const fields of [
      { query: "red", modes: "video" },
      { query: "red", modes: "video", collection_id: c.trips },
      { query: "red", modes: "video", collection_id: c.home },
      { query: "red", modes: "video", video_id: c.v2 },
      { query: "beach", modes: "video" },
    ]) {
      const viaPg = await search(pgApp as never, c.a.key, fields);
      const viaMem = await search(memApp as never, c.a.key, fields);
      expect(viaPg.res.status).toBe(200);
      expect(viaMem.res.status).toBe(200);
      const top = topOf(viaPg.body, 3);
      expect(top.length).toBeGreaterThan(0);
      expect(top).toEqual(topOf(viaMem.body, 3));
      // Never a row of B's (nearer to "red" than any of A's).
      expect(segmentsOf(viaPg.body).some((s) => s.video_id === c.vb)).toBe(false);
    }
    expect((await search(pgApp as never, c.a.key, { query: "red", modes: "video", video_id: c.vb })).res.status).toBe(
      404,
    );
  });

  describe("the backend on its HNSW path for every scope (exactScanMax 0)", () => {
    let backend: PgVectorBackend;
    let pg: PgVectorStore;

    beforeAll(async () => {
      pg = new PgVectorStore(exec);
      backend = new PgVectorBackend(new SearchStore(exec), pg, { exactScanMax: 0 });
      // A newly indexed video's dimension gets its index (here 64, the hand-made vectors), if the app has not made it yet.
      await backend.onVideoIndexed(c.v1);
      await backend.whenIdle();
      // The app's first search may have started the build already (then ours was a no-op): wait for it to be usable.
      expect(await until(async () => (await backend.indexes()).every((i) => i.valid), 60_000, 100)).toBe(true);
    });

    it("one valid HNSW index per dimension, and the filtered look-up plans through it", async () => {
      expect(await backend.indexes()).toEqual([
        { name: "frame_vectors_hnsw_64", kind: "frames", dim: 64, valid: true, building: false },
      ]);
      const plan = await pg.explainHnsw("frames", { accountId: c.a.accountId }, HAND_MODEL, concept(RED));
      expect(plan).toContain("frame_vectors_hnsw_64");
    });

    it("keeps every scope: B's nearer rows never reach A; a collection or video scope holds", async () => {
      const search = new SearchStore(exec);
      const q = concept(RED);
      const nearest = (scope: { accountId: string; collectionId?: string; videoId?: string }, k = 50) =>
        backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k });
      const videosOf = async (hits: { id: number }[]) =>
        new Set((await search.frames(hits.map((h) => h.id))).map((f) => f.video_id));
      const inA = await nearest({ accountId: c.a.accountId });
      expect(inA).toHaveLength(50);
      expect([...(await videosOf(inA))].every((v) => [c.v1, c.v2, c.v3].includes(v))).toBe(true);
      // B's planted rows are the nearest of the table: B's own look-up finds them first.
      const inB = await nearest({ accountId: c.b.accountId }, 4);
      expect(inB.map((h) => h.raw.toFixed(2))).toEqual(["1.00", "1.00", "1.00", "1.00"]);
      expect(await videosOf(inB)).toEqual(new Set([c.vb]));
      const inTrips = await nearest({ accountId: c.a.accountId, collectionId: c.trips });
      expect(inTrips).toHaveLength(50);
      expect([...(await videosOf(inTrips))].every((v) => v === c.v1 || v === c.v3)).toBe(true);
      const inV2 = await nearest({ accountId: c.a.accountId, videoId: c.v2 }, 10);
      expect(await videosOf(inV2)).toEqual(new Set([c.v2]));
      // A video of another account inside A's scope finds nothing.
      expect(await nearest({ accountId: c.a.accountId, videoId: c.vb })).toEqual([]);
      // So does another model.
      expect(
        await backend.nearest({
          kind: "frames",
          scope: { accountId: c.a.accountId },
          modelId: "other@x",
          query: q,
          k: 5,
        }),
      ).toEqual([]);
    });

    it("recall@10 against the exact answer, measured (loose floor)", async () => {
      const r = rng(5);
      let found = 0,
        wanted = 0;
      for (let i = 0; i < 20; i++) {
        // Half near a concept (text-like: far from every frame), half background-like (near frames).
        const q = i % 2 ? unit(near(RED, 0.5, r)) : background(r);
        const scope = { accountId: c.a.accountId };
        const approx = await backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k: 10 });
        const exact = await pg.nearestExact("frames", scope, HAND_MODEL, q, 10, null);
        const truth = new Set(exact.map((h) => h.id));
        found += approx.filter((h) => truth.has(h.id)).length;
        wanted += truth.size;
      }
      const recall = found / wanted;
      console.log(`pgvector HNSW recall@10 over ${3 * FRAMES} rows of one account (64-d): ${recall.toFixed(3)}`);
      expect(recall).toBeGreaterThan(0.8);
    });
  });
});
