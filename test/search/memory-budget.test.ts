/**
 * vector_memory_budget (issue 27): the in-memory index never grows past it. An account whose rows
 * would pass it is not held in memory but searched with exact scans from the database: its answers
 * stay complete and right, /readyz, the status file `doctor` reads and the doctor command say so,
 * and nothing is retried — neither the budget nor a WebAssembly memory that cannot grow. A start
 * after a load that never finished (an OOM kill) loads less, so the kill does not recur.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { json, metric } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { makeTempDir, removeDir } from "../helpers/temp.ts";
import { readAdmissionStatus } from "../../src/search/memory-admission.ts";
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

const WORDS = { dog: concept(0), boat: concept(1) };
const embedder = () => new HandEmbedder(WORDS);
const EXACT = { exactBelow: 1_000_000 };

let t: SearchTestApp | null = null;
let dir = "";
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
  t = null;
  if (dir) removeDir(dir);
  dir = "";
});

async function account(app: SearchTestApp, name: string, videos: number, seed: number) {
  const tenant = await createTenant(app, name);
  const col = await createCollection(app, tenant.accountId, "c");
  for (let i = 0; i < videos; i++) {
    const v = await addVideo(app, tenant.accountId, col, { duration: 100 });
    const r = rng(seed * 100 + i);
    await indexVideo(app, v, {
      frames: Array.from({ length: 100 }, (_, k) => ({
        timestamp: k,
        shotIndex: Math.floor(k / 10),
        embedding: k % 25 === 0 ? near(i % 2, 0.6, r) : background(r),
      })),
    });
  }
  return tenant;
}

async function untilWarm(app: SearchTestApp): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await metric(app, "vsearch_search_index_loading")) === 1 && Date.now() < deadline) await Bun.sleep(5);
  expect(await metric(app, "vsearch_search_index_loading")).toBe(0);
}

async function answer(app: SearchTestApp, accountId: string, query: string, fromStore = false) {
  const domain = fromStore ? searchDomainOf(app, { embedder: embedder(), vectorIndex: EXACT }) : null;
  const svc = domain?.search ?? app.app.services.search;
  const r = await svc.search(accountId, searchRequest({ query, min_score: "0", per_page: "50", modes: "video" }));
  return r.videos.map((v) => [v.video_id, v.segments.map((s) => [s.timestamp_start, s.score])]);
}

describe("vector_memory_budget", () => {
  it("an account past the budget is searched from the database, says so, and answers right; nothing crash-loops", async () => {
    dir = makeTempDir("vsearch-budget-");
    // 0.6 MiB: the index's first memory (256 KiB) and a few thousand 64-d rows (~60 B each, with
    // the headroom a retrain needs): the small account fits, the big one does not.
    t = await startSearchApp({
      embedder: embedder(),
      dataDir: dir,
      vectorIndex: EXACT,
      env: { VSEARCH_VECTOR_MEMORY_BUDGET: "0.6" },
    });
    const small = await account(t, "small", 3, 1); // 300 rows
    const big = await account(t, "big", 60, 2); // 6 000 rows
    await t.app.start();
    await untilWarm(t);

    const held = (await metric(t, "vsearch_search_index_vectors"))!;
    expect(held).toBe(300);
    const ready = await json(await t.request("GET", "/readyz"));
    expect(ready.status).toBe("ready");
    expect(ready.checks.search_index).toMatch(
      /1 account\(s\) over vector_memory_budget \(0.6 MiB\): searched with exact scans from the database/,
    );
    const status = readAdmissionStatus(dir)!;
    expect(status.degraded.map((d) => d.accountId)).toEqual([big.accountId]);

    for (const [a, q] of [
      [big.accountId, "dog"],
      [big.accountId, "boat"],
      [small.accountId, "dog"],
    ] as const)
      expect(await answer(t, a, q)).toEqual(await answer(t, a, q, true));

    // New rows of the degraded account stay out of memory; its search still sees them.
    const col = await createCollection(t, big.accountId, "later");
    const v = await addVideo(t, big.accountId, col, { duration: 100 });
    const r = rng(999);
    await indexVideo(t, v, {
      frames: Array.from({ length: 100 }, (_, k) => ({
        timestamp: k,
        embedding: k === 50 ? near(1, 0.95, r) : background(r),
      })),
    });
    expect(await metric(t, "vsearch_search_index_vectors")).toBe(held);
    expect(JSON.stringify(await answer(t, big.accountId, "boat"))).toContain(v);

    // doctor (another process) reads what the server wrote.
    const doctor = await runCli(
      ["--data-dir", dir, "--json", "doctor"],
      { VSEARCH_VECTOR_MEMORY_BUDGET: "0.6" },
      60_000,
    );
    const report = JSON.parse(doctor.stdout);
    expect(report.search_index.over_budget_accounts.map((d: { accountId: string }) => d.accountId)).toEqual([
      big.accountId,
    ]);
    expect(report.warnings.some((w: { code: string }) => w.code === "VECTOR_MEMORY_BUDGET")).toBe(true);
  }, 120_000);

  it("a WebAssembly memory that cannot grow settles the account once: the load ends, no retry", async () => {
    dir = makeTempDir("vsearch-budget-");
    t = await startSearchApp({
      embedder: embedder(),
      dataDir: dir,
      vectorIndex: EXACT,
      env: { VSEARCH_VECTOR_MEMORY_BUDGET: "0" },
    });
    const a = await account(t, "a", 40, 3);
    const grow = vi.spyOn(WebAssembly.Memory.prototype, "grow").mockImplementation(() => {
      throw new RangeError("WebAssembly.Memory.grow(): Maximum memory size exceeded");
    });
    await t.app.start();
    await untilWarm(t);
    const calls = grow.mock.calls.length;
    expect(calls).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    await Bun.sleep(50);
    expect(grow.mock.calls.length).toBe(calls); // never tried again
    grow.mockRestore();
    const ready = await json(await t.request("GET", "/readyz"));
    expect(ready.checks.search_index).toMatch(/^warm.*1 account\(s\) over vector_memory_budget/);
    expect(readAdmissionStatus(dir)!.degraded[0].reason).toMatch(/could not grow/);
    expect(await answer(t, a.accountId, "dog")).toEqual(await answer(t, a.accountId, "dog", true));
  }, 120_000);

  it("a load that never finished (killed) makes the next start load less", async () => {
    dir = makeTempDir("vsearch-budget-");
    mkdirSync(join(dir, "index"), { recursive: true });
    // What a start killed at 0.5 MiB of index leaves behind: this one loads at most 0.35 MiB.
    writeFileSync(join(dir, "index", "warm.json"), JSON.stringify({ pid: 4242, reachedBytes: 0.5 * 2 ** 20 }));
    t = await startSearchApp({
      embedder: embedder(),
      dataDir: dir,
      vectorIndex: EXACT,
      env: { VSEARCH_VECTOR_MEMORY_BUDGET: "0" },
    });
    const a = await account(t, "a", 40, 4);
    await t.app.start();
    await untilWarm(t);
    const status = readAdmissionStatus(dir)!;
    expect(status.budgetReason).toMatch(/the last start \(pid 4242\) stopped while loading at 0.5 MiB \(killed\?\)/);
    expect(status.degraded.map((d) => d.accountId)).toEqual([a.accountId]);
    expect(await answer(t, a.accountId, "boat")).toEqual(await answer(t, a.accountId, "boat", true));
  }, 120_000);
});
