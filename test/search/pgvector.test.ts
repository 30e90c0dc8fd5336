/**
 * `vector_backend = "pgvector"` (issue 25): nearest neighbours asked of PostgreSQL. Two apps on one
 * PostgreSQL database — one with the in-memory index, one with pgvector — answer the same searches
 * through HTTP; then the pgvector app is made to take its HNSW path even for this small corpus
 * (exactScanMax 0), and must still keep every scope (no other account's, collection's or video's
 * row, even when those are the nearest) and find what the exact answer finds. Recall of the HNSW
 * path against the in-memory index is measured and printed; only a loose floor is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexStore } from "../../src/indexing/store.ts";
import { PgVectorBackend } from "../../src/search/pgvector-backend.ts";
import { PgVectorStore } from "../../src/search/pgvector-store.ts";
import { SearchStore } from "../../src/search/store.ts";
import type { Executor } from "../../src/store/executor.ts";
import { createKeyTenant, startTestApp, type TestApp, type Tenant } from "../helpers/app.ts";
import { pgTest } from "../pg/database.ts";
import { background, concept, HAND_MODEL, HandEmbedder, near, rng, search, segmentsOf, unit } from "./helpers.ts";

const RED = 0;
const BEACH = 1;
/** Frames per background video: with three videos per account, a few thousand rows in all. */
const FRAMES = 300;

interface Corpus {
  a: Tenant;
  b: Tenant;
  trips: string;
  home: string;
  /** A's videos: red moments in v1 (trips) and v2 (home); v3 is background only. */
  v1: string;
  v2: string;
  v3: string;
  /** B's video: frames closer to "red" than any of A's (the scope filter must drop them). */
  vb: string;
}

const embedder = () => new HandEmbedder({ red: concept(RED), beach: concept(BEACH) });

async function addReadyVideo(t: TestApp, accountId: string, collectionId: string, secs: number): Promise<string> {
  const s = t.app.services;
  const { video_id } = await s.videos.createFromUpload({
    accountId,
    collectionId,
    filename: "clip.mp4",
    tempFile: await tempBytes(t.dir),
    ext: "mp4",
    container: "mp4",
    mimeType: "video/mp4",
    sizeBytes: 1024,
  });
  await db(t).run(
    "UPDATE videos SET status = 'ready', progress_pct = 100, duration_secs = ? WHERE id = ?",
    secs,
    video_id,
  );
  return video_id;
}

async function tempBytes(dir: string): Promise<string> {
  const path = `${dir}/upload-${Math.random().toString(36).slice(2)}.bin`;
  await Bun.write(
    path,
    Uint8Array.from({ length: 1024 }, (_, i) => i % 251),
  );
  return path;
}

const db = (t: TestApp): Executor => (t.app as unknown as { internals: { db: Executor } }).internals.db;

async function writeFrames(
  t: TestApp,
  videoId: string,
  scope: { accountId: string; collectionId: string },
  frames: Float32Array[],
): Promise<void> {
  await new IndexStore(db(t), false).replaceFrames(
    { ...scope, videoId },
    frames.map((embedding, i) => ({ shotIndex: Math.floor(i / 10), timestamp: i, embedding })),
    HAND_MODEL,
  );
}

/** Background frames with `strong` (second → cos to `conceptIdx`) planted. */
function frames(r: () => number, n: number, conceptIdx: number, strong: Record<number, number>): Float32Array[] {
  return Array.from({ length: n }, (_, s) => (strong[s] ? near(conceptIdx, strong[s], r) : background(r)));
}

