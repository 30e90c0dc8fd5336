/**
 * Instant restarts (issue 27): `close()` saves the in-memory index to `<data dir>/index/vectors.snap`
 * with the change-log position it reflects, and the next `start()` loads it and reads again only
 * the videos changed after that position — also those changed while no server ran (another
 * process, here a second app that never starts), also a video deleted whose row ids a new video
 * then took. A damaged or foreign snapshot (another format, other index options, another
 * database's) is ignored (and says so in /readyz) and the index is read from the store. Every answer must equal a fresh load's from the store.
 */
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { testBackend } from "../pg/backend.ts";
import { json, metric } from "../helpers/app.ts";
import { makeTempDir, removeDir } from "../helpers/temp.ts";
import type { MemoryIndexOptions } from "../../src/search/memory-backend.ts";
import { SearchStore } from "../../src/search/store.ts";
import {
  addVideo,
  background,
  concept,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  near,
  rng,
  searchDomainOf,
  searchRequest,
  startSearchApp,
  type SearchTestApp,
} from "./helpers.ts";

const WORDS = { dog: concept(0), boat: concept(1), tree: concept(2) };
const embedder = () => new HandEmbedder(WORDS);
/** Exact ranking on both sides: an approximate index's answers depend on the order rows came in. */
const EXACT: MemoryIndexOptions = { exactBelow: 1_000_000 };

let dir = "";
let open: SearchTestApp[] = [];
afterEach(async () => {
  for (const t of open) await t.close();
  open = [];
  if (dir) removeDir(dir);
  dir = "";
});

async function app(o: { start?: boolean; vectorIndex?: MemoryIndexOptions } = {}): Promise<SearchTestApp> {
  const t = await startSearchApp({ embedder: embedder(), dataDir: dir, vectorIndex: o.vectorIndex ?? EXACT });
  open.push(t);
  if (o.start !== false) await t.app.start();
  return t;
}

async function stop(t: SearchTestApp): Promise<void> {
  open = open.filter((x) => x !== t);
  await t.close();
}

async function fill(t: SearchTestApp, videoId: string, seed: number, c: number, frames = 60): Promise<void> {
  const r = rng(seed);
  await indexVideo(t, videoId, {
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

async function untilWarm(t: SearchTestApp): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await metric(t, "vsearch_search_index_loading")) === 1 && Date.now() < deadline) await Bun.sleep(5);
  expect(await metric(t, "vsearch_search_index_loading")).toBe(0);
}

const readyLine = async (t: SearchTestApp) => (await json(await t.request("GET", "/readyz"))).checks.search_index;

type Answer = unknown;
async function answer(t: SearchTestApp, accountId: string, query: string): Promise<Answer> {
  const r = await t.app.services.search.search(accountId, searchRequest({ query, min_score: "0", per_page: "50" }));
  return r.videos.map((v) => [v.video_id, v.segments.map((s) => [s.timestamp_start, s.type, s.score])]);
}

/** The same search on a search domain that reads the account from the store now. */
async function fresh(t: SearchTestApp, accountId: string, query: string): Promise<Answer> {
  const domain = searchDomainOf(t, { embedder: embedder(), vectorIndex: EXACT });
  const r = await domain.search.search(accountId, searchRequest({ query, min_score: "0", per_page: "50" }));
  return r.videos.map((v) => [v.video_id, v.segments.map((s) => [s.timestamp_start, s.type, s.score])]);
}

/** An account with `n` videos, written by a first app, which is started, warmed and closed (saving the snapshot). */
async function seeded(n = 12) {
  dir = makeTempDir("vsearch-snap-");
  const t = await app({ start: false });
  const tenant = await createTenant(t, "A");
  const col = await createCollection(t, tenant.accountId, "c");
  const videos: string[] = [];
  for (let i = 0; i < n; i++) {
    const v = await addVideo(t, tenant.accountId, col, { duration: 60 });
    await fill(t, v, 100 + i, i % 3);
    videos.push(v);
  }
  await t.app.start();
  await untilWarm(t);
  const before = await answer(t, tenant.accountId, "dog");
  await stop(t);
  const snap = join(dir, "index", "vectors.snap");
  expect(existsSync(snap)).toBe(true);
  return { tenant, col, videos, before, snap };
}

