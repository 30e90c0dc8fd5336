/**
 * The exact-vector cache of search rescoring (src/search/vector-cache.ts) against the kept
 * library `lru-cache` doing the same job (byte budget via maxSize/sizeCalculation, one key per
 * index + row). The access pattern is search's: a query rescores `--rows` rows of 512-d vectors;
 * "repeat" asks the same rows again (all hits), "new" asks fresh rows (a miss and a set each,
 * evicting once past the budget).
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

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const ROWS = arg("rows", 3000);
const QUERIES = arg("queries", 200);
const BUDGET = arg("budget-mb", 64) * 1024 * 1024;
const INDEX = "clip-b32@q8:frames";

interface Cache {
  get(index: string, row: number): Float32Array | undefined;
  set(index: string, row: number, v: Float32Array): void;
}

function library(budget: number): Cache {
  const c = new LRUCache<string, Float32Array>({ maxSize: budget, sizeCalculation: (v) => v.byteLength });
  return { get: (i, r) => c.get(`${i}\u0000${r}`), set: (i, r, v) => void c.set(`${i}\u0000${r}`, v) };
}

const vectors = Array.from({ length: ROWS }, () => new Float32Array(512).fill(Math.random()));

function run(make: () => Cache): { repeatNs: number; newNs: number } {
  const c = make();
  let sink = 0;
  // New rows every query: miss + set (+ eviction once the budget is full).
  let t0 = performance.now();
  for (let q = 0; q < QUERIES; q++) {
    const base = q * ROWS;
    for (let r = 0; r < ROWS; r++) {
      const v = c.get(INDEX, base + r);
      if (v) sink += v[0];
      else c.set(INDEX, base + r, vectors[r]);
    }
  }
  const newNs = ((performance.now() - t0) * 1e6) / (QUERIES * ROWS);
  // The last query's rows again and again: all hits.
  const base = (QUERIES - 1) * ROWS;
  t0 = performance.now();
  for (let q = 0; q < QUERIES; q++) for (let r = 0; r < ROWS; r++) sink += c.get(INDEX, base + r)?.[0] ?? 0;
  const repeatNs = ((performance.now() - t0) * 1e6) / (QUERIES * ROWS);
  if (sink === 42) console.log("");
  return { repeatNs, newNs };
}

const load0 = loadavg();
const rows: { impl: string; repeat_ns_per_row: number; new_ns_per_row: number }[] = [];
for (let round = 0; round < 3; round++) {
  for (const [impl, make] of [
    ["hand-written ExactVectorCache", () => new ExactVectorCache(BUDGET)],
    ["lru-cache (maxSize, string keys)", () => library(BUDGET)],
  ] as const) {
    const r = run(make);
    rows.push({ impl, repeat_ns_per_row: Math.round(r.repeatNs), new_ns_per_row: Math.round(r.newNs) });
  }
}
const best = (impl: string, k: "repeat_ns_per_row" | "new_ns_per_row") =>
  Math.min(...rows.filter((r) => r.impl === impl).map((r) => r[k]));
const load1 = loadavg();
console.log(
  `rows/query ${ROWS}, queries ${QUERIES}, budget ${BUDGET / 1048576} MiB; ${cpus()[0]?.model}; load ${load0.map((x) => x.toFixed(2)).join(" ")} → ${load1.map((x) => x.toFixed(2)).join(" ")}`,
);
console.log("| implementation | repeated rows (hits), ns/row | new rows (miss+set+evict), ns/row |\n|---|---|---|");
for (const impl of new Set(rows.map((r) => r.impl)))
  console.log(`| ${impl} | ${best(impl, "repeat_ns_per_row")} | ${best(impl, "new_ns_per_row")} |`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dir, "results", "cache.json"),
  JSON.stringify({ rows, ROWS, QUERIES, BUDGET, loadavgStart: load0, loadavgEnd: load1 }, null, 2),
);
