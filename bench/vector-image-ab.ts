/**
 * Image-query cost, before against after, in one process (issue 27: the fixed per-query cost).
 * Builds two indexes on the same rows — one from a copy of another revision's src/vector
 * (--before=DIR, e.g. `git archive main src/vector | tar -x -C /tmp/before`, then
 * --before=/tmp/before/src/vector) and one from this tree's — and runs the same image-like
 * queries through both in rounds ordered before, after, after, before, … so that both see the
 * same load. Per probe setting: CPU-ms a query (process CPU over the pass), p50, recall@10
 * against the exact top-10, task recall (own shot in the top-10), rows read, load average.
 *
 *   node_modules/.bin/bun bench/vector-image-ab.ts --before=/tmp/before/src/vector [--n=100000]
 *     [--queries=200] [--rounds=8] [--data-dir=/tmp/img27-data] [--probes=app,0.01] [--only=after]
 *
 * The set and its exact answers come from bench/vector-scale-bench.ts's --data-dir (run it once
 * with --keep-data=1 --sizes=N --queries=Q first). --only=after (or before) runs one side only,
 * for `bun --cpu-prof-md`. Writes bench/results/vector-image-ab.json.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { IMAGE_QUERY_PROBE } from "../src/search/probe-policy.ts";
import type { ProbePolicy } from "../src/search/indexes.ts";
import type { SearchStats, VectorSource } from "../src/vector/index.ts";
import { mapRows } from "./lib/exact-file.ts";
import { clusteredStream, generateQuerySet, taskHits } from "./lib/synthetic.ts";

const DIM = 512;
const K = 10;
const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const N = Number(argv.get("n") ?? 100000);
const NQ = Number(argv.get("queries") ?? 200);
const ROUNDS = Number(argv.get("rounds") ?? 8);
const DATA_DIR = argv.get("data-dir") ?? "/tmp/img27-data";
const BEFORE = argv.get("before");
const ONLY = argv.get("only");
const PROBES = (argv.get("probes") ?? "app,0.01").split(",").filter(Boolean);
const load1 = () => Math.round(loadavg()[0] * 100) / 100;

type IndexModule = typeof import("../src/vector/index.ts");
const sides: { name: string; mod: IndexModule }[] = [];
if (ONLY !== "after") {
  if (!BEFORE) throw new Error("--before=DIR (a copy of src/vector) is required unless --only=after");
  sides.push({ name: "before", mod: (await import(resolve(BEFORE, "index.ts"))) as IndexModule });
}
if (ONLY !== "before") sides.push({ name: "after", mod: await import("../src/vector/index.ts") });

const path = join(DATA_DIR, `clustered-s1-d${DIM}-n${N}.f32`);
const truthPath = join(DATA_DIR, `truth-s1-d${DIM}-n${N}-q${NQ}-k${K}.json`);
if (!existsSync(path) || !existsSync(truthPath))
  throw new Error(
    `run bench/vector-scale-bench.ts --sizes=${N} --queries=${NQ} --keep-data=1 --data-dir=${DATA_DIR} first`,
  );
const stream = clusteredStream({ n: N, dim: DIM, seed: 1 });
const data = mapRows(path, N, DIM);
const { video, collection, shot } = stream;
const imageSet = generateQuerySet({ ...stream, row: data.row }, NQ, "image", 7);
// The scale bench's truth file: [text, image, text+collection, image+collection, text+video].
const truth = (JSON.parse(readFileSync(truthPath, "utf8")) as number[][][])[1].map((ids) => new Set(ids));
const source: VectorSource = { getVectors: (ids) => ids.map((id) => data.row(id)) };

const built = sides.map((s) => {
  const index = s.mod.createVectorIndex({ dim: DIM, source });
  for (let i = 0; i < N; i += 4096) {
    const batch = [];
    for (let j = i; j < Math.min(N, i + 4096); j++)
      batch.push({ rowId: j, vector: data.row(j), partition: "acct", groupA: collection[j], groupB: video[j] });
    index.add(batch);
  }
  index.rebuild("acct");
  return { ...s, index };
});
console.log(
  `n=${N}: built ${built.map((b) => `${b.name} ${b.index.listCount("acct")} lists`).join(", ")}, load ${load1()}`,
);

interface Acc {
  cpuUs: number;
  q: number;
  lat: number[];
  hits: number;
  scanned: number;
  coarse: number;
  results: number[][];
  loads: number[];
}
const acc = new Map<string, Acc>();
const stats = {} as SearchStats;
/** "app" (the app's image policy) or a share, then optional "/cN" (candidates) and "/rN" (rows rescored). */
const probeOf = (spec: string) => {
  const [p, ...mods] = spec.split("/");
  const base: ProbePolicy = p === "app" ? IMAGE_QUERY_PROBE : { share: Number(p) };
  const opt = (c: string) => {
    const m = mods.find((x) => x.startsWith(c));
    return m ? Number(m.slice(1)) : undefined;
  };
  // "/w": the wide stages (no inDistribution), as before issue 27's change.
  return {
    ...base,
    inDistribution: mods.includes("w") ? undefined : base.inDistribution,
    candidates: opt("c"),
    rescore: opt("r"),
  };
};