async function buildCorpus(t: TestApp): Promise<Corpus> {
  const a = await createKeyTenant(t, "A");
  const b = await createKeyTenant(t, "B");
  const col = async (acc: string, name: string) => (await t.app.services.collections.create(acc, { name })).id;
  const trips = await col(a.accountId, "Trips");
  const home = await col(a.accountId, "Home");
  const bcol = await col(b.accountId, "B's");
  const r = rng(11);
  const v1 = await addReadyVideo(t, a.accountId, trips, FRAMES);
  await writeFrames(
    t,
    v1,
    { accountId: a.accountId, collectionId: trips },
    frames(r, FRAMES, RED, { 40: 0.9, 41: 0.92, 42: 0.9, 120: 0.95 }),
  );
  const v2 = await addReadyVideo(t, a.accountId, home, FRAMES);
  await writeFrames(
    t,
    v2,
    { accountId: a.accountId, collectionId: home },
    frames(r, FRAMES, RED, { 7: 0.97, 8: 0.96, 200: 0.88 }),
  );
  const v3 = await addReadyVideo(t, a.accountId, trips, FRAMES);
  await writeFrames(t, v3, { accountId: a.accountId, collectionId: trips }, frames(r, FRAMES, BEACH, { 50: 0.9 }));
  const vb = await addReadyVideo(t, b.accountId, bcol, FRAMES);
  await writeFrames(
    t,
    vb,
    { accountId: b.accountId, collectionId: bcol },
    frames(r, FRAMES, RED, { 1: 0.999, 2: 0.999, 3: 0.998, 4: 0.999 }),
  );
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

describe("vector_backend = pgvector", () => {
  let pgApp: TestApp;
  let memApp: TestApp;
  let c: Corpus;

  beforeAll(async () => {
    const env = { VSEARCH_DATABASE_URL: pgTest().url, VSEARCH_RATE_LIMIT_SEARCH: "100000" };
    pgApp = await startTestApp({ ...env, VSEARCH_VECTOR_BACKEND: "pgvector" }, { queryEmbedder: embedder() });
    memApp = await startTestApp(env, { queryEmbedder: embedder() });
    c = await buildCorpus(pgApp);
  });

  afterAll(async () => {
    await pgApp?.close();
    await memApp?.close();
  });

  it("is what the app searches with, and /readyz says so (no in-memory index to load)", async () => {
    const indexes = (pgApp.app as unknown as { internals: { search: { indexes: { backendName: string } } } }).internals
      .search.indexes;
    expect(indexes.backendName).toBe("pgvector");
    const ready = (await (await pgApp.request("GET", "/readyz")).json()) as { checks: Record<string, string> };
    expect(ready.checks.search_index).toMatch(/^pgvector: HNSW/);
    const memReady = (await (await memApp.request("GET", "/readyz")).json()) as { checks: Record<string, string> };
    expect(memReady.checks.search_index).not.toMatch(/pgvector/);
  });

  it("answers the same top moments as the in-memory index (small scopes: exact in PostgreSQL)", async () => {
    for (const fields of [
      { query: "red", modes: "video" },
      { query: "red", modes: "video", collection_id: c.trips },
      { query: "red", modes: "video", video_id: c.v2 },
      { query: "beach", modes: "video" },
    ]) {
      const viaPg = await search(pgApp as never, c.a.key, fields);
      const viaMem = await search(memApp as never, c.a.key, fields);
      expect(viaPg.res.status).toBe(200);
      expect(viaMem.res.status).toBe(200);
      const top = topOf(viaPg.body, 5);
      expect(top.length).toBeGreaterThan(0);
      expect(top).toEqual(topOf(viaMem.body, 5));
    }
  });

  describe("the HNSW path (exactScanMax 0)", () => {
    let backend: PgVectorBackend;
    let pg: PgVectorStore;

    beforeAll(async () => {
      const exec = db(pgApp);
      pg = new PgVectorStore(exec);
      backend = new PgVectorBackend(new SearchStore(exec), pg, { exactScanMax: 0 });
      // A newly indexed video's dimension gets its index (here: 64, the hand-made vectors).
      await backend.onVideoIndexed(c.v1);
      await backend.whenIdle();
      (
        pgApp.app as unknown as { internals: { search: { indexes: { useBackend(b: unknown): void } } } }
      ).internals.search.indexes.useBackend(backend);
    });

    it("builds one valid HNSW index per dimension, and the filtered look-up plans through it", async () => {
      expect(await backend.indexes()).toEqual([
        { name: "frame_vectors_hnsw_64", kind: "frames", dim: 64, valid: true },
      ]);
      const plan = await pg.explainHnsw("frames", { accountId: c.a.accountId }, HAND_MODEL, concept(RED));
      expect(plan).toContain("frame_vectors_hnsw_64");
    });

    it("keeps every scope: B's nearer rows never reach A, a collection or video scope holds", async () => {
      const rowsOf = async (ids: number[]) =>
        await db(pgApp).all<{ account_id: string; collection_id: string; video_id: string }>(
          `SELECT account_id, collection_id, video_id FROM frames WHERE id = ANY(?::bigint[])`,
          `{${ids.join(",")}}`,
        );
      const q = concept(RED);
      const nearest = (scope: { accountId: string; collectionId?: string; videoId?: string }, k = 50) =>
        backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k });
      const inA = await nearest({ accountId: c.a.accountId });
      expect(inA).toHaveLength(50);
      expect(new Set((await rowsOf(inA.map((h) => h.id))).map((r) => r.account_id))).toEqual(new Set([c.a.accountId]));
      // B's planted rows are the nearest of the table: B's own search finds them first.
      const inB = await nearest({ accountId: c.b.accountId }, 4);
      expect(inB.every((h) => h.raw > 0.99)).toBe(true);
      const inTrips = await nearest({ accountId: c.a.accountId, collectionId: c.trips });
      expect(new Set((await rowsOf(inTrips.map((h) => h.id))).map((r) => r.collection_id))).toEqual(new Set([c.trips]));
      const inV2 = await nearest({ accountId: c.a.accountId, videoId: c.v2 }, 10);
      expect(new Set((await rowsOf(inV2.map((h) => h.id))).map((r) => r.video_id))).toEqual(new Set([c.v2]));
      // A video id of another account in A's scope finds nothing.
      expect(await nearest({ accountId: c.a.accountId, videoId: c.vb })).toEqual([]);
      // Through HTTP, B's video is a 404 for A's key, and A's whole-account search shows none of B's videos.
      const all = await search(pgApp as never, c.a.key, { query: "red", modes: "video" });
      expect(all.res.status).toBe(200);
      expect(segmentsOf(all.body).some((s) => s.video_id === c.vb)).toBe(false);
      expect((await search(pgApp as never, c.a.key, { query: "red", modes: "video", video_id: c.vb })).res.status).toBe(
        404,
      );
    });

    it("finds the same top moments as the in-memory index through HTTP", async () => {
      for (const fields of [
        { query: "red", modes: "video" },
        { query: "red", modes: "video", collection_id: c.home },
        { query: "beach", modes: "video" },
      ]) {
        const viaPg = await search(pgApp as never, c.a.key, fields);
        const viaMem = await search(memApp as never, c.a.key, fields);
        expect(viaPg.res.status).toBe(200);
        expect(topOf(viaPg.body, 3)).toEqual(topOf(viaMem.body, 3));
      }
    });

    it("recall@10 against the exact answer, measured (loose floor)", async () => {
      const r = rng(5);
      let found = 0,
        wanted = 0;
      for (let i = 0; i < 20; i++) {
        // Half text-like (a concept plus noise), half image-like (near an existing frame's direction).
        const q = i % 2 ? unit(near(RED, 0.5, r)) : background(r);
        const scope = { accountId: c.a.accountId };
        const approx = await backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k: 10 });
        const exact = await pg.nearestExact("frames", scope, HAND_MODEL, q, 10, null);
        const truth = new Set(exact.map((h) => h.id));
        found += approx.filter((h) => truth.has(h.id)).length;
        wanted += truth.size;
      }
      const recall = found / wanted;
      console.log(`pgvector HNSW recall@10 over ${3 * FRAMES} rows of one account: ${recall.toFixed(3)}`);
      expect(recall).toBeGreaterThan(0.8);
    });
  });
});
