/**
 * A vector index build without the scale bench's data file and queries (issue 14, "build ≤ 60 s
 * per million rows"): adds in batches of 4 096 as bench/vector-scale-bench.ts does (the loop never
 * yields, so the retrains that `add` queues do not run), then `rebuild`, each in wall and CPU
 * seconds (CPU is steadier on the shared box; run it under `bun --cpu-prof` to see where the time
 * goes). The rows are made in memory chunk by chunk (bench/lib/synthetic.ts, the scale bench's
 * set); their generation is timed apart and not counted in the adds.
 *
 *   node_modules/.bin/bun bench/vector-build-profile.ts [--n=1000000] [--refine-bits=2]
 */
import { loadavg } from "node:os";
import { createVectorIndex } from "../src/vector/index.ts";
import { clusteredStream } from "./lib/synthetic.ts";

const argv = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const N = Number(argv.get("n") ?? 1_000_000);
const BITS = Number(argv.get("refine-bits") ?? 2) as 2 | 4;
const DIM = 512,
  BATCH = 4096;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

const stream = clusteredStream({ n: N, dim: DIM, seed: 1 });
const index = createVectorIndex({ dim: DIM, source: { getVectors: () => [] }, refineBits: BITS });
const buf = new Float32Array(BATCH * DIM);
let genMs = 0,
  addMs = 0,
  addCpu = 0;
const cpuS = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
for (let i = 0; i < N; i += BATCH) {
  const e = Math.min(N, i + BATCH);
  let t = performance.now();
  stream.fill(i, e, buf);
  const batch = [];
  for (let j = i; j < e; j++)
    batch.push({
      rowId: j,
      vector: buf.slice((j - i) * DIM, (j - i + 1) * DIM),
      partition: "acct",
      groupA: stream.collection[j],
      groupB: stream.video[j],
    });
  genMs += performance.now() - t;
  t = performance.now();
  const c0 = cpuS();
  index.add(batch);
  addCpu += cpuS() - c0;
  addMs += performance.now() - t;
}
console.log(
  `n=${N} refineBits=${BITS}: add ${(addMs / 1000).toFixed(1)} s (${((addMs * 1000) / N).toFixed(2)} µs/row, CPU ${addCpu.toFixed(1)} s; generating the rows ${(genMs / 1000).toFixed(1)} s apart), retrains queued ${index.training.pending}, load ${load()}`,
);
const t = performance.now(),
  c1 = cpuS();
index.rebuild("acct");
const rebuildMs = performance.now() - t,
  rebuildCpu = cpuS() - c1;
console.log(
  `n=${N}: rebuild ${(rebuildMs / 1000).toFixed(1)} s (${((rebuildMs * 1000) / N).toFixed(2)} µs/row, CPU ${rebuildCpu.toFixed(1)} s), ${index.listCount("acct")} lists, retrains ${index.training.retrains}, load ${load()}`,
);
console.log(
  `build ${((addMs + rebuildMs) / 1000).toFixed(1)} s = ${(((addMs + rebuildMs) / N) * 1000).toFixed(1)} s per million rows, load ${load()}`,
);
