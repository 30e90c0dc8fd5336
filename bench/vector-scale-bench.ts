/**
 * Vector search at scale: vsearch's index (src/vector, inverted lists) against usearch (HNSW,
 * npm, a benchmark peer only) on the same synthetic 512-d CLIP-like vectors and queries.
 *
 *   node_modules/.bin/bun bench/vector-scale-bench.ts [--sizes=100000,1000000] [--queries=200]
 *     [--probes=0.02,0.04,0.08,0.16] [--efs=16,64,256] [--usearch=1] [--usearch-threads=1] [--usearch-max=N]
 *
 * Per size: build time and RAM (RSS delta after GC), then p50/p99 and recall@10 against an exact
 * scan for text-like and image-like queries, and for vsearch a 1-of-20 collection filter and a
 * one-video filter (filters applied before ranking; usearch has none, so it has no such row).
 * vsearch's `probe` (share of rows read) and usearch's expansion_search are swept so that the
 * two can be compared at equal recall. Both run single-threaded, side by side in one process, and
 * every row carries the load average at the time it was measured: the box is shared.
 *
 * vsearch rescoring reads exact vectors from an in-memory array here (the app reads
 * frame_vectors in SQLite: +0.3–0.9 ms, see bench/vector-bench.ts); usearch keeps its own f32
 * copy of every vector (2 KiB per row) inside its index, which is counted in its RAM.
 *
 * Where it stops: the ground-truth scanner and the dataset live in one WebAssembly memory
 * (≤ 4 GiB: ~1.9 M × 512 f32), so sizes above 1.9 M are refused; see BENCHMARKS.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import usearch from "usearch";
import { createVectorIndex, type SearchStats, type VectorSource } from "../src/vector/index.ts";
import { exactScanner } from "./lib/exact.ts";
import { runQueries } from "./lib/run-queries.ts";
import { generateDataset, generateQueries } from "./lib/synthetic.ts";

const DIM = 512;
const K = 10;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const list = (name: string, def: string) => (argv.get(name) ?? def).split(",").filter(Boolean).map(Number);
const SIZES = list("sizes", "100000,1000000");
const NQ = Number(argv.get("queries") ?? 200);
const PROBES = list("probes", "0.02,0.04,0.08,0.16");
const EFS = list("efs", "16,64,256");
const WITH_USEARCH = argv.get("usearch") !== "0";
const U_THREADS = Number(argv.get("usearch-threads") ?? 1);
/** usearch's HNSW build is the slow part (100 k rows: 93 s on one thread at load ~10, 386 s on two at load ~24). */
const U_MAX = Number(argv.get("usearch-max") ?? Infinity);
const MAX_ROWS = Math.floor((4 * 2 ** 30 - 2 ** 24) / (DIM * 4 + 32));

