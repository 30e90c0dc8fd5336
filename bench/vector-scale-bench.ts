/**
 * Vector search at scale: vsearch's index (src/vector, inverted lists) against usearch (HNSW,
 * npm, a benchmark peer only) on the same synthetic 512-d CLIP-like vectors and queries.
 *
 *   node_modules/.bin/bun bench/vector-scale-bench.ts [--sizes=100000,1000000] [--queries=200]
 *     [--probes=0.02,0.04,0.08,0.16] [--efs=16,64,256] [--usearch=1] [--usearch-threads=1] [--usearch-max=N]
 *     [--gt-threads=1] [--max-anon-gb=14] [--data-dir=bench/results/vector-scale-data] [--keep-data=0]
 *     [--generate-only=1] [--truth-only=1] [--warm-pass=1] [--lists=N] [--wait-pid=PID] [--rebuild=0]
 *     [--sqrt-probes=0.02,0.03] (image queries at these shares under the app's √n policy) [--filtered=0]
 *     [--text-probes=0.08,0.16,0.32] [--text-policy-shares=0.25,0.3] [--text-models=pessimistic,realistic]
 *     [--configs=chunkRows:lists,…] [--filtered=0] [--generator=pg] [--as-app=1]
 *
 * Per size: build time and RAM (RSS delta after GC), then p50/p99 and recall@10 against an exact
 * scan for text-like and image-like queries, and for vsearch a 1-of-20 collection filter and a
 * one-video filter (filters applied before ranking; usearch has none, so it has no such row).
 * vsearch's `probe` (share of rows read) and usearch's expansion_search are swept so that the
 * two can be compared at equal recall. Both run single-threaded, side by side in one process, and
 * every row carries the load average at the time it was measured: the box is shared.
 *
 * The set (bench/lib/synthetic.ts, clustered, seed 1) is generated chunk by chunk into an f32 file
 * under --data-dir (n × 2 KiB: 10 GB at 5 M, 20 GB at 10 M) and memory-mapped; it never sits in
 * the process's own memory. vsearch's exact rescoring reads f32 rows from that mapping, i.e. from
 * the page cache or the disk, as the app reads frame_vectors from SQLite (the SQLite decode adds
 * 0.3–0.9 ms, see bench/vector-bench.ts). The exact ground truth streams the file through the
 * 8-query SIMD kernel (bench/lib/exact-file.ts; --gt-threads splits the queries over workers).
 * usearch keeps its own f32 copy of every vector (2 KiB per row) inside its index, counted in its RAM.
 *
 * RAM is RssAnon from /proc/self/status (anonymous memory: the index's WebAssembly memories and
 * the JS heap), so the mapped file's pages, which the kernel can drop, are not counted. The run
 * stops (exit 3) if RssAnon passes --max-anon-gb while building: the box is shared.
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import usearch from "usearch";
import { createVectorIndex, type CompactionStats, type SearchStats, type VectorSource } from "../src/vector/index.ts";
import type { ProbePolicy } from "../src/search/indexes.ts";
import { IMAGE_QUERY_PROBE, TEXT_QUERY_PROBE } from "../src/search/probe-policy.ts";
import { mapRows, truthFromFileThreads } from "./lib/exact-file.ts";
import { runQueries } from "./lib/run-queries.ts";
import {
  clusteredStream,
  generateQueries,
  generateQuerySet,
  parseTextModel,
  taskHits,
  textModelTag,
} from "./lib/synthetic.ts";

const DIM = 512;
const K = 10;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const list = (name: string, def: string) => (argv.get(name) ?? def).split(",").filter(Boolean).map(Number);
const SIZES = list("sizes", "100000,1000000");
const NQ = Number(argv.get("queries") ?? 200);
const PROBES = list("probes", "0.02,0.04,0.08,0.16");
/** Shares text-like queries are probed at (default: --probes). */
const TEXT_PROBES = argv.has("text-probes") ? list("text-probes", "") : PROBES;
/**
 * --text-models=pessimistic,realistic (default both; or NOISE:SEMANTIC[:SHOTS]): the generator's
 * text-query models (bench/lib/synthetic.ts TextQueryModel), each a text query set of its own with
 * its own exact answers. The filtered sets use the first.
 */
