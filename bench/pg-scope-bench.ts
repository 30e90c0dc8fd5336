/**
 * Scoped look-ups of `vector_backend = "pgvector"` (follow-up of issue 25): for scopes of several
 * sizes inside one table, the exact scan against the HNSW walk, side by side on the same queries.
 *
 *   node_modules/.bin/bun bench/pg-scope-bench.ts [--rows 200000] [--scopes 5000,20000,50000,100000]
 *     [--queries 20] [--kind text|image] [--candidates 1000,2000] [--database-url postgres://…] [--db-prefix pgscope]
 *
 * One account of `--rows` synthetic clustered 512-d frames (bench/lib/synthetic.ts, written with
 * COPY: bench/lib/copy-frames.ts), its videos (1 000 frames each) spread over collections of the
 * `--scopes` sizes (the rest in one more collection), interleaved so that no collection is one
 * region of the graph. Per scope (each collection, then the whole account), on text-like queries
 * (the hard kind: off the image manifold) — p50 / p99 ms and recall@10 against a brute-force scan
 * of the scope's rows in JS:
 *   - `count`: `countInScope` up to the backend's count cap (what choosing the path costs);
 *   - `exact_before`: the exact scan's SQL before this bench (the planner read every vector of the table);
 *   - `exact`: `nearestExact`, every row of the scope compared in PostgreSQL;
 *   - `hnsw_before`: the walk as the backend ran it before this bench (ef_search 1000,
 *     max_scan_tuples 100 000, 4k = 40 rows asked of the iterative scan);
 *   - `hnsw_cN`: the same walk asked for N in-scope rows (`--candidates`), max_scan_tuples 1 000 000;
 *   - `backend`: `PgVectorBackend.nearest` with its defaults (the rule this bench chose; `--kind
 *     image` passes the image probe, so ef_search 400; the hnsw_* columns stay at 1 000).
 * The HNSW index is built once and kept with the database (`--database-url`: `<db-prefix>_<rows>`
 * is kept there for the next run; else a throw-away cluster of this machine's PostgreSQL,
 * test/pg/cluster.ts). PostgreSQL and the bench share the box's cores. Prints a table, writes
 * bench/results/pg-scope.json. Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type BenchApp, createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { exactCrossover, PgVectorBackend } from "../src/search/pgvector-backend.ts";
import { PgVectorStore } from "../src/search/pgvector-store.ts";
import { IMAGE_QUERY_PROBE } from "../src/search/probe-policy.ts";
import { SearchStore } from "../src/search/store.ts";
import type { Executor } from "../src/store/executor.ts";
import { embeddingParam } from "../src/indexing/embedding-sql.ts";
import { copyFrames } from "./lib/copy-frames.ts";
import { DIM } from "./lib/search-data.ts";
import { generateDataset, generateQueries } from "./lib/synthetic.ts";
import { benchPostgres } from "./lib/bench-postgres.ts";
import { argValue as str } from "./lib/args.ts";

const list = (name: string, fallback: string) => (str(name) ?? fallback).split(",").filter(Boolean).map(Number);
const ROWS = Number(str("rows") ?? 200_000);
const SCOPES = list("scopes", "5000,20000,50000,100000");
const QUERIES = Number(str("queries") ?? 20);
const KIND = (str("kind") ?? "text") as "text" | "image";
const CANDIDATES = list("candidates", "1000,2000");
const DB = `${str("db-prefix") ?? "pgscope"}_${ROWS}`;
const PER = 1000;
const K = 10;
const MODEL = "bench-clip-b32@synthetic";
const OUT = join(import.meta.dir, "results", "pg-scope.json");
if (!["text", "image"].includes(KIND)) throw new Error("--kind: text or image");
if (SCOPES.some((s) => s % PER) || SCOPES.reduce((a, b) => a + b, 0) >= ROWS)
  throw new Error(`--scopes: multiples of ${PER} that sum to less than --rows`);

const r2 = (x: number) => Math.round(x * 100) / 100;
const load1 = () => r2(loadavg()[0]);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
};
const t00 = performance.now();
const log = (m: string) => console.log(`[${((performance.now() - t00) / 1000).toFixed(0).padStart(5)} s] ${m}`);

/** Collection of each video: the `--scopes` sizes, then the rest, dealt out in a fixed pseudo-random order. */
function collectionOfVideos(videos: number): number[] {
  const labels: number[] = [];
  SCOPES.forEach((s, c) => {
    for (let i = 0; i < s / PER; i++) labels.push(c);
  });
  while (labels.length < videos) labels.push(SCOPES.length);
  let seed = 12345;
  for (let i = labels.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const j = seed % (i + 1);
    [labels[i], labels[j]] = [labels[j], labels[i]];
  }
  return labels;
}

