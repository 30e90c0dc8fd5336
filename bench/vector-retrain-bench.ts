/**
 * Retraining while serving: rows are added in batches of 4 096 with an event-loop turn between
 * batches (as the app loads an account), and the inverted lists are retrained in the background
 * as the partition grows (at 65 536 and 262 144 rows with the defaults). Measured: the longest
 * `add` call, the longest event-loop turn (wall and CPU time), searches run between turns while a
 * retrain is under way (p50/p99, and whether they equal the same search after it), the time until
 * the index is trained, and the arena's size before and after. Then a synchronous
 * `rebuild` of all rows (what a retrain used to cost inside one `add`).
 *
 *   node_modules/.bin/bun bench/vector-retrain-bench.ts [--n=300000]
 *
 * Writes bench/results/vector-retrain.json; every figure has the load average beside it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { createVectorIndex, type VectorRow, type VectorSource } from "../src/vector/index.ts";
import { generateDataset, generateQueries } from "./lib/synthetic.ts";

const DIM = 512;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const N = Number(argv.get("n") ?? 300_000);
const BATCH = 4096;
const load = () => Number(loadavg()[0].toFixed(1));
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] : NaN;

console.log(`generating ${N} × ${DIM} (load ${load()})`);
const ds = generateDataset({ n: N, dim: DIM, kind: "clustered", seed: 1 });
const Q = generateQueries(ds, 50, "text", 2);
const source: VectorSource = { getVectors: (ids) => ids.map((id) => ds.vectors.subarray(id * DIM, (id + 1) * DIM)) };
const index = createVectorIndex({ dim: DIM, source });

let maxAdd = 0,
  maxAddCpu = 0,
  firstAddCpu = 0,
  maxTurnWall = 0,
  maxTurnCpu = 0;
const during: number[] = [];
const duringResults: { qi: number; ids: number[] }[] = [];
const load0 = load();
const t0 = performance.now();
let trainedAtMs = 0;
for (let i = 0; i < N; i += BATCH) {
  const rows: VectorRow[] = [];
  for (let j = i; j < Math.min(N, i + BATCH); j++)
    rows.push({
      rowId: j,
      vector: ds.vectors.subarray(j * DIM, (j + 1) * DIM),
      partition: "acct",
      groupA: ds.collection[j],
      groupB: ds.video[j],
    });
  let t = performance.now();
  const ca = process.cpuUsage();
  index.add(rows);
  const addCpu = cpuMs(process.cpuUsage(ca));
  // The first call includes compiling the encoder's code paths.
  if (i === 0) firstAddCpu = addCpu;
  else maxAddCpu = Math.max(maxAddCpu, addCpu);
  maxAdd = Math.max(maxAdd, performance.now() - t);
  // Turns until this batch's retrain (if any) is done, searching between them while one runs.
  do {
    t = performance.now();
    const c = process.cpuUsage();
    await turn();
    maxTurnCpu = Math.max(maxTurnCpu, cpuMs(process.cpuUsage(c)));
    maxTurnWall = Math.max(maxTurnWall, performance.now() - t);
    if (index.training.pending > 0) {
      const qi = during.length % 50;
      t = performance.now();
      const got = index.search(Q.subarray(qi * DIM, (qi + 1) * DIM), { partition: "acct", k: 10 });
      during.push(performance.now() - t);
      if (i + BATCH >= N) duringResults.push({ qi, ids: got.map((r) => r.rowId) });
    }
  } while (index.training.pending > 0 && i + BATCH >= N);
}
const addedMs = performance.now() - t0;
await index.whenTrained();
trainedAtMs = performance.now() - t0;
const st = index.training;
const liveMB = Math.round(index.memoryBytes / 1e6);
// Searches after the swap, for the queries asked during the last retrain (same rows). The flat
// scan is approximate and its candidates depend on row order, so compare recall against an exact
// scan too, not only identity.
let same = 0;
const exactTop = new Map<number, Set<number>>();
const exactOf = (qi: number) => {
  let s = exactTop.get(qi);
  if (!s) {
    const q = Q.subarray(qi * DIM, (qi + 1) * DIM);
    const scores = new Float32Array(N);
    for (let i = 0; i < N; i++) {
      let d = 0,
        nn = 0;
      for (let j = 0, o = i * DIM; j < DIM; j++) {
        d += q[j] * ds.vectors[o + j];
        nn += ds.vectors[o + j] * ds.vectors[o + j];
      }
      scores[i] = d / Math.sqrt(nn);
    }
    s = new Set(
      Array.from(scores.keys())
        .sort((x, y) => scores[y] - scores[x])
        .slice(0, 10),
    );
    exactTop.set(qi, s);
  }
  return s;
};
let recallDuring = 0,
  recallAfter = 0,
  nRecall = 0;
for (const d of duringResults) {
  const ids = index.search(Q.subarray(d.qi * DIM, (d.qi + 1) * DIM), { partition: "acct", k: 10 }).map((r) => r.rowId);
  if (ids.length === d.ids.length && ids.every((x, k) => x === d.ids[k])) same++;
  if (nRecall < 20) {
    const truth = exactOf(d.qi);
    recallDuring += d.ids.filter((x) => truth.has(x)).length / 10;
    recallAfter += ids.filter((x) => truth.has(x)).length / 10;
    nRecall++;
  }
}
const after: number[] = [];
for (let qi = 0; qi < 50; qi++) {
  const t = performance.now();
  index.search(Q.subarray(qi * DIM, (qi + 1) * DIM), { partition: "acct", k: 10 });
  after.push(performance.now() - t);
}
const loadBg = load();
const tr = performance.now();
index.rebuild("acct");
const rebuildS = (performance.now() - tr) / 1000;
const result = {
  n: N,
  lists: index.listCount("acct"),
  retrains: st.retrains,
  slices: st.slices,
  maxSliceWallMs: +st.maxSliceMs.toFixed(1),
  maxSliceCpuMs: +st.maxSliceCpuMs.toFixed(1),
  retrainCpuS: +(st.cpuMs / 1000).toFixed(1),
  maxAddMs: +maxAdd.toFixed(1),
  maxAddCpuMs: +maxAddCpu.toFixed(1),
  firstAddCpuMs: +firstAddCpu.toFixed(1),
  maxTurnWallMs: +maxTurnWall.toFixed(1),
  maxTurnCpuMs: +maxTurnCpu.toFixed(1),
  addAllS: +(addedMs / 1000).toFixed(1),
  trainedS: +(trainedAtMs / 1000).toFixed(1),
  searchesDuring: during.length,
  duringP50: +pct(during, 0.5).toFixed(2),
  duringP99: +pct(during, 0.99).toFixed(2),
  lastRetrainQueriesSameAfterSwap: `${same}/${duringResults.length}`,
  recallDuring: +(recallDuring / Math.max(1, nRecall)).toFixed(3),
  recallAfter: +(recallAfter / Math.max(1, nRecall)).toFixed(3),
  recallQueries: nRecall,
  afterP50: +pct(after, 0.5).toFixed(2),
  afterP99: +pct(after, 0.99).toFixed(2),
  indexMB: liveMB,
  load1: load0,
  load1End: loadBg,
  syncRebuildS: +rebuildS.toFixed(1),
  syncRebuildLoad1: load(),
  indexMBAfterRebuild: Math.round(index.memoryBytes / 1e6),
};
console.table(Object.entries(result).map(([k, v]) => ({ figure: k, value: v })));
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dirname, "results", "vector-retrain.json"),
  JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2),
);