describe("index snapshot across restarts", () => {
  it("a restart loads the snapshot and answers as before", async () => {
    const { tenant, before } = await seeded();
    const t = await app();
    await untilWarm(t);
    expect(await readyLine(t)).toMatch(/^warm \(from its snapshot, 0 changed video\(s\) read again\)$/);
    expect(await answer(t, tenant.accountId, "dog")).toEqual(before);
    expect(await answer(t, tenant.accountId, "boat")).toEqual(await fresh(t, tenant.accountId, "boat"));
  });

  it("changes made while no server ran are read again: re-indexed, deleted, new, and a new video on freed row ids", async () => {
    const { tenant, col, videos } = await seeded();
    // Another process (an app that never starts: no hooks into a running index) changes the store.
    const other = await app({ start: false });
    // The last video's rows hold the highest ids: deleted, a new video takes the same ids.
    const last = videos[videos.length - 1];
    const freed = (await other.index.framesOf(last)).map((f) => f.id);
    await other.app.services.videos.delete(tenant.accountId, last);
    const reused = await addVideo(other, tenant.accountId, col, { duration: 60 });
    await fill(other, reused, 901, 0);
    const taken = (await other.index.framesOf(reused)).map((f) => f.id);
    // SQLite hands freed row ids out again; PostgreSQL's identities never do (the rest holds on both).
    if (testBackend() === "sqlite") expect(taken.filter((id) => freed.includes(id)).length).toBeGreaterThan(0);
    else expect(taken.filter((id) => freed.includes(id))).toEqual([]);
    await fill(other, videos[0], 900, 1); // re-indexed: its rows replaced
    await other.app.services.videos.delete(tenant.accountId, videos[3]);
    await stop(other);

    // What the restart reads from the store: the changed videos' rows only, never a pass over every row.
    const ofVideo = vi.spyOn(SearchStore.prototype, "indexRowsOfVideo");
    const pass = vi.spyOn(SearchStore.prototype, "indexRowsAfter");
    const t = await app();
    await untilWarm(t);
    const readVideos = new Set(ofVideo.mock.calls.map(([, videoId]) => videoId));
    const passPages = pass.mock.calls.length;
    ofVideo.mockRestore();
    pass.mockRestore();
    // Four changed (two deleted: dropped without a read), the other ten come from the file alone.
    expect(await readyLine(t)).toMatch(/from its snapshot, 4 changed video\(s\) read again/);
    expect(passPages).toBe(0);
    expect([...readVideos].sort()).toEqual([reused, videos[0]].sort());
    for (const q of ["dog", "boat", "tree"])
      expect(await answer(t, tenant.accountId, q)).toEqual(await fresh(t, tenant.accountId, q));
    const ids = JSON.stringify(await answer(t, tenant.accountId, "dog"));
    expect(ids).not.toContain(videos[3]);
    expect(ids).toContain(reused);
  });

  it("after a crash (no save at close) the older snapshot plus the changes since give the right index", async () => {
    const { tenant, col, snap } = await seeded();
    const old = `${snap}.old`;
    copyFileSync(snap, old);
    const t = await app();
    await untilWarm(t);
    // Changes through the running server's hooks, which its close() would save…
    const v = await addVideo(t, tenant.accountId, col, { duration: 60 });
    await fill(t, v, 555, 2);
    await stop(t);
    // …but it "crashed": the snapshot on disk is the one from before.
    copyFileSync(old, snap);
    const t2 = await app();
    await untilWarm(t2);
    expect(await readyLine(t2)).toMatch(/from its snapshot, 1 changed video\(s\) read again/);
    expect(await answer(t2, tenant.accountId, "tree")).toEqual(await fresh(t2, tenant.accountId, "tree"));
    expect(JSON.stringify(await answer(t2, tenant.accountId, "tree"))).toContain(v);
  });

  it("rows written but not yet announced (a stage not committed) keep the watermark below them", async () => {
    const { tenant, col } = await seeded();
    const t = await app();
    await untilWarm(t);
    const v = await addVideo(t, tenant.accountId, col, { duration: 60 });
    // The pipeline writes a stage's frames, then commits the stage (the event); the server stops in between.
    const r = rng(77);
    await t.index.replaceFrames(
      { videoId: v, accountId: tenant.accountId, collectionId: col },
      Array.from({ length: 30 }, (_, i) => ({ shotIndex: 0, timestamp: i, embedding: near(1, 0.6, r) })),
      "hand-clip@test",
    );
    await stop(t);
    const t2 = await app();
    await untilWarm(t2);
    expect(await readyLine(t2)).toMatch(/from its snapshot, 1 changed video\(s\) read again/);
    expect(await answer(t2, tenant.accountId, "boat")).toEqual(await fresh(t2, tenant.accountId, "boat"));
    expect(JSON.stringify(await answer(t2, tenant.accountId, "boat"))).toContain(v);
  });

  it("a damaged or foreign snapshot is ignored, said so, and the index read from the store; the next close writes a good one", async () => {
    const { tenant, snap } = await seeded();
    const bytes = readFileSync(snap);
    const damaged = Uint8Array.from(bytes);
    damaged[Math.floor(damaged.length / 2)] ^= 0x40;
    writeFileSync(snap, damaged);
    const t = await app();
    await untilWarm(t);
    expect(await readyLine(t)).toMatch(/snapshot not used \(.*hash.*\): read from the store/);
    expect(await answer(t, tenant.accountId, "dog")).toEqual(await fresh(t, tenant.accountId, "dog"));
    await stop(t);

    const t2 = await app();
    await untilWarm(t2);
    expect(await readyLine(t2)).toMatch(/from its snapshot/);
    await stop(t2);

    // Another format (the file's format number), and other index options: ignored too.
    const future = Uint8Array.from(readFileSync(snap));
    future[8] = 99;
    writeFileSync(snap, future);
    const t3 = await app();
    await untilWarm(t3);
    expect(await readyLine(t3)).toMatch(/snapshot not used \(file format 99/);
    await stop(t3);
    const t4 = await app({ vectorIndex: { exactBelow: 1_000_000, trainAt: 50_000 } });
    await untilWarm(t4);
    expect(await readyLine(t4)).toMatch(/snapshot not used \(made with other index options\)/);
    expect(await answer(t4, tenant.accountId, "boat")).toEqual(await fresh(t4, tenant.accountId, "boat"));
  });

  it("another database's snapshot (its change log counts the same numbers) is not used", async () => {
    // Two data dirs with the same history of changes: the snapshot of one, copied into the other.
    const first = await seeded();
    const mine = readFileSync(first.snap);
    const firstDir = dir;
    dir = "";
    const second = await seeded();
    removeDir(firstDir);
    writeFileSync(second.snap, mine);
    const t = await app();
    await untilWarm(t);
    expect(await readyLine(t)).toMatch(/snapshot not used \(made for another database\): read from the store/);
    expect(await answer(t, second.tenant.accountId, "dog")).toEqual(await fresh(t, second.tenant.accountId, "dog"));
    expect(JSON.stringify(await answer(t, second.tenant.accountId, "dog"))).not.toContain(first.videos[0]);
  });
});
