/**
 * What makes a search cheap without changing its answer: the exact-vector cache (budget, recency,
 * invalidation when rows change), the shot text index kept by triggers, and the per-account shot
 * rows — all against a real SQLite store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testBackend } from "../pg/backend.ts";
import { MemoryVectorBackend } from "../../src/search/memory-backend.ts";
import { mentionTerms } from "../../src/search/text-match.ts";
import { ExactVectorCache } from "../../src/search/vector-cache.ts";
import { vi } from "vitest";
import {
  HAND_MODEL,
  HandEmbedder,
  addVideo,
  background,
  concept,
  createCollection,
  createTenant,
  indexVideo,
  near,
  rng,
  scopeOf,
  search,
  searchDomainOf,
  searchRequest,
  startSearchApp,
  type SearchTestApp,
} from "./helpers.ts";

const vec = (x: number) => Float32Array.from({ length: 4 }, () => x);

describe("ExactVectorCache", () => {
  it("keeps within its budget, dropping the least recently used first", () => {
    const c = new ExactVectorCache(4 * 16); // four 16-byte vectors
    for (let id = 1; id <= 4; id++) c.set("i", id, vec(id));
    expect(c.get("i", 1)).toEqual(vec(1)); // 1 is now the most recent
    c.set("i", 5, vec(5)); // over budget: down to 3/4 → the two least recent (2, 3) go
    expect(c.sizeBytes).toBeLessThanOrEqual(4 * 16);
    expect(c.get("i", 2)).toBeUndefined();
    expect(c.get("i", 3)).toBeUndefined();
    expect(c.get("i", 1)).toEqual(vec(1));
    expect(c.get("i", 5)).toEqual(vec(5));
  });

  it("keeps indexes apart, forgets dropped rows, and a zero budget keeps nothing", () => {
    const c = new ExactVectorCache(1024);
    c.set("frames", 7, vec(1));
    c.set("shots", 7, vec(2));
    expect(c.get("frames", 7)).toEqual(vec(1));
    expect(c.get("shots", 7)).toEqual(vec(2));
    c.drop("frames", [7]);
    expect(c.get("frames", 7)).toBeUndefined();
    expect(c.get("shots", 7)).toEqual(vec(2));
    expect(c.sizeBytes).toBe(16);
    const off = new ExactVectorCache(0);
    off.set("frames", 1, vec(1));
    expect(off.get("frames", 1)).toBeUndefined();
  });

  it("computes cosines from kept rows in place, from rows beside it, and NaN for neither", () => {
    const c = new ExactVectorCache(1024);
    const unit = Float32Array.from([1, 0, 0, 0]);
    c.set("i", 1, Float32Array.from([3, 4, 0, 0]));
    c.set("i", 2, Float32Array.from([0, 2, 0, 0]));
    const beside = new Map([
      [3, Float32Array.from([1, 1, 1, 1])],
      [4, Float32Array.from([1, 1, 1])], // another length than the query's: no answer
    ]);
    expect(c.missing("i", [1, 2, 3, 4, 5], beside)).toEqual([5]);
    const cos = c.cosines("i", [1, 2, 3, 4, 5], unit, beside);
    expect([...cos]).toEqual([0.6, 0, 0.5, Number.NaN, Number.NaN]);
    // Rows beside the cache are not kept by being compared.
    expect(c.get("i", 3)).toBeUndefined();
    // Another index's row 1 is not this one's.
    expect(Number.isNaN(c.cosines("j", [1], unit)[0])).toBe(true);
    // clear() lets the memory go; rows are then read again.
    expect(c.memoryBytes).toBeGreaterThan(0);
    c.clear();
    expect(c.memoryBytes).toBe(0);
    expect(c.missing("i", [1])).toEqual([1]);
  });
});

describe("against the store", () => {
  let t: SearchTestApp;
  let account: string;
  let col: string;
  beforeAll(async () => {
    t = await startSearchApp();
    account = (await createTenant(t)).accountId;
    col = await createCollection(t, account, "c");
  });
  afterAll(() => t?.close());
  /** The three nearest frames of one video, through `backend`. */
  const threeNearest = (backend: MemoryVectorBackend, videoId: string, query: Float32Array) => async () =>
    await backend.nearest({ kind: "frames", scope: { accountId: account, videoId }, modelId: HAND_MODEL, query, k: 3 });

  // SQLite hands a deleted row's id to new content; PostgreSQL's identities never reuse one, so
  // there is no such id to go stale there.
  it.skipIf(testBackend() === "postgres")(
    "a cached vector never answers for a row id SQLite gave to new content",
    async () => {
      const store = t.stores.search;
      const cache = new ExactVectorCache(1 << 20);
      const backend = new MemoryVectorBackend(store, cache);
      const r = rng(3);
      const v = await addVideo(t, account, col, { duration: 3 });
      const scope = await scopeOf(t, v);
      const query = concept(0);
      const nearest = threeNearest(backend, v, query);
      await t.index.replaceFrames(
        scope,
        [0, 1, 2].map((s) => ({ timestamp: s, shotIndex: 0, embedding: near(0, 0.95, r) })),
        HAND_MODEL,
      );
      const before = await nearest();
      expect(before.every((h) => h.raw > 0.9)).toBe(true);
      expect(cache.sizeBytes).toBeGreaterThan(0);
      // Re-indexed: the old rows go, the new ones take the same ids (they were the highest).
      await t.index.replaceFrames(
        scope,
        [0, 1, 2].map((s) => ({ timestamp: s, shotIndex: 0, embedding: background(r) })),
        HAND_MODEL,
      );
      expect(new Set((await store.frames(before.map((h) => h.id))).map((f) => f.video_id))).toEqual(new Set([v]));
      await backend.onVideoIndexed(v, account);
      const after = await nearest();
      expect(after.map((h) => h.id).sort()).toEqual(before.map((h) => h.id).sort());
      expect(after.every((h) => h.raw < 0.5)).toBe(true);
    },
  );

  it("a look-up whose cached rows are evicted while it reads the others reads them again", async () => {
    const store = t.stores.search;
    const r = rng(5);
    const v = await addVideo(t, account, col, { duration: 3 });
    const scope = await scopeOf(t, v);
    await t.index.replaceFrames(
      scope,
      [0, 1, 2].map((s) => ({ timestamp: s, shotIndex: 0, embedding: near(0, 0.9, r) })),
      HAND_MODEL,
    );
    const query = concept(0);
    // Room for the video's three rows and no more.
    const cache = new ExactVectorCache(3 * query.length * 4);
    const backend = new MemoryVectorBackend(store, cache);
    const nearest = threeNearest(backend, v, query);
    const before = await nearest();
    expect(before).toHaveLength(3);
    // One row dropped: the next look-up reads it, and while it waits another search's rows fill
    // the cache and evict the two it had found there.
    const index = (cache as unknown as { entries: Map<string, unknown> }).entries.keys().next().value as string;
    cache.drop(index, [before[0].id]);
    const read = vi.spyOn(store, "vectors");
    let evicted = false;
    read.mockImplementation(async (kind, ids) => {
      const rows = (await Reflect.apply(Object.getPrototypeOf(store).vectors, store, [kind, ids])) as Map<
        number,
        Uint8Array
      >;
      if (!evicted) {
        evicted = true;
        for (let i = 0; i < 3; i++) cache.set("another index", i, Float32Array.from(query));
      }
      return rows;
    });
    try {
      const after = await nearest();
      // The same answers, each scored from its own row: the evicted two were read again.
      expect(after).toEqual(before);
      expect(read).toHaveBeenCalledTimes(2);
      expect(read.mock.calls[1][1]).toHaveLength(2);
    } finally {
      read.mockRestore();
    }
  });

  it("the shot text index follows writes and deletes, and finds stemmed forms", async () => {
    const store = t.stores.search;
    const v = await addVideo(t, account, col, { duration: 20 });
    await indexVideo(t, v, {
      shots: [
        { start: 0, end: 10, labels: [{ label: "puppy", score: 0.8 }], caption: null },
        { start: 10, end: 20, labels: [{ label: "kitchen", score: 0.6 }], caption: "a cook is chopping onions" },
      ],
    });
    const scope = { accountId: account, videoId: v };
    const find = async (q: string) =>
      (await store.shotsMentioning(scope, mentionTerms(q), 10)).map((s) => s.start_secs);
    expect(await find("puppies")).toEqual([0]);
    expect(await find("onion")).toEqual([10]);
    expect(await find("chopped onions in a kitchen")).toEqual([10]);
    expect(await find("an airplane")).toEqual([]);
    expect(await find(`"; DROP TABLE shots; --`)).toEqual([]);
    // Replaced shots replace their text; a deleted video takes it along.
    await indexVideo(t, v, { shots: [{ start: 0, end: 20, labels: [{ label: "airplane", score: 0.9 }] }] });
    expect(await find("puppies")).toEqual([]);
    expect(await find("airplane")).toEqual([0]);
    const count = async () => await store.shotTextRows();
    const n = await count();
    await t.app.services.videos.delete(account, v);
    expect(await count()).toBe(n - 1);
  });

  it("an idle release keeps the caches while searches still read them, and drops them once they stop", async () => {
    const { indexes } = searchDomainOf(t, { embedder: new HandEmbedder({}) });
    const v = await addVideo(t, account, col, { duration: 10 });
    await indexVideo(t, v, { shots: [{ start: 0, end: 10 }] });
    const first = (await indexes.shotsOfVideos(account, [v])).get(v)!;
    expect(indexes.releaseCaches(60_000)).toBe(false); // read a moment ago
    expect((await indexes.shotsOfVideos(account, [v])).get(v)).toBe(first);
    expect(indexes.releaseCaches(0)).toBe(true);
    expect((await indexes.shotsOfVideos(account, [v])).get(v)).not.toBe(first); // read again from the store
  });

  it("shot rows are kept per account until the video's content changes (onVideoIndexed)", async () => {
    // SearchIndexes on its own, told of the change directly; the app's wiring of the event to it
    // (app.ts, "Events") is covered through HTTP by warm.test.ts's re-indexed videos.
    const { indexes } = searchDomainOf(t, { embedder: new HandEmbedder({}) });
    const v = await addVideo(t, account, col, { duration: 10 });
    await indexVideo(t, v, { shots: [{ start: 0, end: 10, labels: [{ label: "dog", score: 0.5 }] }] });
    const first = (await indexes.shotsOfVideos(account, [v])).get(v)!;
    expect(first.map((s) => s.end_secs)).toEqual([10]);
    expect((await indexes.shotsOfVideos(account, [v])).get(v)).toBe(first);
    await indexVideo(t, v, {
      shots: [
        { start: 0, end: 4 },
        { start: 4, end: 10 },
      ],
    });
    expect((await indexes.shotsOfVideos(account, [v])).get(v)).toBe(first); // nothing told it yet
    await indexes.onVideoIndexed(v);
    expect((await indexes.shotsOfVideos(account, [v])).get(v)!.map((s) => s.end_secs)).toEqual([4, 10]);
  });
});