function pass(b: (typeof built)[number], p: string, keep: boolean): void {
  const key = `${b.name} ${p}`;
  let a = acc.get(key);
  if (!a) acc.set(key, (a = { cpuUs: 0, q: 0, lat: [], hits: 0, scanned: 0, coarse: 0, results: [], loads: [] }));
  const pr = probeOf(p);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < NQ; i++) {
    const q = imageSet.queries.subarray(i * DIM, (i + 1) * DIM);
    const t = performance.now();
    const got = b.index
      .search(q, {
        partition: "acct",
        k: K,
        probe: pr.share,
        probeAt: pr.at,
        inDistribution: pr.inDistribution,
        candidates: pr.candidates,
        rescore: pr.rescore,
        stats,
      })
      .map((r) => r.rowId);
    a.lat.push(performance.now() - t);
    if (keep) {
      let h = 0;
      for (const id of got) if (truth[i].has(id)) h++;
      a.hits += h / K;
      a.results.push(got);
    }
    a.scanned += stats.scanned ?? 0;
    a.coarse += stats.coarse;
  }
  const cpu = process.cpuUsage(cpu0);
  a.cpuUs += cpu.user + cpu.system;
  a.q += NQ;
  a.loads.push(load1());
}

// Warm-up pass (JIT, page cache of the rescored rows), then rounds before, after, after, before, ….
for (const b of built) for (const p of PROBES) pass(b, `${p}`, false);
acc.clear();
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? built : [...built].reverse();
  for (const b of order) for (const p of PROBES) pass(b, p, r === 0);
}

const out: Record<string, unknown>[] = [];
console.log("| side | probe | rows read | coarse | CPU-ms/q | p50 ms | recall@10 | task shot | load |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|");
for (const p of PROBES)
  for (const b of built) {
    const a = acc.get(`${b.name} ${p}`)!;
    const lat = [...a.lat].sort((x, y) => x - y);
    const task = taskHits({ shot, video }, imageSet.sources, a.results);
    const row = {
      side: b.name,
      probe: p,
      scanned: Math.round(a.scanned / a.q),
      coarse: Math.round(a.coarse / a.q),
      cpuMs: a.cpuUs / 1000 / a.q,
      p50: lat[Math.floor(lat.length / 2)],
      recall: a.hits / NQ,
      taskShot: task.shot,
      load: `${Math.min(...a.loads)}–${Math.max(...a.loads)}`,
    };
    out.push(row);
    console.log(
      `| ${row.side} | ${p} | ${row.scanned} | ${row.coarse} | ${row.cpuMs.toFixed(3)} | ${row.p50.toFixed(3)} | ${row.recall.toFixed(3)} | ${row.taskShot.toFixed(3)} | ${row.load} |`,
    );
  }
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dir, "results", "vector-image-ab.json"),
  JSON.stringify({ n: N, queries: NQ, rounds: ROUNDS, date: new Date().toISOString(), rows: out }, null, 1),
);
