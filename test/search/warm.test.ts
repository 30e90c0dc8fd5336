/**
 * The in-memory index warms up in the background after `app.start()` (issue 14): every account's
 * vectors load in slices between requests. Here the pages are small and a slice is one page, so a
 * few thousand rows take a hundred event-loop turns, and the test acts while they load: the
 * server answers, a vector search waits or answers 503 with Retry-After, and videos re-indexed,
 * deleted or added mid-load, a deleted account and a close all end exactly right.
 */
import { afterEach, describe, expect, it } from "vitest";
import { metric, json } from "../helpers/app.ts";
import { until } from "../helpers/wait.ts";
import { MemoryVectorBackend, type MemoryIndexOptions } from "../../src/search/memory-backend.ts";
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
  search,
  searchDomainOf,
  searchRequest,
  segmentsOf,
  startSearchApp,
  type SearchTestApp,
  type Tenant,
} from "./helpers.ts";

const WORDS = { dog: concept(0), boat: concept(1), tree: concept(2), kite: concept(3) };
const embedder = () => new HandEmbedder(WORDS);
const VIDEOS = 30;
const FRAMES = 100;
const SHOTS = 10;
/** 50-row pages, one per turn: 3 300 rows take ~66 turns. */
const SLOW = { pageRows: 50, sliceMs: 0 };
const EXACT: MemoryIndexOptions = { exactBelow: 1_000_000 };

let t: SearchTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

/** Frames near concept `c` for a tenth of each video, background otherwise; a shot every 10 frames. */
async function fill(app: SearchTestApp, videoId: string, seed: number, c: number, frames = FRAMES): Promise<void> {
  const r = rng(seed);
  await indexVideo(app, videoId, {
    frames: Array.from({ length: frames }, (_, i) => ({
      timestamp: i,
      shotIndex: Math.floor(i / 10),
      embedding: i % 10 === 0 ? near(c, 0.6, r) : background(r),
    })),
    shots: Array.from({ length: Math.ceil(frames / 10) }, (_, i) => ({
      start: i * 10,
      end: i * 10 + 10,
      embedding: i === 0 ? near(c, 0.6, r) : background(r),
    })),
  });
}

/** An account of VIDEOS videos (concepts 0…2 in turn), written before the app starts. */
async function account(app: SearchTestApp, name: string, seed: number): Promise<{ tenant: Tenant; videos: string[] }> {
  const tenant = await createTenant(app, name);
  const col = await createCollection(app, tenant.accountId, "c");
  const videos: string[] = [];
  for (let i = 0; i < VIDEOS; i++) {
    const v = await addVideo(app, tenant.accountId, col, { duration: FRAMES, filename: `${name}-${i}.mp4` });
    await fill(app, v, seed * 1000 + i, i % 3);
    videos.push(v);
  }
  return { tenant, videos };
}

const loading = async () => (await metric(t!, "vsearch_search_index_loading")) === 1;
const ratio = async () => (await metric(t!, "vsearch_search_index_loaded_ratio"))!;
const vectors = async () => (await metric(t!, "vsearch_search_index_vectors"))!;

async function untilWarm(): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await loading()) && Date.now() < deadline) await Bun.sleep(5);
  expect(await loading()).toBe(false);
}

/**
 * Holds the warm-up before a slice (IndexWarmOptions.beforeSlice) and lets it go one slice at a
 * time, so a test changes the store while the pass is at a known point, on either backend: polling
 * the progress of a pass paced in event-loop turns cannot catch it mid-way on PostgreSQL, where
 * every page is a round trip. A slice is one page here (SLOW: sliceMs 0).
 */
class WarmGate {
  private held: (() => void) | null = null;
  private open = false;
  progress = { rows: 0, fraction: 0, done: false };
  readonly beforeSlice = async (p: { rows: number; fraction: number; done: boolean }): Promise<void> => {
    this.progress = p;
    if (this.open) return;
    await new Promise<void>((resolve) => {
      this.held = resolve;
    });
  };