describe("a repeated query", () => {
  it("starts its look-up at the k it ended at last time, with the same answer", async () => {
    const embedder = new HandEmbedder({ red: concept(0) });
    const t = await startSearchApp({ embedder });
    try {
      const tenant = await createTenant(t);
      const col = await createCollection(t, tenant.accountId, "c");
      const r = rng(11);
      // 400 red frames, and a library of unrelated footage so the account's null sample looks like
      // real content: well over half of the first 128 answers pass the cut.
      const library = await addVideo(t, tenant.accountId, col, { duration: 3000 });
      await indexVideo(t, library, {
        frames: Array.from({ length: 3000 }, (_, s) => ({ timestamp: s, embedding: background(r) })),
      });
      const v = await addVideo(t, tenant.accountId, col, { duration: 400 });
      await indexVideo(t, v, {
        frames: Array.from({ length: 400 }, (_, s) => ({ timestamp: s, embedding: near(0, 0.9, r) })),
      });
      // The look-ups are watched on a search domain of its own over the same file (same stores and
      // embedder); what it answers is checked against the app's answer over HTTP.
      const domain = searchDomainOf(t, { embedder });
      const spy = vi.spyOn(domain.indexes, "nearest");
      const ks = () => spy.mock.calls.filter(([q]) => q.kind === "frames").map(([q]) => q.k);
      const red = () => domain.search.search(tenant.accountId, searchRequest({ query: "red", modes: "video" }));
      const first = await red();
      const walked = ks();
      expect(walked[0]).toBe(128);
      expect(walked.length).toBeGreaterThan(1);
      spy.mockClear();
      const again = await red();
      expect(ks()).toEqual([walked.at(-1)]);
      expect(again.videos).toEqual(first.videos);
      const moments = (
        videos: { video_id: string; segments: { timestamp_start: number; timestamp_end: number; score: number }[] }[],
      ) => videos.flatMap((v) => v.segments.map((s) => [v.video_id, s.timestamp_start, s.timestamp_end, s.score]));
      expect(moments(first.videos).length).toBeGreaterThan(0);
      expect(moments((await search(t, tenant.key, { query: "red", modes: "video" })).body.data)).toEqual(
        moments(first.videos),
      );
      // New queries (new texts, new vectors: no hint of their own) start at the bottom until eight
      // look-ups of this account and mode are on record (the two above, then six of these), then
      // where those needed (k-starts.ts).
      const starts: number[] = [];
      for (let i = 0; i < 8; i++) {
        spy.mockClear();
        await domain.search.search(tenant.accountId, searchRequest({ query: `red number ${i}`, modes: "video" }));
        starts.push(ks()[0]);
      }
      expect(starts).toEqual([...Array(6).fill(128), walked.at(-1), walked.at(-1)]);
    } finally {
      await t.close();
    }
  });
});
