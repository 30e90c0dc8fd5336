/**
 * RAM per row of the in-memory index against recall and latency, the middle pass's layouts side
 * by side (issue 14: "RAM beyond the exact vectors ≤ 200 B per vector"):
 *
 *   node_modules/.bin/bun bench/vector-ram-bench.ts [--n=1000000] [--queries=200] [--sqlite-n=100000]
 *                                                   [--configs=4,2,2:128,4:256] [--rebuild=1] [--compact=1]
 *
 * Both layouts (refineBits 4 = 4-bit codes repeating the sign, 268 B side block; 2 = sign from the
 * scan block + 1 extra bit, 76 B) are built over the same generated set in one process, and the
 * queries are interleaved (query i on every configuration before query i + 1), so a shared,
 * loaded box slows them alike. Per layout: build seconds (adds in batches of 4 096, background
 * retrains run to the end after each batch as the event loop would), live bytes per row (arena
 * bytes in use / rows, and the parts: scan and side blocks, reserved scan blocks, id map, rowIds;
 * RSS delta of the build), then p50 / p99 / recall@10 for text-like queries (flat scan) and
 * image-like ones (probe 0.02 / 0.04). `--configs`: layouts to build and how each is searched,
 * `bits[:rescore]` (rows rescored exactly; none = the layout's default rescoreMin). `--rebuild=1`
 * retrains the lists on all rows after the adds (as bench/vector-scale-bench.ts does: listsFor, n / 256
 * at 1 M; the adds alone leave the lists of the last growth retrain, n / 1 024 at 1 M), timed apart. Set 1: `--n` clustered rows rescored from memory; set 2: `--sqlite-n` rows
 * rescored from a plain SQLite table as in bench/vector-bench.ts (the app's path).
 * `--compact=1` (issue 14, compaction): the index is built with automatic compaction off
 * (compactFreeShare: Infinity, the memory behaviour before compaction existed), measured after the
 * adds and rebuild, then compacted as the automatic one runs — copying between event-loop turns,
 * one image query (probe 0.02) served per turn meanwhile — and measured again: its work ms, wall
 * ms, turns and longest turn, the WebAssembly memory's bytes a row before / after, RssAnon
 * before, right after, after 100 queries (no forced GC) and after a forced GC, the peak RSS during
 * it (VmHWM, reset through /proc/self/clear_refs), and whether 50 text (flat) + 50 image (probe
 * 0.02) queries answer the same before and after.
 * Without it, compaction runs by itself (after retrains) and the build line shows how often. The 1-minute
 * load average is recorded beside every figure. Table to stdout, JSON to bench/results/vector-ram.json.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { SearchOptions, VectorSource } from "../src/vector/index.ts";
import { VectorIndexImpl } from "../src/vector/vector-index.ts";
import { exactScanner } from "./lib/exact.ts";
import { generateDataset, generateQueries, type Dataset } from "./lib/synthetic.ts";

const DIM = 512;
const K = 10;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const N = Number(argv.get("n") ?? 1_000_000);
const SQLITE_N = Number(argv.get("sqlite-n") ?? 100_000);
const NQ = Number(argv.get("queries") ?? 200);
const CONFIGS = (argv.get("configs") ?? "4,2,2:128,4:256").split(",").map((c) => {
  const [bits, rescore] = c.split(":").map(Number);
  return { bits: bits as 2 | 4, rescore: rescore || 0 };
});
const BITS = [...new Set(CONFIGS.map((c) => c.bits))];
const REBUILD = argv.get("rebuild") === "1";
const COMPACT = argv.get("compact") === "1";

/** A field of /proc/self/status in bytes (VmRSS, RssAnon, VmHWM). */
function procStatus(field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}
const mb = (b: number) => Math.round(b / 1e6);

