/**
 * Vector stage bench: src/vector against sqlite-vec 0.1.9 on synthetic 512-d sets.
 *
 *   node_modules/.bin/bun bench/vector-bench.ts [--sizes=100000,1000000] [--queries=200] [--keep-db]
 *
 * For each size and each set (clustered = CLIP-like, random = i.i.d. gaussian; see
 * lib/synthetic.ts) it measures p50/p99 latency and recall@10 against an exact scan for:
 *  - vsearch index (src/vector), rescoring from a plain SQLite table `(id INTEGER PRIMARY KEY,
 *    e BLOB)` like the store's frame_vectors — the production path, SQL lookups included;
 *  - sqlite-vec vec0 float[512] distance_metric=cosine (exact brute force; fewer queries at 1 M);
 *  - sqlite-vec vec0 bit[512] k=100 + float re-rank in SQL (sqlite-vec's own quantize+rescore).
 * Prints a table and writes bench/results/vector.json. Everything runs single-threaded.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import * as sqliteVec from "sqlite-vec";
import { createVectorIndex, type SearchStats, type VectorSource } from "../src/vector/index.ts";
import { exactScanner } from "./lib/exact.ts";
import { runQueries } from "./lib/run-queries.ts";
import { generateDataset, generateQueries, type Dataset, type QueryKind } from "./lib/synthetic.ts";

const DIM = 512;
const K = 10;
/** Oversampling of the sqlite-vec bit + rescore baseline (10 × k; its k-NN cost grows ~linearly with k: 5 ms at k=10, 20 ms at 100, 160 ms at 1000 on 100 k rows). */
const BIT_K = 100;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const SIZES = (argv.get("sizes") ?? "100000,1000000").split(",").map(Number);
const NQ = Number(argv.get("queries") ?? 200);