interface Row {
  n: number;
  engine: "vsearch" | "usearch";
  queries: string;
  setting: string;
  nq: number;
  p50: number;
  p99: number;
  recall: number;
  load1: number;
  stages?: Record<string, number>;
}
interface Build {
  n: number;
  engine: string;
  buildS: number;
  rssMB: number;
  bytesPerRow: number;
  load1: number;
  note: string;
}
const rows: Row[] = [];
const builds: Build[] = [];
const t0 = performance.now();
const log = (msg: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(5)} s] ${msg}`);
const load1 = () => Math.round(loadavg()[0] * 100) / 100;
const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
const rss = () => {
  Bun.gc(true);
  return process.memoryUsage().rss;
};

function measure(base: Pick<Row, "n" | "engine" | "queries" | "setting">, Q: Float32Array, truth: Int32Array[], search: (q: Float32Array, i: number) => number[]): Row {
  const { nq, lat, recall } = runQueries(Q, DIM, truth, search);
  lat.sort((a, b) => a - b);
  const row: Row = { ...base, nq, p50: pct(lat, 50), p99: pct(lat, 99), recall, load1: load1() };
  rows.push(row);
  log(`n=${row.n} ${row.engine.padEnd(7)} ${row.queries.padEnd(11)} ${row.setting.padEnd(16)} p50 ${row.p50.toFixed(2)} p99 ${row.p99.toFixed(2)} recall ${row.recall.toFixed(3)} load ${row.load1}`);
  return row;
}

function runSize(n: number): void {
  if (n > MAX_ROWS) {
    log(`n=${n}: skipped — the exact ground truth holds the set in one WebAssembly memory (≤ ${MAX_ROWS} rows)`);
    return;
  }
  const scanner = exactScanner(n, DIM);
  let t = performance.now();
  const ds = generateDataset({ n, dim: DIM, kind: "clustered", seed: 1, out: scanner.vectors });
  log(`n=${n}: generated in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const text = generateQueries(ds, NQ, "text", 7), image = generateQueries(ds, NQ, "image", 7);
  const textC = generateQueries(ds, NQ / 2, "text", 8), textV = generateQueries(ds, NQ / 2, "text", 9);
  const coll = Int32Array.from({ length: NQ / 2 }, (_, i) => i % 20);
  const vids = Int32Array.from({ length: NQ / 2 }, (_, i) => ds.video[(i * 7919) % n]);
  const keepC = Array.from({ length: 20 }, (_, c) => Uint8Array.from(ds.collection, (x) => (x === c ? 1 : 0)));
  const sets = [
    { name: "text", Q: text, truth: scanner.topK(text, K) },
    { name: "image", Q: image, truth: scanner.topK(image, K) },
  ];
  const truthC = scanner.topK(textC, K, (q) => keepC[coll[q]]);
  const imageC = generateQueries(ds, NQ / 2, "image", 8);
  const truthIC = scanner.topK(imageC, K, (q) => keepC[coll[q]]);
  const truthV = scanner.topK(textV, K, (q) => Uint8Array.from(ds.video, (x) => (x === vids[q] ? 1 : 0)));
  log(`n=${n}: ground truth in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // ---- vsearch ----
  const source: VectorSource = { getVectors: (ids) => ids.map((id) => ds.vectors.subarray(id * DIM, (id + 1) * DIM)) };
  let before = rss();
  t = performance.now();
  const index = createVectorIndex({ dim: DIM, source });
  for (let i = 0; i < n; i += 4096) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 4096); j++) {
      batch.push({ rowId: j, vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM), partition: "acct", groupA: ds.collection[j], groupB: ds.video[j] });
    }
    index.add(batch);
  }
  const addS = (performance.now() - t) / 1000;
  // Lists are trained as the partition grows (last at n/4); a rebuild retrains them on all rows,
  // as the app would after loading an account.
  t = performance.now();
  index.rebuild("acct");
  const rebuildS = (performance.now() - t) / 1000;
  let buildS = addS + rebuildS;
  let grown = rss() - before;
  builds.push({
    n, engine: "vsearch", buildS, rssMB: Math.round(grown / 1e6), bytesPerRow: Math.round(index.memoryBytes / n), load1: load1(),
    note: `add ${addS.toFixed(1)} s + rebuild ${rebuildS.toFixed(1)} s, ${index.listCount("acct")} lists, index ${Math.round(index.memoryBytes / 1e6)} MB`,
  });
  log(`n=${n}: vsearch built in ${buildS.toFixed(1)} s, RSS +${Math.round(grown / 1e6)} MB, ${Math.round(index.memoryBytes / n)} B/row, ${index.listCount("acct")} lists`);
  const stats: SearchStats = { path: "empty", allowed: 0, coarse: 0, middle: 0, rescored: 0, ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 } };
  const vs = (probe: number | undefined, allowOf?: (i: number) => { collections?: number[]; videos?: number[] }) => {
    const agg: Record<string, number> = { scanned: 0, coarse: 0, filter: 0, scan: 0, estimate: 0, rescore: 0 };
    let m = 0;
    const fn = (q: Float32Array, i: number) => {
      const out = index.search(q, { partition: "acct", k: K, probe, allow: allowOf?.(i), stats }).map((r) => r.rowId);
      m++;
      agg.scanned += stats.scanned ?? 0;
      agg.coarse += stats.coarse;
      for (const key of ["filter", "scan", "estimate", "rescore"] as const) agg[key] += stats.ms[key];
      return out;
    };
    return { fn, stages: () => Object.fromEntries(Object.entries(agg).map(([k2, v]) => [k2, Math.round((v / m) * 100) / 100])) };
  };
  for (const s of sets) {
    for (const probe of [undefined, ...PROBES]) {
      const h = vs(probe);
      measure({ n, engine: "vsearch", queries: s.name, setting: probe === undefined ? "default" : `probe=${probe}` }, s.Q, s.truth, h.fn).stages = h.stages();
    }
  }
  {
    const h = vs(undefined, (i) => ({ collections: [coll[i]] }));
    measure({ n, engine: "vsearch", queries: "text+coll", setting: "default" }, textC, truthC, h.fn).stages = h.stages();
    const hi = vs(0.04, (i) => ({ collections: [coll[i]] }));
    measure({ n, engine: "vsearch", queries: "image+coll", setting: "probe=0.04" }, imageC, truthIC, hi.fn).stages = hi.stages();
    const hv = vs(undefined, (i) => ({ videos: [vids[i]] }));
    measure({ n, engine: "vsearch", queries: "text+video", setting: "default" }, textV, truthV, hv.fn).stages = hv.stages();
  }
  // Incremental writes on the built index: a 300-frame video in and out again.
  {
    const batch = Array.from({ length: 300 }, (_, j) => ({ rowId: n + j, vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM), partition: "acct", groupA: 0, groupB: -1 }));
    let tw = performance.now();
    index.add(batch);
    const addMs = performance.now() - tw;
    tw = performance.now();
    index.remove(batch.map((b) => b.rowId));
    log(`n=${n}: vsearch add 300 rows ${addMs.toFixed(2)} ms, remove ${(performance.now() - tw).toFixed(2)} ms`);
  }

  // ---- usearch (HNSW, f32, defaults but expansion_search) ----
  if (WITH_USEARCH && n <= U_MAX) {
    const keys = new BigUint64Array(n);
    for (let i = 0; i < n; i++) keys[i] = BigInt(i);
    for (const [ei, efs] of EFS.entries()) {
      // expansion_search is fixed at construction: the graph is built once and reloaded per value.
      before = rss();
      t = performance.now();
      const u = new usearch.Index({ dimensions: DIM, metric: usearch.MetricKind.Cos, quantization: usearch.ScalarKind.F32, connectivity: 0, expansion_add: 0, expansion_search: efs, multi: false });
      if (ei === 0) {
        for (let i = 0; i < n; i += 65536) u.add(keys.subarray(i, Math.min(n, i + 65536)), ds.vectors.subarray(i * DIM, Math.min(n, i + 65536) * DIM), U_THREADS);
        buildS = (performance.now() - t) / 1000;
        grown = rss() - before;
        builds.push({ n, engine: "usearch", buildS, rssMB: Math.round(grown / 1e6), bytesPerRow: Math.round(grown / n), load1: load1(), note: `HNSW f32, ${U_THREADS} thread(s), vectors included` });
        log(`n=${n}: usearch built in ${buildS.toFixed(1)} s (${U_THREADS} thread), RSS +${Math.round(grown / 1e6)} MB`);
        u.save(join(dirFor(), `u-${n}.usearch`));
      } else {
        u.load(join(dirFor(), `u-${n}.usearch`));
      }
      for (const s of sets) {
        measure({ n, engine: "usearch", queries: s.name, setting: `ef=${efs}` }, s.Q, s.truth, (q) => Array.from(u.search(q, K, 1).keys, Number));
      }
    }
  }
}

let benchDir = "";
function dirFor(): string {
  if (!benchDir) {
    benchDir = join(import.meta.dir, "results", "usearch-tmp");
    mkdirSync(benchDir, { recursive: true });
  }
  return benchDir;
}

const load0 = loadavg();
const save = () => {
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(join(import.meta.dir, "results", "vector-scale.json"), JSON.stringify({ loadavgStart: load0, builds, rows }, null, 2));
};
for (const n of SIZES) {
  runSize(n);
  save(); // a run stopped early keeps the sizes it finished
  Bun.gc(true);
}
if (benchDir) for (const n of SIZES) Bun.file(join(benchDir, `u-${n}.usearch`)).delete?.().catch(() => {});

const fmt = (header: string[], table: string[][]) => {
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
  return `${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${table.map(line).join("\n")}`;
};
console.log(`\n${fmt(["n", "engine", "build s", "RSS MB", "B/row", "load1", "note"], builds.map((b) => [String(b.n), b.engine, b.buildS.toFixed(1), String(b.rssMB), String(b.bytesPerRow), String(b.load1), b.note]))}`);
console.log(`\n${fmt(["n", "engine", "queries", "setting", "nq", "p50 ms", "p99 ms", "recall@10", "load1"], rows.map((r) => [String(r.n), r.engine, r.queries, r.setting, String(r.nq), r.p50.toFixed(2), r.p99.toFixed(2), r.recall.toFixed(3), String(r.load1)]))}`);
const env = {
  date: new Date().toISOString(), bun: Bun.version, cpus: cpus().length, cpu: cpus()[0]?.model, loadavgStart: load0, loadavgEnd: loadavg(),
  maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024), seconds: Math.round((performance.now() - t0) / 1000), queriesPerSet: NQ,
};
console.log(`\n${JSON.stringify(env)}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(join(import.meta.dir, "results", "vector-scale.json"), JSON.stringify({ env, builds, rows }, null, 2));