const t0 = performance.now();
const load1 = () => Math.round(loadavg()[0] * 100) / 100;
const log = (msg: string) =>
  console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}   (load ${load1()})`);
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

interface Build {
  set: string;
  n: number;
  bits: number;
  buildS: number;
  rebuildS: number;
  load: number;
  rssDeltaMB: number;
  bytesPerRow: number;
  arenaBytesPerRow: number;
  parts: Record<string, number>;
  compactions?: { count: number; maxMs: number; peakMB: number };
  compact?: Record<string, number | string | boolean>;
}
interface QueryRow {
  set: string;
  n: number;
  bits: number;
  queries: string;
  variant: string;
  nq: number;
  p50: number;
  p99: number;
  recall: number;
  rescored: number;
  loadStart: number;
  loadEnd: number;
}
const builds: Build[] = [];
const results: QueryRow[] = [];

function build(set: string, ds: Dataset, bits: 2 | 4, source: VectorSource): VectorIndexImpl {
  Bun.gc(true);
  const rss0 = process.memoryUsage().rss;
  const t = performance.now();
  const index = new VectorIndexImpl({
    dim: DIM,
    source,
    refineBits: bits,
    ...(COMPACT ? { compactFreeShare: Infinity } : {}),
  });
  for (let i = 0; i < ds.n; i += 4096) {
    const batch = [];
    for (let j = i; j < Math.min(ds.n, i + 4096); j++) {
      batch.push({
        rowId: j + 1,
        vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM),
        partition: "acct",
        groupA: ds.collection[j],
        groupB: ds.video[j],
      });
    }
    index.add(batch);
    index.flushTraining();
  }
  const buildS = (performance.now() - t) / 1000;
  const t2 = performance.now();
  if (REBUILD) index.rebuild("acct");
  const rebuildS = (performance.now() - t2) / 1000;
  Bun.gc(true);
  const rss = process.memoryUsage().rss - rss0;
  const m = index.memoryStats;
  const live = m.arenaUsed + m.jsBytes;
  const perRow = (b: number) => Math.round((b / ds.n) * 10) / 10;
  const b: Build = {
    set,
    n: ds.n,
    bits,
    buildS: Math.round(buildS * 10) / 10,
    rebuildS: Math.round(rebuildS * 10) / 10,
    load: load1(),
    rssDeltaMB: Math.round(rss / 1e6),
    bytesPerRow: perRow(live),
    arenaBytesPerRow: perRow(m.arenaUsed),
    parts: {
      scanBlocks: perRow(m.scanBytes),
      sideBlocks: perRow(m.sideBytes),
      stash: perRow(m.stashBlocks * (m.scanBytes / Math.max(1, m.chunks))),
      idMap: perRow(m.idMapBytes),
      rowIds: perRow(m.rowIdBytes),
      slotsPerRow: Math.round(((m.chunks * m.chunkRows) / ds.n) * 1000) / 1000,
      arenaAllocated: perRow(m.arenaBytes),
      lists: index.listCount("acct"),
    },
  };
  const c = index.compactions;
  b.compactions = { count: c.count, maxMs: Math.round(c.maxMs * 10) / 10, peakMB: mb(c.peakBytes) };
  builds.push(b);
  log(
    `${set} n=${ds.n} refineBits ${bits}: build ${b.buildS} s + rebuild ${b.rebuildS} s, ${b.bytesPerRow} B/row live (arena ${b.arenaBytesPerRow}), RSS +${b.rssDeltaMB} MB, ${JSON.stringify(b.parts)}, compactions ${JSON.stringify(b.compactions)}`,
  );
  return index;
}

/** --compact=1: compacts the index once and measures what it gave back, what it cost and whether answers changed. */
async function measureCompaction(
  index: VectorIndexImpl,
  ds: Dataset,
): Promise<Record<string, number | string | boolean>> {
  const nq = Math.min(NQ, 50);
  const text = generateQueries(ds, nq, "text", 11),
    image = generateQueries(ds, nq, "image", 11);
  const ask = () => {
    const out: number[][] = [];
    for (let i = 0; i < nq; i++) {
      out.push(index.search(text.subarray(i * DIM, (i + 1) * DIM), { partition: "acct", k: K }).map((r) => r.rowId));
      out.push(
        index
          .search(image.subarray(i * DIM, (i + 1) * DIM), { partition: "acct", k: K, probe: 0.02 })
          .map((r) => r.rowId),
      );
    }
    return out;
  };
  const before = ask();
  Bun.gc(true);
  const m0 = index.memoryStats,
    anon0 = procStatus("RssAnon"),
    rssBefore = procStatus("VmRSS");
  let hwmReset = true;
  try {
    writeFileSync("/proc/self/clear_refs", "5"); // resets VmHWM to the current RSS
  } catch {
    hwmReset = false;
  }
  const t = performance.now();
  if (!index.compactInBackground()) throw new Error("no compaction started");
  let turns = 0,
    served = 0;
  const during: number[] = [];
  while (index.compactions.pending > 0) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    turns++;
    const qt = performance.now();
    index.search(image.subarray((turns % nq) * DIM, ((turns % nq) + 1) * DIM), {
      partition: "acct",
      k: K,
      probe: 0.02,
    });
    during.push(performance.now() - qt);
    served++;
  }
  const wallMs = performance.now() - t;
  const c = index.compactions;
  const peak = procStatus("VmHWM");
  const anonNoGc = procStatus("RssAnon");
  const after = ask();
  const anonAfterQueries = procStatus("RssAnon");
  Bun.gc(true);
  const anonGc = procStatus("RssAnon"),
    m1 = index.memoryStats;
  const same = before.every((ids, i) => ids.length === after[i].length && ids.every((id, j) => id === after[i][j]));
  const perRow = (x: number) => Math.round((x / ds.n) * 10) / 10;
  during.sort((x, y) => x - y);
  const out = {
    workMs: Math.round(c.lastMs * 10) / 10,
    cpuMs: Math.round(c.lastCpuMs * 10) / 10,
    maxSliceCpuMs: Math.round(c.maxSliceCpuMs * 10) / 10,
    wallMs: Math.round(wallMs),
    turns,
    slices: c.slices,
    maxSliceMs: Math.round(c.maxSliceMs * 10) / 10,
    queriesServedDuring: served,
    queryP50MsDuring: Math.round(pct(during, 50) * 100) / 100,
    memoryMBBefore: mb(m0.arenaBytes),
    memoryMBAfter: mb(m1.arenaBytes),
    memoryBytesPerRowBefore: perRow(m0.arenaBytes),
    memoryBytesPerRowAfter: perRow(m1.arenaBytes),
    liveBytesPerRowBefore: perRow(m0.arenaUsed + m0.jsBytes),
    liveBytesPerRowAfter: perRow(m1.arenaUsed + m1.jsBytes),
    indexBytesPerRowBefore: perRow(m0.arenaBytes + m0.jsBytes),
    indexBytesPerRowAfter: perRow(m1.arenaBytes + m1.jsBytes),
    rssAnonMBBefore: mb(anon0),
    rssAnonMBAfterNoGc: mb(anonNoGc),
    rssAnonMBAfterQueries: mb(anonAfterQueries),
    rssAnonMBAfterGc: mb(anonGc),
    peakExtraMB: hwmReset ? mb(peak - rssBefore) : "n/a (clear_refs)",
    sameAnswers: same,
    queries: 2 * nq,
    load: load1(),
  };
  log(`compact(): ${JSON.stringify(out)}`);
  return out;
}

/** Every configuration runs query i before any runs query i + 1. */
function interleaved(
  set: string,
  n: number,
  kind: string,
  Q: Float32Array,
  truth: Int32Array[],
  configs: { bits: number; variant: string; index: VectorIndexImpl; opts: Partial<SearchOptions> }[],
): void {
  const nq = truth.length;
  const lat = configs.map(() => [] as number[]);
  const rec = configs.map(() => 0);
  const resc = configs.map(() => 0);
  const loadStart = load1();
  const stats = {
    path: "empty",
    allowed: 0,
    coarse: 0,
    middle: 0,
    rescored: 0,
    ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
  } as NonNullable<SearchOptions["stats"]>;
  for (let i = -3; i < nq; i++) {
    const qi = i < 0 ? nq + i : i; // three warm-up queries from the end
    const q = Q.subarray(qi * DIM, (qi + 1) * DIM);
    configs.forEach((c, ci) => {
      const t = performance.now();
      const got = c.index.search(q, { partition: "acct", k: K, stats, ...c.opts });
      const ms = performance.now() - t;
      if (i < 0) return;
      lat[ci].push(ms);
      resc[ci] += stats.rescored;
      const want = new Set(Array.from(truth[qi], (r) => r + 1));
      rec[ci] += got.filter((g) => want.has(g.rowId)).length / K;
    });
  }
  const loadEnd = load1();
  configs.forEach((c, ci) => {
    const sorted = lat[ci].slice().sort((a, b) => a - b);
    const r: QueryRow = {
      set,
      n,
      bits: c.bits,
      queries: kind,
      variant: c.variant,
      nq,
      p50: pct(sorted, 50),
      p99: pct(sorted, 99),
      recall: rec[ci] / nq,
      rescored: Math.round(resc[ci] / nq),
      loadStart,
      loadEnd,
    };
    results.push(r);
    log(
      `${set} n=${n} ${kind.padEnd(5)} bits ${c.bits} ${c.variant.padEnd(22)} p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} recall ${r.recall.toFixed(3)} rescored ${r.rescored}`,
    );
  });
}

async function runSet(
  set: string,
  n: number,
  source: (ds: Dataset) => VectorSource,
  cleanup?: () => void,
): Promise<void> {
  const scanner = exactScanner(n, DIM);
  let t = performance.now();
  const ds = generateDataset({ n, dim: DIM, kind: "clustered", seed: 1, out: scanner.vectors });
  const text = generateQueries(ds, NQ, "text", 7),
    image = generateQueries(ds, NQ, "image", 7);
  const truthText = scanner.topK(text, K),
    truthImage = scanner.topK(image, K);
  log(`${set} n=${n}: generated + ground truth in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const src = source(ds);
  const idx = new Map(BITS.map((b) => [b, build(set, ds, b, src)] as const));
  if (COMPACT)
    for (const [bits, index] of idx)
      builds.find((b) => b.set === set && b.bits === bits)!.compact = await measureCompaction(index, ds);
  t = performance.now();
  const configs = (probe?: number) =>
    CONFIGS.map(({ bits, rescore: r }) => ({
      bits,
      index: idx.get(bits)!,
      variant: `${probe ? `probe ${probe}` : "flat"}${r ? `, rescore ${r}` : ""}`,
      opts: { ...(probe ? { probe } : {}), ...(r ? { rescore: r } : {}) },
    }));
  interleaved(set, n, "text", text, truthText, configs());
  for (const probe of [0.02, 0.04]) interleaved(set, n, "image", image, truthImage, configs(probe));
  cleanup?.();
}