const TEXT_MODELS = (argv.get("text-models") ?? "pessimistic,realistic").split(",").map(parseTextModel);
const SQRT_PROBES = list("sqrt-probes", "");
/** Text queries at these shares under the app's text policy's growth (search/probe-policy.ts), to choose its share. */
const TEXT_POLICY_SHARES = list("text-policy-shares", "");
const EFS = list("efs", "16,64,256");
/** --lists=N: list count per training instead of the default (~n / 256 up to 8 192, then n / 512 up to 16 384; src/vector/lists.ts listsFor). */
const LISTS = Number(argv.get("lists") ?? 0);
/**
 * --configs=128:0,32:8192: vsearch layouts to build and measure side by side, as chunkRows:lists
 * (lists 0 = the default count; a config without chunkRows, "0:N", takes the default layout).
 * Default: one config, the default layout with --lists.
 */
const CONFIGS = (argv.get("configs") ?? `0:${LISTS}`)
  .split(",")
  .filter(Boolean)
  .map((c) => {
    const [rowsStr, listsStr] = c.split(":");
    const chunkRows = Number(rowsStr) as 0 | 32 | 64 | 128,
      lists = Number(listsStr ?? 0);
    return {
      chunkRows,
      lists,
      label: argv.has("configs") ? `${chunkRows || "default"}-row chunks, ${lists || "default"} lists` : "",
    };
  });
/** --filtered=0: skip the filtered query sets (collection, video). */
const SKIP_FILTERED = argv.get("filtered") === "0";
/** --warm-pass=1: run every query set once untimed before the timed pass (the rescored rows then come from the page cache). */
const WARM_PASS = argv.get("warm-pass") === "1";
const WITH_USEARCH = argv.get("usearch") !== "0";
const U_THREADS = Number(argv.get("usearch-threads") ?? 1);
/** usearch's HNSW build is the slow part (100 k rows: 93 s on one thread at load ~10, 386 s on two at load ~24). */
const U_MAX = Number(argv.get("usearch-max") ?? Infinity);
const GT_THREADS = Number(argv.get("gt-threads") ?? 1);
const MAX_ANON = Number(argv.get("max-anon-gb") ?? 14) * 2 ** 30;
const DATA_DIR = argv.get("data-dir") ?? join(import.meta.dir, "results", "vector-scale-data");
/** Only write the data files (kept) and exit: lets the next size's set be made while a run goes on. */
const GENERATE_ONLY = argv.get("generate-only") === "1";
/** --rebuild=0: skip the rebuild after the adds (lists stay as `add` left them); for a size whose rebuild does not fit the session. */
const REBUILD = argv.get("rebuild") !== "0";
/** Wait after the ground truth, before building, until this process has exited (one big build at a time). */
const WAIT_PID = Number(argv.get("wait-pid") ?? 0);
/** Write the set and its exact answers (kept beside it), then exit: the long parts of a 10 M run, done ahead. */
const TRUTH_ONLY = argv.get("truth-only") === "1";
const KEEP_DATA = GENERATE_ONLY || TRUTH_ONLY || argv.get("keep-data") === "1";
/**
 * --generator=pg: bench/pg-bench.ts's set (1 000-frame videos, ten collections, seed 3) instead of
 * this bench's (200-frame videos, twenty collections, seed 1).
 */
const PG_GEN = argv.get("generator") === "pg";
const GEN = PG_GEN
  ? { tag: "pg-s3", collections: 10, opts: { framesPerVideo: 1000, framesPerShot: 10, collections: 10, seed: 3 } }
  : { tag: "s1", collections: 20, opts: { seed: 1 } };
/**
 * --as-app=1: lists as the app leaves them: rows added in row (= video) order with every retrain
 * that falls due run before the next batch (the app runs them in the background between its
 * loader's reads) and no rebuild at the end. Without it the lists are retrained on all rows.
 */
const AS_APP = argv.get("as-app") === "1";

