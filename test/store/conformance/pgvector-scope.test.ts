/**
 * Scoped look-ups of `vector_backend = "pgvector"` (follow-up of issue 25; figures: bench/pg-scope-bench.ts,
 * BENCHMARKS.md "Scoped look-ups on pgvector"). One account of ten collections (two videos of 500
 * random 64-d frames each, 10 000 rows), written through IndexStore into this file's PostgreSQL
 * database; every answer is checked against a brute-force scan of the same vectors in JS:
 *   - a scope up to the crossover is compared exactly — the exact top-k, in order — and that scan
 *     fetches the scope's vectors by key (the planner once read every vector of the table for it);
 *   - a scope above it walks the HNSW index asked for 2 × ef_search rows of the scope, not 4k: on a
 *     sparse graph a collection of a tenth of the rows keeps recall@10 ≥ 0.9 (0.955–0.99 over four runs)
 *     where a walk that stopped at its first 40 in-scope rows found 0.78.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexStore } from "../../../src/indexing/store.ts";
import { exactCrossover, PgVectorBackend, scanBudget } from "../../../src/search/pgvector-backend.ts";
import { PgVectorStore } from "../../../src/search/pgvector-store.ts";
import { SearchStore } from "../../../src/search/store.ts";
import type { Executor } from "../../../src/store/executor.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import { createKeyTenant, startTestApp, type TestApp } from "../../helpers/app.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { DIM, HAND_MODEL, rng, unit } from "../../search/helpers.ts";
import { openPg } from "./backends.ts";

const COLLECTIONS = 10;
const VIDEOS_PER_COLLECTION = 2;
const FRAMES = 500;
const K = 10;

/** A random unit vector over all 64 dimensions (no structure for the graph to lean on). */
function randomUnit(r: () => number): Float32Array {
  return unit(Float32Array.from({ length: DIM }, () => r() - 0.5));
}

/** Ids of the k nearest of `rows` by cosine (unit vectors: the dot product), best first, ties by id. */
function bruteForce(rows: { id: number; v: Float32Array }[], q: Float32Array, k: number): number[] {
  return rows
    .map((r) => ({ id: r.id, s: r.v.reduce((acc, x, j) => acc + x * q[j], 0) }))
    .sort((a, b) => b.s - a.s || a.id - b.id)
    .slice(0, k)
    .map((r) => r.id);
}

describe("the scoped path's rule", () => {
  it("the crossover grows with the square root of the index and stays within its bounds", () => {
    expect(exactCrossover(null, 1000)).toBe(5_000);
    expect(exactCrossover(10_000, 1000)).toBe(5_000);
    expect(exactCrossover(200_000, 1000)).toBeGreaterThan(5_000);
    expect(exactCrossover(1_000_000, 1000)).toBeGreaterThan(exactCrossover(200_000, 1000));
    expect(exactCrossover(1e9, 1000)).toBe(50_000);
  });

  it("the walk's budget is twice the tuples a scope's share needs, bounded", () => {
    expect(scanBudget(1_000_000, 100_000, 1000, 500_000)).toBe(20_000);
    expect(scanBudget(1_000_000, 1_000_000, 1000, 500_000)).toBe(2_000);
    expect(scanBudget(1_000_000, 100, 1000, 500_000)).toBe(500_000);
    expect(scanBudget(null, 100_000, 1000, 500_000)).toBe(100_000);
    expect(scanBudget(1_000_000, 100_000, 1000, 500)).toBe(1000); // never under the candidates asked for
  });
});