  /** Until the pass waits before its next slice (or has ended); bounded. */
  async untilHeld(): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!this.held && (await loading()) && Date.now() < deadline) await Bun.sleep(1);
    expect(this.held !== null || !(await loading())).toBe(true);
  }

  /** Lets one slice run and waits until the pass is held before the next. */
  async step(): Promise<void> {
    await this.untilHeld();
    const go = this.held;
    this.held = null;
    go?.();
    await this.untilHeld();
  }

  /** Steps until the pass has read `share` of the rows, and holds it there (mid-load). */
  async holdPast(share: number): Promise<void> {
    for (let i = 0; i < 10_000 && this.progress.fraction < share; i++) await this.step();
    expect(this.held).not.toBeNull();
    expect(await loading()).toBe(true);
  }

  /** Lets the pass run to its end, unheld. */
  release(): void {
    this.open = true;
    this.held?.();
    this.held = null;
  }
}

/** A search app whose warm-up, once started, waits at its gate. */
async function startHeld(o: {
  waitMs: number;
  vectorIndex?: MemoryIndexOptions;
}): Promise<{ app: SearchTestApp; gate: WarmGate }> {
  const gate = new WarmGate();
  const app = await startSearchApp({
    embedder: embedder(),
    indexWarm: { ...SLOW, waitMs: o.waitMs, beforeSlice: gate.beforeSlice },
    vectorIndex: o.vectorIndex,
  });
  return { app, gate };
}

/** What a search answers: per video, its clips' start, type and score. */
const answer = (videos: { video_id: string; segments: { timestamp_start: number; type: string; score: number }[] }[]) =>
  videos.map((v) => [v.video_id, v.segments.map((s) => [s.timestamp_start, s.type, s.score])]);

/**
 * The same search on a search domain of its own over the same file, which loads the account
 * synchronously (as before). Where rows changed mid-load, both sides rank exactly (EXACT): the
 * index learns its centre from the first rows added, so its approximate answers depend on the
 * order rows came in, not only on which rows it holds.
 */
async function freshLoadAnswer(app: SearchTestApp, accountId: string, query: string, vectorIndex?: MemoryIndexOptions) {
  const domain = searchDomainOf(app, { embedder: embedder(), vectorIndex });
  return answer((await domain.search.search(accountId, searchRequest({ query, min_score: "0" }))).videos);
}