interface Row {
  set: string;
  n: number;
  queries: string;
  method: string;
  nq: number;
  p50: number;
  p99: number;
  mean: number;
  recall: number;
  note?: string;
  stages?: Record<string, number>;
}
const rows: Row[] = [];
const writes: { set: string; n: number; add300ms: number; remove300ms: number; buildRowsPerS: number }[] = [];
const t0 = performance.now();
const mb = (b: number) => Math.round(b / 1e6);
const log = (msg: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Times `search` on every query (after a warm-up) and scores recall@10 against `truth`. */
function measure(
  base: Omit<Row, "nq" | "p50" | "p99" | "mean" | "recall">,
  Q: Float32Array,
  truth: Int32Array[],
  search: (q: Float32Array, i: number) => number[],
  limit = truth.length,
  warmup = 5,
): Row {
  const { nq, lat, recall } = runQueries(Q, DIM, truth, search, { limit, warmup, idOffset: 1 });
  const sorted = lat.slice().sort((a, b) => a - b);
  const row: Row = {
    ...base,
    nq,
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    mean: lat.reduce((a, b) => a + b, 0) / nq,
    recall,
  };
  rows.push(row);
  log(
    `${row.set} n=${row.n} ${row.queries.padEnd(14)} ${row.method.padEnd(34)} p50 ${row.p50.toFixed(2)} p99 ${row.p99.toFixed(2)} recall ${row.recall.toFixed(3)} ${row.note ?? ""}`,
  );
  return row;
}

const blob = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

/** The production-like rescoring source: vectors by id from a plain SQLite table. */
function sqliteSource(db: Database): VectorSource {
  return {
    getVectors(rowIds) {
      const byId = new Map<number, Float32Array>();
      for (let i = 0; i < rowIds.length; i += 999) {
        const part = rowIds.slice(i, i + 999);
        const rs = db
          .query<{ id: number; e: Uint8Array }, number[]>(
            `SELECT id, e FROM vecs WHERE id IN (${part.map(() => "?").join(",")})`,
          )
          .all(...part);
        for (const r of rs) byId.set(r.id, new Float32Array(r.e.buffer, r.e.byteOffset, r.e.byteLength / 4));
      }
      return rowIds.map((id) => byId.get(id));
    },
  };
}

function runSet(n: number, kind: "clustered" | "random", scanner: ReturnType<typeof exactScanner>, dir: string): void {
  const set = kind;
  let t = performance.now();
  const ds: Dataset = generateDataset({ n, dim: DIM, kind, seed: 1, out: scanner.vectors });
  log(`${set} n=${n}: generated in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // Query sets and exact ground truth.
  const sets: {
    name: string;
    kind: QueryKind;
    Q: Float32Array;
    truth: Int32Array[];
    collection?: Int32Array;
    video?: Int32Array;
  }[] = [];
  t = performance.now();
  const kinds: QueryKind[] = kind === "clustered" ? ["text", "image"] : ["random"];
  for (const qk of kinds) {
    const Q = generateQueries(ds, NQ, qk, 7);
    sets.push({ name: qk, kind: qk, Q, truth: scanner.topK(Q, K) });
  }
  if (kind === "clustered") {
    // "Search within one collection" (1 of 20, 5 % of the rows): the query's own target collection.
    const Q = generateQueries(ds, NQ / 2, "text", 8);
    const coll = new Int32Array(NQ / 2);
    for (let i = 0; i < coll.length; i++) coll[i] = i % 20;
    const keep = Array.from({ length: 20 }, (_, c) => Uint8Array.from(ds.collection, (x) => (x === c ? 1 : 0)));
    sets.push({
      name: "text+coll",
      kind: "text",
      Q,
      truth: scanner.topK(Q, K, (q) => keep[coll[q]]),
      collection: coll,
    });
    // "Search within one video" (~200 rows): answered by the exact path after the mask.
    const Qv = generateQueries(ds, NQ / 2, "text", 9);
    const vids = Int32Array.from({ length: NQ / 2 }, (_, i) => ds.video[(i * 7919) % n]);
    sets.push({
      name: "text+video",
      kind: "text",
      Q: Qv,
      video: vids,
      truth: scanner.topK(Qv, K, (q) => Uint8Array.from(ds.video, (x) => (x === vids[q] ? 1 : 0))),
    });
  }
  log(
    `${set} n=${n}: ground truth for ${sets.reduce((a, s) => a + s.truth.length, 0)} queries in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );

  // SQLite: the plain vector table (rescoring source) and sqlite-vec's tables.
  const db = new Database(join(dir, `${set}-${n}.db`));
  // Bulk-load settings, but reads as the app's store does them (src/store/database.ts: memory
  // map, 64 MiB page cache), since rescoring reads go through it.
  db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; PRAGMA mmap_size=2147418112;");
  sqliteVec.load(db);
  db.exec("CREATE TABLE vecs (id INTEGER PRIMARY KEY, e BLOB NOT NULL)");
  t = performance.now();
  const ins = db.query("INSERT INTO vecs (id, e) VALUES (?, ?)");
  db.transaction(() => {
    for (let i = 0; i < n; i++) ins.run(i + 1, blob(ds.vectors.subarray(i * DIM, (i + 1) * DIM)));
  })();
  log(`${set} n=${n}: plain table filled in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  // ---- vsearch index ----
  Bun.gc(true);
  const rssBefore = process.memoryUsage().rss;
  t = performance.now();
  const index = createVectorIndex({ dim: DIM, source: sqliteSource(db) });
  for (let i = 0; i < n; i += 4096) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 4096); j++) {
      batch.push({
        rowId: j + 1,
        vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM),
        partition: "acct",
        groupA: ds.collection[j],
        groupB: ds.video[j],
      });
    }
    index.add(batch);
  }
  const buildS = (performance.now() - t) / 1000;
  Bun.gc(true);
  const rssIndex = process.memoryUsage().rss - rssBefore;
  const note = `build ${buildS.toFixed(1)} s, index ${mb(index.memoryBytes)} MB (RSS +${mb(rssIndex)} MB)`;
  log(`${set} n=${n}: vsearch index ${note}`);

  for (const s of sets) {
    const agg: Record<string, number> = {
      coarse: 0,
      middle: 0,
      rescored: 0,
      filter: 0,
      scan: 0,
      estimate: 0,
      rescore: 0,
    };
    const stats: SearchStats = {
      path: "empty",
      allowed: 0,
      coarse: 0,
      middle: 0,
      rescored: 0,
      ms: { filter: 0, scan: 0, estimate: 0, rescore: 0, total: 0 },
    };
    let measured = 0;
    const row = measure({ set, n, queries: s.name, method: "vsearch (default)", note }, s.Q, s.truth, (q, i) => {
      const allow = s.collection ? { collections: [s.collection[i]] } : s.video ? { videos: [s.video[i]] } : undefined;
      const out = index.search(q, { partition: "acct", k: K, allow, stats }).map((r) => r.rowId);
      measured++;
      for (const key of ["coarse", "middle", "rescored"] as const) agg[key] += stats[key];
      for (const key of ["filter", "scan", "estimate", "rescore"] as const) agg[key] += stats.ms[key];
      return out;
    });
    row.stages = Object.fromEntries(Object.entries(agg).map(([k2, v]) => [k2, Math.round((v / measured) * 100) / 100]));
  }
  // Incremental writes on the full index: one "video" of 300 frames in, then out again.
  {
    const batch = Array.from({ length: 300 }, (_, j) => ({
      rowId: n + 1 + j,
      vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM),
      partition: "acct",
      groupA: 0,
      groupB: -1,
    }));
    const times = { add: [] as number[], remove: [] as number[] };
    for (let rep = 0; rep < 5; rep++) {
      let tw = performance.now();
      index.add(batch);
      times.add.push(performance.now() - tw);
      tw = performance.now();
      index.remove(batch.map((b) => b.rowId));
      times.remove.push(performance.now() - tw);
    }
    const med = (xs: number[]) => xs.sort((x, y) => x - y)[2];
    writes.push({
      set,
      n,
      add300ms: med(times.add),
      remove300ms: med(times.remove),
      buildRowsPerS: Math.round(n / buildS),
    });
    log(
      `${set} n=${n}: add 300 rows ${med(times.add).toFixed(2)} ms, remove 300 rows ${med(times.remove).toFixed(2)} ms`,
    );
  }

  // The recall/latency knob: coarse candidates.
  const sweep = kind === "clustered" ? [20_000, 30_000, 65_536] : [Math.round(n * 0.15), Math.round(n * 0.3)];
  for (const c of sweep) {
    if (c >= n) continue;
    const s = sets[0];
    measure(
      { set, n, queries: s.name, method: `vsearch candidates=${c}` },
      s.Q,
      s.truth,
      (q) => index.search(q, { partition: "acct", k: K, candidates: c }).map((r) => r.rowId),
      Math.min(100, s.truth.length),
    );
  }

  // ---- sqlite-vec ----
  const q0 = sets[0];
  if (kind === "clustered" || n <= 100_000) {
    db.exec(`CREATE VIRTUAL TABLE vf USING vec0(embedding float[${DIM}] distance_metric=cosine)`);
    t = performance.now();
    const insF = db.query("INSERT INTO vf (rowid, embedding) VALUES (?, ?)");
    db.transaction(() => {
      for (let i = 0; i < n; i++) insF.run(i + 1, blob(ds.vectors.subarray(i * DIM, (i + 1) * DIM)));
    })();
    const qf = db.query<{ rowid: number }, [Uint8Array]>(`SELECT rowid FROM vf WHERE embedding MATCH ? AND k = ${K}`);
    measure(
      {
        set,
        n,
        queries: q0.name,
        method: "sqlite-vec float brute force",
        note: `insert ${((performance.now() - t) / 1000).toFixed(1)} s`,
      },
      q0.Q,
      q0.truth,
      (q) => qf.all(blob(q)).map((r) => r.rowid),
      n > 200_000 ? 15 : 40,
      2,
    );
  }
  db.exec(`CREATE VIRTUAL TABLE vb USING vec0(embedding bit[${DIM}])`);
  t = performance.now();
  const insB = db.query("INSERT INTO vb (rowid, embedding) VALUES (?, vec_quantize_binary(?))");
  db.transaction(() => {
    for (let i = 0; i < n; i++) insB.run(i + 1, blob(ds.vectors.subarray(i * DIM, (i + 1) * DIM)));
  })();
  // CROSS JOIN keeps the k-NN as the outer loop (with IN (…) the planner scanned all of vecs).
  const qb = db.query<{ id: number }, [Uint8Array]>(
    `WITH knn AS (SELECT rowid AS id FROM vb WHERE embedding MATCH vec_quantize_binary(?1) AND k = ${BIT_K})
     SELECT v.id AS id FROM knn CROSS JOIN vecs v ON v.id = knn.id
     ORDER BY vec_distance_cosine(v.e, ?1) LIMIT ${K}`,
  );
  measure(
    {
      set,
      n,
      queries: q0.name,
      method: `sqlite-vec bit k=${BIT_K} + rescore`,
      note: `insert ${((performance.now() - t) / 1000).toFixed(1)} s`,
    },
    q0.Q,
    q0.truth,
    (q) => qb.all(blob(q)).map((r) => r.id),
    n > 200_000 ? 40 : 100,
    2,
  );

  db.close();
  rmSync(join(dir, `${set}-${n}.db`), { force: true });
}

const dir = mkdtempSync(join(tmpdir(), "vsearch-vector-bench-"));
const load0 = loadavg();
try {
  for (const n of SIZES) {
    const scanner = exactScanner(n, DIM);
    for (const kind of ["clustered", "random"] as const) runSet(n, kind, scanner, dir);
    Bun.gc(true);
  }
} finally {
  if (!argv.has("keep-db")) rmSync(dir, { recursive: true, force: true });
}

const header = ["set", "n", "queries", "method", "nq", "p50 ms", "p99 ms", "recall@10", "note"];
const table = rows.map((r) => [
  r.set,
  String(r.n),
  r.queries,
  r.method,
  String(r.nq),
  r.p50.toFixed(2),
  r.p99.toFixed(2),
  r.recall.toFixed(3),
  r.note ?? "",
]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${table.map(line).join("\n")}`);
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
};
console.log(`\n${JSON.stringify(env)}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(join(import.meta.dir, "results", "vector.json"), JSON.stringify({ env, rows, writes }, null, 2));