/** Ids of the k nearest of `rows` by brute force (dot product of unit vectors = cosine). */
function truthOf(vectors: Float32Array, q: Float32Array, ids: number[], rows: Int32Array): Set<number> {
  const bestId: number[] = [];
  const bestS: number[] = [];
  for (const i of rows) {
    const o = i * DIM;
    let s = 0;
    for (let j = 0; j < DIM; j++) s += vectors[o + j] * q[j];
    if (bestS.length === K && s <= bestS[K - 1]) continue;
    let at = bestS.length;
    while (at > 0 && bestS[at - 1] < s) at--;
    bestS.splice(at, 0, s);
    bestId.splice(at, 0, ids[i]);
    if (bestS.length > K) {
      bestS.pop();
      bestId.pop();
    }
  }
  return new Set(bestId);
}

/** The exact scan as `nearestExact` ran it before this bench: a join the planner read as every vector of the table, sorted. */
async function exactBefore(exec: Executor, scope: { accountId: string; collectionId?: string }, q: Float32Array) {
  return await exec
    .transaction(async () => {
      await exec.get("SELECT set_config('jit', 'off', true)");
      return await exec.all<{ id: number }>(
        `SELECT x.id, 1 - (v.embedding <=> ?::vector) AS raw FROM frames x JOIN frame_vectors v ON v.frame_id = x.id
        WHERE x.account_id = ? ${scope.collectionId ? "AND x.collection_id = ?" : ""} AND x.model_id = ? AND vector_dims(v.embedding) = ${DIM}
        ORDER BY raw DESC, x.id LIMIT ?`,
        embeddingParam("postgres", q),
        scope.accountId,
        ...(scope.collectionId ? [scope.collectionId] : []),
        MODEL,
        K,
      );
    })
    .then((rows) => rows.map((r) => ({ id: Number(r.id) })));
}

async function openApp(dataDir: string, databaseUrl: string, mediaRoot: string): Promise<BenchApp> {
  const env = { VSEARCH_DATABASE_URL: databaseUrl, VSEARCH_MEDIA_ROOT: mediaRoot, VSEARCH_LOG_LEVEL: "warn" };
  const config = loadConfig({ dataDir, logLevel: "silent", host: "127.0.0.1", port: 0 }, env);
  return await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent") });
}