describe("index warm-up after start", () => {
  it("loads in the background: the server answers, a vector search answers 503 with Retry-After and progress, then the same as a synchronous load", async () => {
    t = await startSearchApp({ embedder: embedder(), indexWarm: { ...SLOW, waitMs: 0 } });
    const { tenant } = await account(t, "A", 1);
    await t.app.start();

    expect(await loading()).toBe(true);
    const t0 = performance.now();
    const health = await t.request("GET", "/healthz");
    expect(health.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(1000);
    const ready = await t.request("GET", "/readyz");
    expect(ready.status).toBe(200); // the rest of the server serves while the index loads
    expect((await json(ready)).checks.search_index).toMatch(/^loading: \d+% \(\d+ vectors\)$/);

    const { res, body } = await search(t, tenant.key, { query: "dog" });
    expect(res.status).toBe(503);
    expect(body.detail.code).toBe("SEARCH_UNAVAILABLE");
    expect(body.detail.message).toMatch(
      /index is loading after a restart: \d+ vectors in, \d+% done; retry in about \d+ s/,
    );
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The agent tool answers the same (the REST error, Retry-After included).
    const tool = await t.request("POST", "/v1/agent/call", {
      token: tenant.key,
      json: { tool: "search_videos", input: { query: "dog" } },
    });
    expect(tool.status).toBe(503);
    expect((await json(tool)).detail.code).toBe("SEARCH_UNAVAILABLE");
    expect(Number(tool.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Lexical modes do not need the vector index.
    expect((await search(t, tenant.key, { query: "dog", modes: "ocr" })).res.status).toBe(200);
    expect(await loading()).toBe(true); // all of the above happened mid-load

    await untilWarm();
    expect(await ratio()).toBe(1);
    expect(await vectors()).toBe(VIDEOS * (FRAMES + SHOTS));
    expect((await json(await t.request("GET", "/readyz"))).checks.search_index).toBe("warm");
    for (const query of ["dog", "tree"]) {
      const warm = await search(t, tenant.key, { query, min_score: "0" });
      expect(warm.res.status).toBe(200);
      expect(warm.body.data.length).toBeGreaterThan(0);
      expect(answer(warm.body.data)).toEqual(await freshLoadAnswer(t, tenant.accountId, query));
    }
  });

  it("a search sent while it loads waits for it (bounded) and answers in full", async () => {
    t = await startSearchApp({ embedder: embedder(), indexWarm: { ...SLOW, waitMs: 20_000 } });
    const { tenant } = await account(t, "A", 2);
    await t.app.start();
    expect(await loading()).toBe(true);
    const { res, body } = await search(t, tenant.key, { query: "boat", min_score: "0" });
    expect(res.status).toBe(200);
    expect(await ratio()).toBe(1);
    expect(answer(body.data)).toEqual(await freshLoadAnswer(t, tenant.accountId, "boat"));
  });

  // These four change the store while the warm-up is held at a point (WarmGate).
  it("videos re-indexed, deleted and added while it loads end up exactly right", async () => {
    const held = await startHeld({ waitMs: 0, vectorIndex: EXACT });
    t = held.app;
    const gate = held.gate;
    const { tenant, videos } = await account(t, "A", 3);
    const col = (await t.stores.videos.getById(videos[0]))!.collection_id;
    await t.app.start();
    await gate.holdPast(0.4);

    await fill(t, videos[1], 91, 3, 60); // loaded already: now kite, fewer rows
    await fill(t, videos[VIDEOS - 1], 92, 3, 120); // not reached yet (its new rows take the ids it freed): now kite, more rows
    await t.app.services.videos.delete(tenant.accountId, videos[2]); // loaded already
    await t.app.services.videos.delete(tenant.accountId, videos[VIDEOS - 2]); // not reached yet
    const added = await addVideo(t, tenant.accountId, col, { duration: FRAMES, filename: "added.mp4" });
    await fill(t, added, 93, 3);
    expect(await loading()).toBe(true); // all of it mid-load

    gate.release();
    await untilWarm();
    const rows = (VIDEOS - 4) * (FRAMES + SHOTS) + (60 + 6) + (120 + 12) + (FRAMES + SHOTS);
    expect(await vectors()).toBe(rows); // each row once, removed rows gone
    for (const query of ["kite", "dog", "tree"]) {
      const warm = await search(t, tenant.key, { query, min_score: "0" });
      expect(answer(warm.body.data)).toEqual(await freshLoadAnswer(t, tenant.accountId, query, EXACT));
    }
    const kite = await search(t, tenant.key, { query: "kite" });
    expect(new Set(kite.body.data.map((v: any) => v.video_id))).toEqual(
      new Set([videos[1], videos[VIDEOS - 1], added]),
    );
    const everything = segmentsOf((await search(t, tenant.key, { query: "dog", min_score: "0" })).body);
    expect(everything.some((s) => s.video_id === videos[2] || s.video_id === videos[VIDEOS - 2])).toBe(false);
  });

  it("an account deleted while it loads leaves none of its rows", async () => {
    const held = await startHeld({ waitMs: 0, vectorIndex: EXACT });
    t = held.app;
    const gate = held.gate;
    const a = await account(t, "A", 4);
    const b = await account(t, "B", 5);
    await t.app.start();
    await gate.holdPast(0.3); // A's rows are first: B's are partly loaded or not at all
    await t.app.services.accountDeletion.delete(b.tenant.accountId);
    expect(await loading()).toBe(true);
    gate.release();
    await untilWarm();
    expect(await vectors()).toBe(VIDEOS * (FRAMES + SHOTS));
    const warm = await search(t, a.tenant.key, { query: "dog", min_score: "0" });
    expect(answer(warm.body.data)).toEqual(await freshLoadAnswer(t, a.tenant.accountId, "dog", EXACT));
  });

  it("a tenant whose vectors are all in searches while others' still load; a new tenant at once", async () => {
    const held = await startHeld({ waitMs: 0, vectorIndex: EXACT });
    t = held.app;
    const gate = held.gate;
    const a = await account(t, "A", 7); // written first: the lowest ids of both kinds
    const b = await account(t, "B", 8);
    const fresh = await createTenant(t, "C");
    await t.app.start();
    expect(await loading()).toBe(true);
    // No vectors at all: nothing to wait for.
    const none = await search(t, fresh.key, { query: "dog" });
    expect(none.res.status).toBe(200);
    expect(none.body.data).toEqual([]);
    expect((await search(t, a.tenant.key, { query: "dog" })).res.status).toBe(503);
    // A is in once the frames are read and the shots' cursor passed A's shots; B's are still loading.
    let slices = 0;
    while ((await search(t, a.tenant.key, { query: "dog", min_score: "0" })).res.status === 503 && slices++ < 10_000) {
      await gate.step();
    }
    expect(await loading()).toBe(true);
    expect((await search(t, b.tenant.key, { query: "dog" })).res.status).toBe(503);
    const early = await search(t, a.tenant.key, { query: "dog", min_score: "0" });
    expect(early.res.status).toBe(200);
    expect(answer(early.body.data)).toEqual(await freshLoadAnswer(t, a.tenant.accountId, "dog", EXACT));
    // The new tenant's first video, written mid-load, has ids past the cursor: it waits for the pass.
    const v = await addVideo(t, fresh.accountId, await createCollection(t, fresh.accountId, "c"), {
      duration: FRAMES,
      filename: "c.mp4",
    });
    await fill(t, v, 77, 0);
    expect((await search(t, fresh.key, { query: "dog" })).res.status).toBe(503);
    gate.release();
    await untilWarm();
    const after = await search(t, fresh.key, { query: "dog", min_score: "0" });
    expect(after.res.status).toBe(200);
    expect(after.body.data.map((x: any) => x.video_id)).toEqual([v]);
  });

  it("close() during the load stops it cleanly; a search waiting for it is answered", async () => {
    const held = await startHeld({ waitMs: 20_000 });
    t = held.app;
    const gate = held.gate;
    const { tenant } = await account(t, "A", 6);
    await t.app.start();
    await gate.holdPast(0.1);
    const waiting = search(t, tenant.key, { query: "dog" });
    // Close once it waits for the pass (before that, on PostgreSQL, it is still in its look-ups).
    expect(await until(async () => (await metric(t!, "vsearch_search_index_waiting")) === 1, 30_000, 1)).toBe(true);
    const closing = t;
    t = null;
    await closing.close();
    const { res, body } = await waiting;
    expect(res.status).toBe(503);
    expect(body.detail.code).toBe("SEARCH_UNAVAILABLE");
    expect(body.detail.message).toMatch(/shutting down/); // the pass was stopped, not merely still loading
    gate.release(); // the held slice sees the pass stopped and reads nothing
    await Bun.sleep(50); // no page is read from the closed store afterwards (that would be an unhandled error)
  });
});

describe("the pass and the event hooks split the rows at the cursor", () => {
  it("a video re-indexed at any point of the pass ends up in the index once, with exactly its current rows", async () => {
    t = await startSearchApp({ embedder: embedder() });
    const tenant = await createTenant(t, "A");
    const col = await createCollection(t, tenant.accountId, "c");
    const videos: Awaited<ReturnType<typeof addVideo>>[] = [];
    for (let i = 0; i < 5; i++)
      videos.push(await addVideo(t!, tenant.accountId, col, { duration: 30, filename: `${i}.mp4` }));
    for (const [i, v] of videos.entries()) await fill(t!, v, 10 + i, i % 3, 20);
    const last = videos[4]; // holds the highest ids: re-indexed, its new rows take the ids it freed, some below the cursor
    const everything = async (b: MemoryVectorBackend, kind: "frames" | "shots") =>
      await b.nearest({
        kind,
        scope: { accountId: tenant.accountId },
        modelId: HAND_MODEL,
        query: concept(1),
        k: 10_000,
      });
    // ~100 frames in 10-row pages: the steps walk the frames a page at a time, up to and past the
    // last one (cursor on the highest id, frames not yet done), then the shots.
    for (let steps = 0; steps <= 12; steps++) {
      const warming = new MemoryVectorBackend(t.stores.search);
      await warming.beginWarm();
      for (let i = 0; i < steps; i++) await warming.warmStep(10);
      await fill(t, last, 100 + steps, 3, 15 + steps); // a different number of rows each time
      await warming.onVideoIndexed(last, tenant.accountId); // what the bus does after the commit
      while (await warming.warmStep(10));
      const fresh = new MemoryVectorBackend(t.stores.search); // no pass: loads the account on its first search
      for (const kind of ["frames", "shots"] as const)
        expect(await everything(warming, kind), `${kind} after ${steps} steps`).toEqual(await everything(fresh, kind));
      expect(warming.rows()).toBe(fresh.rows());
    }
  });
});