describe.skipIf(!pgAvailable())("pgvector: scoped look-ups against brute force", () => {
  let t: TestApp;
  let exec: Executor;
  let pg: PgVectorStore;
  let accountId: string;
  const collections: string[] = [];
  /** Every row written, with its collection. */
  const rows: { id: number; collectionId: string; v: Float32Array }[] = [];

  beforeAll(async () => {
    t = await startTestApp({ VSEARCH_DATABASE_URL: pgTest().url });
    exec = (await openPg()).exec;
    pg = new PgVectorStore(exec);
    accountId = (await createKeyTenant(t, "A")).accountId;
    const index = new IndexStore(exec, false);
    const videos = new VideoStore(exec);
    const r = rng(23);
    for (let c = 0; c < COLLECTIONS; c++)
      collections.push((await t.app.services.collections.create(accountId, { name: `c${c}` })).id);
    for (let v = 0; v < COLLECTIONS * VIDEOS_PER_COLLECTION; v++) {
      const collectionId = collections[v % COLLECTIONS];
      const path = `${t.dir}/upload-${v}.bin`;
      await Bun.write(path, new Uint8Array(64));
      const { video_id } = await t.app.services.videos.createFromUpload({
        accountId,
        collectionId,
        filename: `v${v}.mp4`,
        tempFile: path,
        ext: "mp4",
        container: "mp4",
        mimeType: "video/mp4",
        sizeBytes: 64,
      });
      await videos.update(video_id, { status: "ready", progress_pct: 100, duration_secs: FRAMES });
      const vectors = Array.from({ length: FRAMES }, () => randomUnit(r));
      await index.replaceFrames(
        { accountId, collectionId, videoId: video_id },
        vectors.map((embedding, i) => ({ shotIndex: Math.floor(i / 10), timestamp: i, embedding })),
        HAND_MODEL,
      );
      const written = await exec.all<{ id: number }>(
        "SELECT id FROM frames WHERE video_id = ? ORDER BY timestamp",
        video_id,
      );
      written.forEach((w, i) => rows.push({ id: Number(w.id), collectionId, v: vectors[i] }));
    }
    expect(rows).toHaveLength(COLLECTIONS * VIDEOS_PER_COLLECTION * FRAMES);
    // The index the walk needs, built here with a sparse graph (m 4, ef_construction 10, where the
    // backend builds 16 / 64): a walk over 10 000 rows of a good graph finds the top-10 however it is
    // asked; over this one, how deep the scoped walk goes decides what it finds.
    await pg.createHnswIndex("frames", DIM, { m: 4, efConstruction: 10 });
    expect((await pg.hnswIndexes()).find((i) => i.dim === DIM)?.valid).toBe(true);
    await exec.exec("ANALYZE frames, frame_vectors");
  });

  afterAll(async () => {
    await t?.close();
  });

  const inCollection = (c: number) => rows.filter((r) => r.collectionId === collections[c]);
  const queries = (n: number, seed: number) => {
    const r = rng(seed);
    return Array.from({ length: n }, () => randomUnit(r));
  };

  it("counts a scope's rows up to its cap + 1, and knows the index's size", async () => {
    const scope = { accountId, collectionId: collections[3] };
    expect(await pg.countInScope("frames", scope, HAND_MODEL, 5_000)).toBe(1_000);
    expect(await pg.countInScope("frames", scope, HAND_MODEL, 100)).toBe(101);
    expect(await pg.countInScope("frames", { accountId }, HAND_MODEL, 50_000)).toBe(10_000);
    expect(await pg.countInScope("frames", scope, "other@x", 5_000)).toBe(0);
    const size = await pg.indexRows("frames", DIM);
    expect(size).toBeGreaterThan(9_000);
    expect(size).toBeLessThan(11_000);
    expect(await pg.indexRows("frames", 3)).toBeNull();
  });

  it("an exact scan fetches the scope's vectors by key, not every vector of the table", async () => {
    const plan = await pg.explainExact(
      "frames",
      { accountId, collectionId: collections[0] },
      HAND_MODEL,
      queries(1, 1)[0],
    );
    expect(plan).toContain("frame_vectors_pkey");
    expect(plan).not.toMatch(/Seq Scan on frame_vectors/);
  });

  it("a scope up to the crossover (here exactScanMax 3 000) answers the exact top-k, in order", async () => {
    const backend = new PgVectorBackend(new SearchStore(exec), pg, { exactScanMax: 3_000 });
    const scope = { accountId, collectionId: collections[5] };
    for (const q of queries(5, 2)) {
      const hits = await backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k: K });
      expect(hits.map((h) => h.id)).toEqual(bruteForce(inCollection(5), q, K));
      const exact = await pg.nearestExact("frames", scope, HAND_MODEL, q, K, null);
      expect(hits).toEqual(exact);
    }
    // Only some of a scope's rows (a label filter's ids): the exact top-k of those.
    const some = inCollection(5).filter((_, i) => i % 3 === 0);
    const q = queries(1, 3)[0];
    const viaIds = await pg.nearestExact(
      "frames",
      scope,
      HAND_MODEL,
      q,
      K,
      some.map((r) => r.id),
    );
    expect(viaIds.map((h) => h.id)).toEqual(bruteForce(some, q, K));
  });

  it("a collection above the crossover walks the index for 2 × ef_search rows of the scope: recall@10 ≥ 0.9", async () => {
    // exactScanMax 0: every scope takes the HNSW path (a tenth of the rows, as a collection of ten).
    const backend = new PgVectorBackend(new SearchStore(exec), pg, { exactScanMax: 0 });
    let found = 0;
    let wanted = 0;
    for (const [i, q] of queries(20, 4).entries()) {
      const c = i % COLLECTIONS;
      const scope = { accountId, collectionId: collections[c] };
      const hits = await backend.nearest({ kind: "frames", scope, modelId: HAND_MODEL, query: q, k: K });
      const truth = new Set(bruteForce(inCollection(c), q, K));
      expect(hits.every((h) => rows.find((r) => r.id === h.id)?.collectionId === collections[c])).toBe(true);
      found += hits.filter((h) => truth.has(h.id)).length;
      wanted += truth.size;
    }
    const recall = found / wanted;
    console.log(`pgvector scoped (1 of ${COLLECTIONS} collections, 64-d random) recall@10: ${recall.toFixed(3)}`);
    expect(recall).toBeGreaterThanOrEqual(0.9);
  });
});