interface Row {
  n: number;
  engine: string;
  queries: string;
  setting: string;
  nq: number;
  p50: number;
  p99: number;
  /** Mean CPU ms per query (process CPU time over the pass). */
  cpuMs: number;
  recall: number;
  /** Task recall: share of queries with a row of their own shot / own video in the top-10. */
  taskShot?: number;
  taskVideo?: number;
  load1: number;
  stages?: Record<string, number>;
}
interface Build {
  n: number;
  engine: string;
  buildS: number;
  rssMB: number;
  bytesPerRow: number;
  /** Index bytes in use (free blocks of the WebAssembly memory left out) per row. */
  liveBytesPerRow?: number;
  load1: number;
  note: string;
}
const rows: Row[] = [];
const builds: Build[] = [];
const t0 = performance.now();
const log = (msg: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(5)} s] ${msg}`);
const load1 = () => Math.round(loadavg()[0] * 100) / 100;
const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
/** Anonymous resident memory (bytes): excludes the mapped data file's pages. */
const anon = (gc = true) => {
  if (gc) Bun.gc(true);
  const m = /RssAnon:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) * 1024 : process.memoryUsage().rss;
};
const rss = anon;
/** Compactions during the build (src/vector/compact.ts: free WebAssembly memory given back after retrains). */
const compactNote = (c: CompactionStats) =>
  `${c.count} compaction(s), ${Math.round(c.bytesGivenBack / 1e6)} MB given back, longest ${c.maxMs.toFixed(0)} ms, old + new memory peak ${Math.round(c.peakBytes / 1e6)} MB${c.errors ? `, ${c.errors} failed: ${c.lastError}` : ""}`;
let anonPeak = 0;
const guard = (what: string) => {
  const a = anon(false);
  anonPeak = Math.max(anonPeak, a);
  if (a > MAX_ANON) {
    log(
      `STOP: RssAnon ${(a / 2 ** 30).toFixed(2)} GiB > --max-anon-gb ${MAX_ANON / 2 ** 30} during ${what}; free -g said: ${freeG()}`,
    );
    save();
    process.exit(3);
  }
};
const freeG = () => {
  const m = readFileSync("/proc/meminfo", "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(m)?.[1] ?? 0);
  return `MemTotal ${(kb("MemTotal") / 2 ** 20).toFixed(1)} GiB, MemAvailable ${(kb("MemAvailable") / 2 ** 20).toFixed(1)} GiB`;
};

/** The set's per-row shot and video (task recall), set per size. */
let labels: { shot: Int32Array; video: Int32Array } = { shot: new Int32Array(0), video: new Int32Array(0) };

function measure(
  base: Pick<Row, "n" | "engine" | "queries" | "setting">,
  Q: Float32Array,
  truth: Int32Array[],
  search: (q: Float32Array, i: number) => number[],
  sources?: Int32Array,
): Row {
  if (WARM_PASS) {
    // Once untimed: the rows it rescores come into the page cache (a set larger than the cache
    // reads them from disk on the first pass, as the app's SQLite would; logged apart).
    const cold = runQueries(Q, DIM, truth, search);
    log(
      `n=${base.n} ${base.engine} ${base.queries} ${base.setting}: first (cold) pass p50 ${pct(
        cold.lat.sort((a, b) => a - b),
        50,
      ).toFixed(2)} ms`,
    );
  }
  // CPU time of the timed pass (its warm-up included) per query: less sensitive to the shared box's load than p50.
  const cpu0 = process.cpuUsage();
  const { nq, lat, recall, results } = runQueries(Q, DIM, truth, search);
  const cpu = process.cpuUsage(cpu0),
    cpuMs = (cpu.user + cpu.system) / 1000 / (nq + Math.min(5, nq));
  lat.sort((a, b) => a - b);
  const row: Row = { ...base, nq, p50: pct(lat, 50), p99: pct(lat, 99), cpuMs, recall, load1: load1() };
  if (sources) {
    const t = taskHits(labels, sources, results);
    row.taskShot = t.shot;
    row.taskVideo = t.video;
  }
  rows.push(row);
  log(
    `n=${row.n} ${row.engine.padEnd(7)} ${row.queries.padEnd(11)} ${row.setting.padEnd(16)} p50 ${row.p50.toFixed(2)} p99 ${row.p99.toFixed(2)} cpu ${row.cpuMs.toFixed(2)} recall ${row.recall.toFixed(3)}${row.taskShot === undefined ? "" : ` task shot ${row.taskShot.toFixed(3)} video ${row.taskVideo!.toFixed(3)}`} load ${row.load1}`,
  );
  return row;
}

/** The exact top-10's own task recall (what a perfect index would give), as a row. */
function exactRow(n: number, queries: string, truth: Int32Array[], sources: Int32Array): void {
  const t = taskHits(
    labels,
    sources,
    truth.map((ids) => Array.from(ids)),
  );
  const row: Row = {
    n,
    engine: "exact",
    queries,
    setting: "exact top-10",
    nq: truth.length,
    p50: 0,
    p99: 0,
    cpuMs: 0,
    recall: 1,
    taskShot: t.shot,
    taskVideo: t.video,
    load1: load1(),
  };
  rows.push(row);
  log(`n=${n} exact ${queries}: task shot ${t.shot.toFixed(3)} video ${t.video.toFixed(3)}`);
}

/** Writes the clustered set's n rows to `path` chunk by chunk (never the whole set in memory). */
function writeSet(path: string, stream: ReturnType<typeof clusteredStream>, n: number): void {
  const CH = 65536;
  const buf = new Float32Array(CH * DIM);
  const fd = openSync(`${path}.part`, "w");
  for (let i = 0; i < n; i += CH) {
    const e = Math.min(n, i + CH);
    stream.fill(i, e, buf);
    const bytes = new Uint8Array(buf.buffer, 0, (e - i) * DIM * 4);
    for (let o = 0; o < bytes.length; ) o += writeSync(fd, bytes, o);
    if ((i / CH) % 16 === 15) log(`n=${n}: written ${e} rows`);
  }
  closeSync(fd);
  Bun.spawnSync(["mv", `${path}.part`, path]);
}

async function runSize(n: number): Promise<void> {
  log(`n=${n}: start, load ${load1()}, ${freeG()}`);
  let t = performance.now();
  let stream: ReturnType<typeof clusteredStream> | null = clusteredStream({ n, dim: DIM, ...GEN.opts });
  mkdirSync(DATA_DIR, { recursive: true });
  const path = join(DATA_DIR, `clustered-${GEN.tag}-d${DIM}-n${n}.f32`);
  if (existsSync(path) && statSync(path).size === n * DIM * 4) log(`n=${n}: reusing ${path}`);
  else writeSet(path, stream, n);
  log(
    `n=${n}: set ready in ${((performance.now() - t) / 1000).toFixed(1)} s (${path}, ${((n * DIM * 4) / 1e9).toFixed(1)} GB)`,
  );
  if (GENERATE_ONLY) return;
  const data = mapRows(path, n, DIM);
  const { video, collection, shot } = stream;
  labels = { shot, video };
  t = performance.now();
  const dsq = { ...stream, row: data.row };
  const textSets = TEXT_MODELS.map((m) => ({ model: m, ...generateQuerySet(dsq, NQ, "text", 7, m) }));
  const imageSet = generateQuerySet(dsq, NQ, "image", 7);
  const text = generateQueries(dsq, NQ, "text", 7),
    image = imageSet.queries;
  const textC = generateQueries(dsq, NQ / 2, "text", 8),
    textV = generateQueries(dsq, NQ / 2, "text", 9);
  const imageC = generateQueries(dsq, NQ / 2, "image", 8);
  // The shot directions (n / 10 × 2 KiB) are only needed to make rows and queries.
  stream = null;
  const coll = Int32Array.from({ length: NQ / 2 }, (_, i) => i % GEN.collections);
  const vids = Int32Array.from({ length: NQ / 2 }, (_, i) => video[(i * 7919) % n]);
  // The exact answers depend only on the set and the queries (both deterministic in n, NQ and the
  // seeds), so they are kept beside the set: a 10 M ground truth streams 20 GB and takes minutes.
  const truthPath = join(DATA_DIR, `truth-${GEN.tag}-d${DIM}-n${n}-q${NQ}-k${K}.json`);
  const truthCached = existsSync(truthPath);
  const truths: Int32Array[][] = truthCached
    ? (JSON.parse(readFileSync(truthPath, "utf8")) as number[][][]).map((set) => set.map((ids) => Int32Array.from(ids)))
    : await truthFromFileThreads(
        path,
        n,
        DIM,
        K,
        [
          { queries: text },
          { queries: image },
          { queries: textC, filter: { of: collection, eqs: coll } },
          { queries: imageC, filter: { of: collection, eqs: coll } },
          { queries: textV, filter: { of: video, eqs: vids } },
        ],
        GT_THREADS,
      );
  if (!truthCached) writeFileSync(truthPath, JSON.stringify(truths.map((set) => set.map((ids) => Array.from(ids)))));
  const [truthText, truthImage, truthC, truthIC, truthV] = truths;
  // Text sets of the other generator models: exact answers of their own, kept beside the set.
  const sets: { name: string; Q: Float32Array; truth: Int32Array[]; sources: Int32Array }[] = [];
  for (const ts of textSets) {
    const tag = textModelTag(ts.model);
    let truth = truthText;
    if (tag) {
      const p2 = join(DATA_DIR, `truth-${GEN.tag}-d${DIM}-n${n}-q${NQ}-k${K}${tag}.json`);
      if (existsSync(p2))
        truth = (JSON.parse(readFileSync(p2, "utf8")) as number[][]).map((ids) => Int32Array.from(ids));
      else {
        [truth] = await truthFromFileThreads(path, n, DIM, K, [{ queries: ts.queries }], GT_THREADS);
        writeFileSync(p2, JSON.stringify(truth.map((ids) => Array.from(ids))));
      }
    }
    sets.push({ name: `text ${ts.model.name}`, Q: ts.queries, truth, sources: ts.sources });
  }
  sets.push({ name: "image", Q: image, truth: truthImage, sources: imageSet.sources });
  for (const s of sets) exactRow(n, s.name, s.truth, s.sources);
  log(
    `n=${n}: ground truth (${NQ}+${NQ} queries, ${NQ / 2}×3 filtered, ${truthCached ? `read from ${truthPath}` : `${GT_THREADS} thread(s)`}) in ${((performance.now() - t) / 1000).toFixed(1)} s, load ${load1()}`,
  );

  if (TRUTH_ONLY) return;

  if (WAIT_PID) {
    const alive = () => {
      try {
        process.kill(WAIT_PID, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (alive()) log(`n=${n}: waiting for pid ${WAIT_PID} to exit before building`);
    while (alive()) await Bun.sleep(5000);
    log(`n=${n}: building, load ${load1()}, ${freeG()}`);
  }

  // ---- vsearch: one index per --configs entry, built one after the other, measured side by side ----
  const source: VectorSource = { getVectors: (ids) => ids.map((id) => data.row(id)) };
  let before = rss();
  let buildS = 0,
    grown = 0;
  const built: { label: string; index: ReturnType<typeof createVectorIndex> }[] = [];
  for (const cfg of CONFIGS) {
    const label = CONFIGS.length > 1 ? `[${cfg.label}] ` : "";
    before = rss();
    anonPeak = before;
    t = performance.now();
    const cpu0 = process.cpuUsage();
    const index = createVectorIndex({
      dim: DIM,
      source,
      ...(cfg.lists ? { lists: cfg.lists } : {}),
      ...(cfg.chunkRows ? { chunkRows: cfg.chunkRows } : {}),
    });
    for (let i = 0; i < n; i += 4096) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + 4096); j++) {
        batch.push({ rowId: j, vector: data.row(j), partition: "acct", groupA: collection[j], groupB: video[j] });
      }
      index.add(batch);
      if (AS_APP) index.flushTraining();
      if ((i / 4096) % 64 === 63) guard("vsearch add");
      if (i % 1048576 === 1048576 - 4096 || i + 4096 >= n) {
        log(
          `n=${n}: ${label}added ${Math.min(n, i + 4096)} rows, ${((performance.now() - t) / 1000).toFixed(1)} s, RssAnon ${((anon(false) - before) / 1e6).toFixed(0)} MB over the start, ${index.segments} segment(s), load ${load1()}`,
        );
      }
    }
    const addS = (performance.now() - t) / 1000;
    // Lists are trained as the partition grows (last at n/4); a rebuild retrains them on all rows,
    // as the app would after loading an account.
    t = performance.now();
    if (REBUILD && !AS_APP) index.rebuild("acct");
    else if (!AS_APP)
      log(
        `n=${n}: no rebuild (--rebuild=0): ${index.listCount("acct")} list(s) as the adds left them, ${index.training.pending} retrain(s) queued (they run between event-loop turns, and this loop never yields)`,
      );
    guard("vsearch rebuild");
    const rebuildS = (performance.now() - t) / 1000;
    buildS = addS + rebuildS;
    // CPU seconds of the build (the box is shared: wall time grows with the load, CPU time much less).
    const cpu = process.cpuUsage(cpu0),
      cpuS = (cpu.user + cpu.system) / 1e6;
    grown = rss() - before;
    builds.push({
      n,
      engine: `vsearch${cfg.label ? ` ${cfg.label}` : ""}`,
      buildS,
      rssMB: Math.round(grown / 1e6),
      bytesPerRow: Math.round(index.memoryBytes / n),
      liveBytesPerRow: Math.round((index.liveBytes / n) * 10) / 10,
      load1: load1(),
      note: `CPU ${cpuS.toFixed(1)} s; add ${addS.toFixed(1)} s + ${AS_APP ? `as the app (${index.training.retrains} retrain(s) during the adds)` : REBUILD ? `rebuild ${rebuildS.toFixed(1)} s` : "NO rebuild"}, ${index.listCount("acct")} lists, ${index.segments} segment(s), index ${Math.round(index.memoryBytes / 1e6)} MB (live ${Math.round(index.liveBytes / 1e6)} MB), RssAnon peak ${Math.round((anonPeak - before) / 1e6)} MB over the start, ${compactNote(index.compactions)}`,
    });
    log(
      `n=${n}: ${label}vsearch built in ${buildS.toFixed(1)} s (CPU ${cpuS.toFixed(1)} s), RssAnon +${Math.round(grown / 1e6)} MB (peak +${Math.round((anonPeak - before) / 1e6)} MB), ${Math.round(index.memoryBytes / n)} B/row (live ${(index.liveBytes / n).toFixed(1)}), ${index.listCount("acct")} lists, ${index.segments} segment(s), ${compactNote(index.compactions)}, load ${load1()}, ${freeG()}`,
    );
    built.push({ label: cfg.label, index });
  }
  const stats: SearchStats = {
    path: "empty",
    allowed: 0,
    coarse: 0,
    middle: 0,
    rescored: 0,
    ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
  };
  type Probe = number | ProbePolicy | undefined;
  const vs = (
    index: ReturnType<typeof createVectorIndex>,
    probe: Probe,
    allowOf?: (i: number) => { collections?: number[]; videos?: number[]; rowIds?: number[] },
  ) => {
    const p = typeof probe === "number" ? { share: probe } : probe;
    const agg: Record<string, number> = { scanned: 0, coarse: 0, filter: 0, scan: 0, estimate: 0, rescore: 0 };
    let m = 0;
    const fn = (q: Float32Array, i: number) => {
      const out = index
        .search(q, {
          partition: "acct",
          k: K,
          probe: p?.share,
          probeAt: p?.at,
          probeGrowth: p?.growth,
          inDistribution: p?.inDistribution,
          allow: allowOf?.(i),
          stats,
        })
        .map((r) => r.rowId);
      m++;
      agg.scanned += stats.scanned ?? 0;
      agg.coarse += stats.coarse;
      for (const key of ["filter", "scan", "estimate", "rescore"] as const) agg[key] += stats.ms[key];
      return out;
    };
    return {
      fn,
      stages: () => Object.fromEntries(Object.entries(agg).map(([k2, v]) => [k2, Math.round((v / m) * 100) / 100])),
    };
  };
  // Each setting runs on every config in turn, so their latencies share the box's load.
  const each = (
    queries: string,
    setting: string,
    Q: Float32Array,
    truth: Int32Array[],
    probe: Probe,
    allowOf?: (i: number) => { collections?: number[]; videos?: number[]; rowIds?: number[] },
    sources?: Int32Array,
  ) => {
    for (const b of built) {
      const h = vs(b.index, probe, allowOf);
      measure(
        { n, engine: `vsearch${b.label ? ` ${b.label}` : ""}`, queries, setting },
        Q,
        truth,
        h.fn,
        sources,
      ).stages = h.stages();
    }
  };
  const policyName = (p: ProbePolicy) =>
    `app: ${p.share}${p.at ? ` at ${p.at.toLocaleString("en")} rows, growth ${(p.growth ?? [0.5, 0.5]).join("/")}` : ""}`;
  for (const s of sets) {
    const probes = s.name === "image" ? PROBES : TEXT_PROBES;
    for (const probe of [undefined, ...probes])
      each(s.name, probe === undefined ? "flat" : `probe=${probe}`, s.Q, s.truth, probe, undefined, s.sources);
    // What the app passes for an unfiltered query of this kind (search/probe-policy.ts).
    const policy = s.name === "image" ? IMAGE_QUERY_PROBE : TEXT_QUERY_PROBE;
    each(s.name, policyName(policy), s.Q, s.truth, policy, undefined, s.sources);
  }
  // Other shares under the app's image policy (--sqrt-probes), to choose the app's.
  for (const share of SQRT_PROBES)
    each(
      "image",
      `${share} at 1 M, √n`,
      image,
      truthImage,
      { ...IMAGE_QUERY_PROBE, share },
      undefined,
      imageSet.sources,
    );
  // Other shares under the app's text policy (--text-policy-shares).
  for (const share of TEXT_POLICY_SHARES)
    for (const s of sets.filter((x) => x.name !== "image"))
      each(
        s.name,
        policyName({ ...TEXT_QUERY_PROBE, share }),
        s.Q,
        s.truth,
        { ...TEXT_QUERY_PROBE, share },
        undefined,
        s.sources,
      );
  if (!SKIP_FILTERED) {
    each("text+coll", "default", textC, truthC, undefined, (i) => ({ collections: [coll[i]] }));
    for (const probe of [undefined, ...PROBES]) {
      each("image+coll", probe === undefined ? "default" : `probe=${probe}`, imageC, truthIC, probe, (i) => ({
        collections: [coll[i]],
      }));
    }
    each("text+video", "default", textV, truthV, undefined, (i) => ({ videos: [vids[i]] }));
    // What the app passes for a one-video search (search/memory-backend.ts): the video and its
    // rows' ids (a video's rows are one run of row numbers in this set).
    const rowsOf = (v: number) => {
      let a = 0;
      while (video[a] !== v) a++;
      let b = a;
      while (b < n && video[b] === v) b++;
      return Array.from({ length: b - a }, (_, j) => a + j);
    };
    const vidRows = Array.from(vids, rowsOf);
    each("text+video", "app: video + its row ids", textV, truthV, undefined, (i) => ({
      videos: [vids[i]],
      rowIds: vidRows[i],
    }));
  }
  // Incremental writes on the built index: a 300-frame video in and out again.
  for (const { label, index } of built) {
    const batch = Array.from({ length: 300 }, (_, j) => ({
      rowId: n + j,
      vector: data.row(j),
      partition: "acct",
      groupA: 0,
      groupB: -1,
    }));
    let tw = performance.now();
    index.add(batch);
    const addMs = performance.now() - tw;
    tw = performance.now();
    index.remove(batch.map((b) => b.rowId));
    log(
      `n=${n}: vsearch ${label} add 300 rows ${addMs.toFixed(2)} ms, remove ${(performance.now() - tw).toFixed(2)} ms`,
    );
  }
  built.length = 0;

  // ---- usearch (HNSW, f32, defaults but expansion_search) ----
  if (WITH_USEARCH && n <= U_MAX) {
    const keys = new BigUint64Array(n);
    for (let i = 0; i < n; i++) keys[i] = BigInt(i);
    for (const [ei, efs] of EFS.entries()) {
      // expansion_search is fixed at construction: the graph is built once and reloaded per value.
      before = rss();
      t = performance.now();
      const u = new usearch.Index({
        dimensions: DIM,
        metric: usearch.MetricKind.Cos,
        quantization: usearch.ScalarKind.F32,
        connectivity: 0,
        expansion_add: 0,
        expansion_search: efs,
        multi: false,
      });
      if (ei === 0) {
        for (let i = 0; i < n; i += 65536)
          u.add(keys.subarray(i, Math.min(n, i + 65536)), data.slice(i, Math.min(n, i + 65536)), U_THREADS);
        buildS = (performance.now() - t) / 1000;
        grown = rss() - before;
        builds.push({
          n,
          engine: "usearch",
          buildS,
          rssMB: Math.round(grown / 1e6),
          bytesPerRow: Math.round(grown / n),
          load1: load1(),
          note: `HNSW f32, ${U_THREADS} thread(s), vectors included`,
        });
        log(
          `n=${n}: usearch built in ${buildS.toFixed(1)} s (${U_THREADS} thread), RSS +${Math.round(grown / 1e6)} MB`,
        );
        u.save(join(dirFor(), `u-${n}.usearch`));
        guard("usearch build");
      } else {
        u.load(join(dirFor(), `u-${n}.usearch`));
      }
      for (const s of sets) {
        measure(
          { n, engine: "usearch", queries: s.name, setting: `ef=${efs}` },
          s.Q,
          s.truth,
          (q) => Array.from(u.search(q, K, 1).keys, Number),
          s.sources,
        );
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
/** One file per list of sizes: the big sizes run as separate processes. */
const outFile = join(import.meta.dir, "results", `vector-scale-${SIZES.join("_")}.json`);
const save = () => {
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(outFile, JSON.stringify({ loadavgStart: load0, builds, rows }, null, 2));
};
for (const n of SIZES) {
  await runSize(n);
  save(); // a run stopped early keeps the sizes it finished
  Bun.gc(true);
  if (!KEEP_DATA) unlinkSync(join(DATA_DIR, `clustered-${GEN.tag}-d${DIM}-n${n}.f32`));
}
if (benchDir)
  for (const n of SIZES)
    Bun.file(join(benchDir, `u-${n}.usearch`))
      .delete?.()
      .catch(() => {});

const fmt = (header: string[], table: string[][]) => {
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
  return `${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${table.map(line).join("\n")}`;
};
console.log(
  `\n${fmt(
    ["n", "engine", "build s", "RSS MB", "B/row", "load1", "note"],
    builds.map((b) => [
      String(b.n),
      b.engine,
      b.buildS.toFixed(1),
      String(b.rssMB),
      String(b.bytesPerRow),
      String(b.load1),
      b.note,
    ]),
  )}`,
);
console.log(
  `\n${fmt(
    [
      "n",
      "engine",
      "queries",
      "setting",
      "nq",
      "rows read",
      "p50 ms",
      "p99 ms",
      "CPU ms/q",
      "recall@10",
      "own shot",
      "own video",
      "load1",
    ],
    rows.map((r) => [
      String(r.n),
      r.engine,
      r.queries,
      r.setting,
      String(r.nq),
      r.stages ? String(Math.round(r.stages.scanned)) : "",
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      r.cpuMs.toFixed(2),
      r.recall.toFixed(3),
      r.taskShot === undefined ? "" : r.taskShot.toFixed(3),
      r.taskVideo === undefined ? "" : r.taskVideo.toFixed(3),
      String(r.load1),
    ]),
  )}`,
);
const env = {
  date: new Date().toISOString(),
  bun: Bun.version,
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  loadavgStart: load0,
  loadavgEnd: loadavg(),
  maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  maxRssNote: "maxRSS counts the mapped data file's pages too",
  seconds: Math.round((performance.now() - t0) / 1000),
  queriesPerSet: NQ,
};
console.log(`\n${JSON.stringify(env)}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(outFile, JSON.stringify({ env, builds, rows }, null, 2));
console.log(`wrote ${outFile}`);
// With --rebuild=0 the retrains queued by the adds (setImmediate slices) would now start and keep
// the process busy for many minutes after the results (seen at 10 M).
process.exit(0);