async function main() {
  const started = new Date().toISOString();
  const load0 = loadavg();
  const work = mkdtempSync(join(tmpdir(), "vsearch-pg-scope-"));
  const { cluster, adminUrl, url } = await benchPostgres(str("database-url"), DB);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const mediaRoot = join(tmpdir(), "vsearch-pg-scope-media", DB);
  const rows: Record<string, unknown>[] = [];
  const result: Record<string, unknown> = { started, cpu: cpus()[0]?.model, cores: availableParallelism() };
  try {
    const kept = (await admin`SELECT 1 FROM pg_database WHERE datname = ${DB}`).length > 0;
    if (!kept) {
      rmSync(mediaRoot, { recursive: true, force: true });
      await admin.unsafe(`CREATE DATABASE ${DB}`);
      await admin.unsafe(`ALTER DATABASE ${DB} SET maintenance_work_mem = '1GB'`);
    }
    mkdirSync(mediaRoot, { recursive: true });
    result.postgres = (await admin`SHOW server_version`)[0].server_version;
    result.pgvector = (
      await admin`SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`
    )[0]?.default_version;
    const ds = generateDataset({
      n: ROWS,
      dim: DIM,
      kind: "clustered",
      framesPerVideo: PER,
      framesPerShot: 10,
      seed: 3,
    });
    const videoCols = collectionOfVideos(Math.ceil(ROWS / PER));
    const app = await openApp(join(work, "app"), url, mediaRoot);
    try {
      const exec = app.internals.db;
      const have = Number((await exec.get<{ n: number }>("SELECT count(*) AS n FROM frames"))!.n);
      if (have !== ROWS) {
        if (have) throw new Error(`database ${DB} holds ${have} frames, not ${ROWS}: drop it`);
        const t0 = performance.now();
        await copyFrames(app, url, ds, {
          dir: work,
          per: PER,
          modelId: MODEL,
          log,
          collections: SCOPES.length + 1,
          collectionOf: (v) => videoCols[v],
        });
        await exec.exec("DELETE FROM tasks WHERE kind = 'ingest'");
        await exec.exec(
          "UPDATE jobs SET status = 'done', progress_pct = 100, stages_pending = '[]' WHERE status <> 'done'",
        );
        await exec.exec("VACUUM (ANALYZE) frames, frame_vectors");
        log(`copied ${ROWS} frames in ${r2((performance.now() - t0) / 1000)} s (load ${load1()})`);
      }
      const pg = new PgVectorStore(exec);
      if (!(await pg.hnswIndexes()).some((i) => i.valid && i.dim === DIM)) {
        const t0 = performance.now();
        await exec.exec("DROP INDEX IF EXISTS frame_vectors_hnsw_512");
        await pg.createHnswIndex("frames", DIM, { m: 16, efConstruction: 64 });
        log(`HNSW index built in ${r2((performance.now() - t0) / 1000)} s (load ${load1()})`);
      }
      const meta = await exec.all<{ id: number; account_id: string; collection_id: string }>(
        "SELECT id, account_id, collection_id FROM frames ORDER BY id",
      );
      const ids = meta.map((m) => Number(m.id));
      const accountId = meta[0].account_id;
      const byCol = new Map<string, number[]>();
      meta.forEach((m, i) => {
        const r = byCol.get(m.collection_id);
        if (r) r.push(i);
        else byCol.set(m.collection_id, [i]);
      });
      const scopes = [...byCol.entries()]
        .filter(([, r]) => SCOPES.includes(r.length))
        .sort((a, b) => a[1].length - b[1].length)
        .map(([collectionId, r]) => ({ scope: { accountId, collectionId }, rows: Int32Array.from(r) }));
      scopes.push({ scope: { accountId } as never, rows: Int32Array.from(meta.keys()) });
      const search = new SearchStore(exec);
      const backend = new PgVectorBackend(search, pg);
      const queries = generateQueries(ds, QUERIES, KIND, 13);
      // What search passes for an image query (ef_search 400); a text query's filtered look-up has none (1 000).
      const probe = KIND === "image" ? IMAGE_QUERY_PROBE : undefined;
      for (const { scope, rows: scopeRows } of scopes) {
        const truths = Array.from({ length: QUERIES }, (_, i) =>
          truthOf(ds.vectors, queries.subarray(i * DIM, (i + 1) * DIM), ids, scopeRows),
        );
        const variants: [string, (q: Float32Array) => Promise<{ id: number }[]>][] = [
          ["exact_before", (q) => exactBefore(exec, scope, q)],
          ["exact", (q) => pg.nearestExact("frames", scope, MODEL, q, K, null)],
          [
            "hnsw_before",
            (q) => pg.nearestHnsw("frames", scope, MODEL, q, K, null, { efSearch: 1000, maxScanTuples: 100_000 }),
          ],
          ...CANDIDATES.map(
            (c) =>
              [
                `hnsw_c${c}`,
                (q: Float32Array) =>
                  pg.nearestHnsw("frames", scope, MODEL, q, K, null, {
                    efSearch: 1000,
                    maxScanTuples: 1_000_000,
                    candidates: c,
                  }),
              ] as [string, (q: Float32Array) => Promise<{ id: number }[]>],
          ),
          ["backend", (q) => backend.nearest({ kind: "frames", scope, modelId: MODEL, query: q, k: K, probe })],
        ];
        const stats = new Map(variants.map(([n]) => [n, { ms: [] as number[], found: 0 }]));
        const countMs: number[] = [];
        const load = load1();
        for (let i = 0; i < QUERIES; i++) {
          const q = queries.slice(i * DIM, (i + 1) * DIM);
          let t = performance.now();
          await pg.countInScope("frames", scope, MODEL, exactCrossover(await pg.indexRows("frames", DIM), 2000));
          countMs.push(performance.now() - t);
          // Rotated, so no variant always runs first (after another's pages were read).
          for (let v = 0; v < variants.length; v++) {
            const [name, run] = variants[(v + i) % variants.length];
            t = performance.now();
            const hits = await run(q);
            const st = stats.get(name)!;
            st.ms.push(performance.now() - t);
            st.found += hits.filter((h) => truths[i].has(h.id)).length;
          }
        }
        const row: Record<string, unknown> = {
          scope: scope.collectionId ? "collection" : "account",
          rows: scopeRows.length,
          share: r2(scopeRows.length / ROWS),
          count_p50_ms: r2(pct(countMs, 50)),
        };
        for (const [name, st] of stats)
          row[name] = `${r2(pct(st.ms, 50))} / ${r2(pct(st.ms, 99))}, ${r2(st.found / (QUERIES * K))}`;
        row.load1 = load;
        rows.push(row);
        log(JSON.stringify(row));
      }
    } finally {
      await app.close();
    }
  } finally {
    await admin.end();
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  }
  Object.assign(result, {
    args: { rows: ROWS, scopes: SCOPES, queries: QUERIES, kind: KIND, candidates: CANDIDATES },
    loadavgAtStart: load0,
    loadavgAtEnd: loadavg(),
    columns: "p50 / p99 ms, recall@10 (count: p50 ms of countInScope up to the backend's cap)",
    rows,
  });
  console.log(`\n${KIND}-like queries, ${ROWS} rows, k ${K}: p50 / p99 ms, recall@10`);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "-").length)));
  console.log(cols.map((c, i) => c.padEnd(w[i])).join("  "));
  for (const r of rows) console.log(cols.map((c, i) => String(r[c] ?? "-").padEnd(w[i])).join("  "));
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
  console.log(
    `\n${result.cpu}, ${result.cores} cores, PostgreSQL ${result.postgres}, pgvector ${result.pgvector}; load ${load0.map((x) => x.toFixed(2)).join(" ")} → ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}; wrote ${OUT}`,
  );
}

await main();
