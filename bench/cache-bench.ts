/**
 * The exact-vector cache of search rescoring (src/search/vector-cache.ts) against the kept
 * library `lru-cache` doing the same job (byte budget via maxSize/sizeCalculation, one key per
 * index + row). The access pattern is search's: a query rescores `--rows` rows of 512-d vectors;
 * "repeat" asks the same rows again (all hits), "new" asks fresh rows (a miss and a set each,
 * evicting once past the budget), "rescore" is what a search then does with a query's rows: finds
 * them and computes their cosines (the cache compares its rows in place; the library's rows are
 * copied into a RowDots first, as rescoring did before the cache kept its rows in WebAssembly memory).
 *
 *   node_modules/.bin/bun bench/cache-bench.ts [--rows 3000] [--queries 200] [--budget-mb 64]
 *
 * Prints a table and writes bench/results/cache.json with the load average. Not a test.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { LRUCache } from "lru-cache";
import { ExactVectorCache } from "../src/search/vector-cache.ts";
import { RowDots } from "../src/vector/wasm/row-dots.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const ROWS = arg("rows", 3000);
const QUERIES = arg("queries", 200);
const BUDGET = arg("budget-mb", 64) * 1024 * 1024;
const INDEX = "clip-b32@q8:frames";
const DIM = 512;

interface Cache {
  /** The ids not kept (the kept ones count as used). */
  missing(index: string, ids: readonly number[]): number[];
  set(index: string, row: number, v: Float32Array): void;
  /** Cosines of a unit query and the rows (all kept). */
  cosines(index: string, ids: readonly number[], unit: Float32Array): ArrayLike<number>;
}

/** Rows held as typed arrays in the JS heap, copied into a RowDots to be compared (the rescoring before the slab). */
function copied(get: (index: string, row: number) => Float32Array | undefined) {
  const rd = new RowDots(DIM, ROWS);
  return (i: string, ids: readonly number[], unit: Float32Array) => {
    rd.load(ids.map((r) => get(i, r)!));
    const { dots, norms } = rd.dots(unit, ids.length, true);
    return Float64Array.from(dots, (d, j) => (norms[j] > 0 ? d / Math.sqrt(norms[j]) : 0));
  };
}

function library(budget: number): Cache {
  const c = new LRUCache<string, Float32Array>({ maxSize: budget, sizeCalculation: (v) => v.byteLength });
  const get = (i: string, r: number) => c.get(`${i}\u0000${r}`);
  return {
    missing: (i, ids) => ids.filter((r) => !get(i, r)),
    set: (i, r, v) => void c.set(`${i}\u0000${r}`, v),
    cosines: copied(get),
  };
}

/** The hand-written cache as it was before its rows moved to WebAssembly memory: nested maps of typed arrays, a use stamp, quarter eviction. */
function inHeap(budget: number): Cache {
  const m = new Map<string, Map<number, { v: Float32Array; used: number }>>();
  let bytes = 0,
    clock = 0;
  const get = (i: string, r: number) => {
    const e = m.get(i)?.get(r);
    if (e) e.used = ++clock;
    return e?.v;
  };
  return {
    missing: (i, ids) => ids.filter((r) => !get(i, r)),
    set: (i, r, v) => {
      let x = m.get(i);
      if (!x) m.set(i, (x = new Map()));
      x.set(r, { v, used: ++clock });
      bytes += v.byteLength;
      if (bytes <= budget) return;
      const all = [...m.values()].flatMap((y) => [...y].map(([id, e]) => ({ y, id, e })));
      all.sort((a, b) => a.e.used - b.e.used);
      for (const a of all) {
        if (bytes <= budget * 0.75) break;
        a.y.delete(a.id);
        bytes -= a.e.v.byteLength;
      }
    },
    cosines: copied(get),
  };
}

const vectors = Array.from({ length: ROWS }, () => Float32Array.from({ length: DIM }, () => Math.random() - 0.5));
const unit = (() => {
  const q = Float32Array.from({ length: DIM }, () => Math.random() - 0.5);
  const n = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
  return q.map((x) => x / n);
})();

function run(make: () => Cache): { repeatNs: number; newNs: number; rescoreUs: number } {
  const c = make();
  let sink = 0;
  // New rows every query: miss + set (+ eviction once the budget is full).
  let t0 = performance.now();
  for (let q = 0; q < QUERIES; q++) {
    const ids = Array.from({ length: ROWS }, (_, r) => q * ROWS + r);
    for (const id of c.missing(INDEX, ids)) c.set(INDEX, id, vectors[id % ROWS]);
  }
  const newNs = ((performance.now() - t0) * 1e6) / (QUERIES * ROWS);
  // The last query's rows again and again: all hits.
  const last = Array.from({ length: ROWS }, (_, r) => (QUERIES - 1) * ROWS + r);
  t0 = performance.now();
  for (let q = 0; q < QUERIES; q++) sink += c.missing(INDEX, last).length;
  const repeatNs = ((performance.now() - t0) * 1e6) / (QUERIES * ROWS);
  // Found and scored, as a search's rescoring does.
  t0 = performance.now();
  for (let q = 0; q < QUERIES; q++) {
    sink += c.missing(INDEX, last).length;
    sink += c.cosines(INDEX, last, unit)[q % ROWS];
  }
  const rescoreUs = ((performance.now() - t0) * 1e3) / QUERIES;
  if (sink === 42) console.log("");
  return { repeatNs, newNs, rescoreUs };
}

const load0 = loadavg();
const rows: { impl: string; repeat_ns_per_row: number; new_ns_per_row: number; rescore_us_per_query: number }[] = [];
for (let round = 0; round < 3; round++) {
  for (const [impl, make] of [
    ["hand-written ExactVectorCache (rows in WebAssembly memory)", () => new ExactVectorCache(BUDGET)],
    ["the same, rows in the JS heap (before 2026-11-29)", () => inHeap(BUDGET)],
    ["lru-cache (maxSize, string keys)", () => library(BUDGET)],
  ] as const) {
    const r = run(make);
    rows.push({
      impl,
      repeat_ns_per_row: Math.round(r.repeatNs),
      new_ns_per_row: Math.round(r.newNs),
      rescore_us_per_query: Math.round(r.rescoreUs),
    });
  }
}
const best = (impl: string, k: "repeat_ns_per_row" | "new_ns_per_row" | "rescore_us_per_query") =>
  Math.min(...rows.filter((r) => r.impl === impl).map((r) => r[k]));
const load1 = loadavg();
console.log(
  `rows/query ${ROWS}, queries ${QUERIES}, budget ${BUDGET / 1048576} MiB; ${cpus()[0]?.model}; load ${load0.map((x) => x.toFixed(2)).join(" ")} → ${load1.map((x) => x.toFixed(2)).join(" ")}`,
);
console.log(
  `| implementation | repeated rows (hits), ns/row | new rows (miss+set+evict), ns/row | a query's ${ROWS} rows found + scored, µs |\n|---|---|---|---|`,
);
for (const impl of new Set(rows.map((r) => r.impl)))
  console.log(
    `| ${impl} | ${best(impl, "repeat_ns_per_row")} | ${best(impl, "new_ns_per_row")} | ${best(impl, "rescore_us_per_query")} |`,
  );
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dir, "results", "cache.json"),
  JSON.stringify({ rows, ROWS, QUERIES, BUDGET, loadavgStart: load0, loadavgEnd: load1 }, null, 2),
);