const memorySource = (ds: Dataset): VectorSource => ({
  getVectors: (ids) => ids.map((id) => ds.vectors.subarray((id - 1) * DIM, id * DIM)),
});

const load0 = loadavg();
if (N > 0) await runSet("clustered, memory source", N, memorySource);
Bun.gc(true);
if (SQLITE_N > 0) {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-vector-ram-"));
  let db: Database | null = null;
  try {
    await runSet(
      "clustered, SQLite source",
      SQLITE_N,
      (ds) => {
        db = new Database(join(dir, "vecs.db"));
        db.exec(
          "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; PRAGMA mmap_size=2147418112;",
        );
        db.exec("CREATE TABLE vecs (id INTEGER PRIMARY KEY, e BLOB NOT NULL)");
        const ins = db.query("INSERT INTO vecs (id, e) VALUES (?, ?)");
        db.transaction(() => {
          for (let i = 0; i < ds.n; i++) {
            const v = ds.vectors.subarray(i * DIM, (i + 1) * DIM);
            ins.run(i + 1, new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
          }
        })();
        const d = db;
        // As bench/vector-bench.ts: `SELECT … WHERE id IN (…)`, like the store's frame_vectors read.
        return {
          getVectors(rowIds) {
            const byId = new Map<number, Float32Array>();
            for (let i = 0; i < rowIds.length; i += 999) {
              const part = rowIds.slice(i, i + 999);
              const rs = d
                .query<{ id: number; e: Uint8Array }, number[]>(
                  `SELECT id, e FROM vecs WHERE id IN (${part.map(() => "?").join(",")})`,
                )
                .all(...part);
              for (const r of rs) byId.set(r.id, new Float32Array(r.e.buffer, r.e.byteOffset, r.e.byteLength / 4));
            }
            return rowIds.map((id) => byId.get(id));
          },
        };
      },
      () => (db as Database | null)?.close(),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  "\nset | n | refineBits | build s (+ rebuild) | B/row live (arena) | scan + side + stash + idMap + rowIds | RSS + MB | load",
);
for (const b of builds) {
  const p = b.parts;
  console.log(
    `${b.set} | ${b.n} | ${b.bits} | ${b.buildS} (+ ${b.rebuildS}) | ${b.bytesPerRow} (${b.arenaBytesPerRow}) | ${p.scanBlocks} + ${p.sideBlocks} + ${p.stash} + ${p.idMap} + ${p.rowIds} | ${b.rssDeltaMB} | ${b.load}`,
  );
}
if (COMPACT) {
  console.log(
    "\nset | n | refineBits | compaction work ms, CPU ms (wall, turns, longest turn ms, its CPU ms) | image p50 ms during | memory B/row before → after | index B/row (memory + JS) before → after | RssAnon MB before → after (no GC / after queries / GC) | peak extra MB | same answers | load",
  );
  for (const b of builds) {
    const c = b.compact!;
    console.log(
      `${b.set} | ${b.n} | ${b.bits} | ${c.workMs}, ${c.cpuMs} (${c.wallMs}, ${c.turns}, ${c.maxSliceMs}, ${c.maxSliceCpuMs}) | ${c.queryP50MsDuring} | ${c.memoryBytesPerRowBefore} → ${c.memoryBytesPerRowAfter} | ${c.indexBytesPerRowBefore} → ${c.indexBytesPerRowAfter} | ${c.rssAnonMBBefore} → ${c.rssAnonMBAfterNoGc} / ${c.rssAnonMBAfterQueries} / ${c.rssAnonMBAfterGc} | ${c.peakExtraMB} | ${c.sameAnswers} (${c.queries}) | ${c.load}`,
    );
  }
}
console.log("\nset | n | queries | refineBits | variant | p50 ms | p99 ms | recall@10 | rescored | load start–end");
for (const r of results) {
  console.log(
    `${r.set} | ${r.n} | ${r.queries} | ${r.bits} | ${r.variant} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.recall.toFixed(3)} | ${r.rescored} | ${r.loadStart}–${r.loadEnd}`,
  );
}
const env = {
  date: new Date().toISOString(),
  bun: Bun.version,
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  loadavgStart: load0,
  loadavgEnd: loadavg(),
  maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  seconds: Math.round((performance.now() - t0) / 1000),
  queriesPerSet: NQ,
  argv: process.argv.slice(2),
};
console.log(`\n${JSON.stringify(env)}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(join(import.meta.dir, "results", "vector-ram.json"), JSON.stringify({ env, builds, results }, null, 2));
