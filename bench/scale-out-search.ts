/**
 * Search with one and with two `serve` processes on one PostgreSQL database (issues 26 and 27): an
 * account of `--frames` synthetic 512-d frames (bench/lib/search-data.ts) written once; then two
 * `serve`-role processes (bench/lib/scale-search-server.ts: each its own data dir and in-memory
 * index warmed from the database), each on a loopback port of its own and both on one shared port
 * with SO_REUSEPORT, as `vsearch serve --share-port` binds it. Windows of `--secs`, alternated in
 * `--rounds` (each round in the reverse order of the one before, so drift in the box's load falls on
 * every case alike): 1 and 8 clients against one server (its own port) and against the shared port
 * (the kernel spreads the connections over both). The clients run in a child process
 * (bench/lib/search-clients.ts), every request a text query never asked before (all modes).
 *
 *   node_modules/.bin/bun bench/scale-out-search.ts [--frames 100000] [--secs 10] [--rounds 2] [--warmup 15] [--database-url postgres://…]
 *
 * Reported per window: requests/s, p50/p95, and the CPU each part of the box spent a request — the
 * servers (/proc/<pid>/stat of both), PostgreSQL (the throw-away cluster's postmaster and its
 * backends; not measured with `--database-url`), the clients — and how busy the two cores were
 * (/proc/stat). Issue 27 asks that 8 clients get ≥ 1.8× one client's throughput: the ratio rows say
 * what one and two processes give on this box, and the CPU columns why (what the box has left).
 * Prints tables and writes bench/results/scale-out-search.json.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { findPostgres, freePort, type PgBinaries, startCluster } from "../test/pg/cluster.ts";
import { FixedEmbedder } from "./lib/fixed-embedder.ts";
import { boxTicks, childrenOf, cpuOf } from "./lib/proc-cpu.ts";
import { runSearchClients } from "./lib/run-search-clients.ts";
import { DIM, MODEL, searchDataset, WORDS, writeSearchData } from "./lib/search-data.ts";
import { generateQueries } from "./lib/synthetic.ts";
import { argValue as str } from "./lib/args.ts";

const FRAMES = Number(str("frames") ?? 100_000);
const SECS = Number(str("secs") ?? 10);
const ROUNDS = Number(str("rounds") ?? 2);
const WARMUP = Number(str("warmup") ?? 15);
const ROOT = join(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const OUT = join(import.meta.dir, "results", "scale-out-search.json");
const r2 = (x: number) => Math.round(x * 100) / 100;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};

const work = mkdtempSync(join(tmpdir(), "vsearch-scale-search-"));
const given = str("database-url");
const found = given ? null : findPostgres();
if (found && "missing" in found) throw new Error(`no PostgreSQL: ${found.missing} (or pass --database-url)`);
const cluster = given ? null : await startCluster((found as { bin: PgBinaries }).bin);
const adminUrl = given ?? cluster!.adminUrl;
const dbUrl = given
  ? Object.assign(new URL(given), { pathname: "/scaleout_search" }).toString()
  : cluster!.urlFor("scaleout_search");
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
const children: Bun.Subprocess[] = [];
try {
  await admin.unsafe("DROP DATABASE IF EXISTS scaleout_search WITH (FORCE)");
  await admin.unsafe("CREATE DATABASE scaleout_search");
  const ds = searchDataset(FRAMES);
  const queries = generateQueries(ds, 400, "text", 9);
  const queriesFile = join(work, "queries.f32");
  writeFileSync(queriesFile, new Uint8Array(queries.buffer, queries.byteOffset, queries.byteLength));

  // The rows, written once through an app on the database (as the pipeline writes them).
  const seedDir = join(work, "seed");
  const config = loadConfig(
    { dataDir: seedDir, logLevel: "silent", host: "127.0.0.1", port: 0 },
    {
      VSEARCH_DATABASE_URL: dbUrl,
    },
  );
  const seeder = await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("silent"),
    queryEmbedder: new FixedEmbedder(new Float32Array(DIM).fill(1 / Math.sqrt(DIM)), MODEL),
  });
  const data = await writeSearchData(seeder, ds, seedDir);
  await seeder.close();
  console.log(`${FRAMES} frames written (${data.videos} videos) in ${r2(data.insertMs / 1000)} s`);

  const sharedPort = await freePort();
  const startServer = async (n: number): Promise<{ url: string; shared: string; pid: number }> => {
    const dir = join(work, `server-${n}`);
    mkdirSync(dir);
    const child = Bun.spawn(
      [
        BUN,
        join(import.meta.dir, "lib", "scale-search-server.ts"),
        dir,
        dbUrl,
        queriesFile,
        data.key,
        seedDir,
        String(sharedPort),
      ],
      { stdout: "pipe", stderr: "inherit" },
    );
    children.push(child);
    const reader = child.stdout.getReader();
    let text = "";
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline && !text.includes("\n")) {
      const next = await reader.read();
      if (next.done) break;
      text += new TextDecoder().decode(next.value);
    }
    reader.releaseLock();
    const line = JSON.parse(text.split("\n")[0]) as { url: string; shared: string };
    return { ...line, pid: child.pid };
  };

  /** Four query words; a new combination per call (160 000 before one repeats): no query's embedding is cached. */
  let counter = 0;
  const newText = () => {
    const c = 1 + 37 * counter++;
    if (counter > 160_000) throw new Error("query texts ran out: fewer --secs or --rounds");
    return [1, 20, 400, 8000].map((d) => WORDS[Math.floor(c / d) % 20]).join(" ");
  };
  const postmaster = cluster
    ? Number(readFileSync(join(cluster.dir, "data", "postmaster.pid"), "utf8").split("\n")[0])
    : 0;
  const servers = [await startServer(1), await startServer(2)];
  console.log(
    `servers ready: ${servers.map((s) => `${s.url} (pid ${s.pid})`).join(", ")}; shared ${servers[0].shared}`,
  );

  const window = async (nServers: 1 | 2, clients: number, secs: number) => {
    const url = nServers === 1 ? servers[0].url : servers[0].shared;
    // More than a window can use (~150 requests/s here), each used once.
    const queries = Array.from({ length: secs * 150 }, () => newText());
    const load = r2(loadavg()[0]);
    const serverPids = servers.map((s) => s.pid);
    const pgPids = postmaster ? [postmaster, ...childrenOf(postmaster)] : [];
    const s0 = cpuOf(serverPids);
    const p0 = cpuOf(pgPids);
    const b0 = boxTicks();
    const t0 = performance.now();
    const { result: r, child } = await runSearchClients(url, data.key, clients, secs, queries);
    const wall = (performance.now() - t0) / 1000;
    const n = Math.max(1, r.requests);
    const usage = child.resourceUsage();
    const clientMs = usage ? (Number(usage.cpuTime.user) + Number(usage.cpuTime.system)) / 1000 : Number.NaN;
    // PostgreSQL's backends come and go with connections: those alive at the end count from 0.
    const pgMs = postmaster ? cpuOf([postmaster, ...childrenOf(postmaster)], p0) : Number.NaN;
    const b1 = boxTicks();
    return {
      servers: nServers,
      clients,
      requests: r.requests,
      errors: r.errors,
      req_per_s: r2(r.requests / r.secs),
      p50_ms: r2(pct(r.lat, 50)),
      p95_ms: r2(pct(r.lat, 95)),
      servers_cpu_ms_per_req: r2((cpuOf(serverPids) - s0) / n),
      postgres_cpu_ms_per_req: r2(pgMs / n),
      clients_cpu_ms_per_req: r2(clientMs / n),
      box_busy_cores: r2(((b1.busy - b0.busy) / Math.max(1, b1.total - b0.total)) * cpus().length),
      wall_s: r2(wall),
      load1: load,
    };
  };

  if (WARMUP > 0) {
    // A fresh process compiles the request path's hot functions over its first few hundred requests.
    for (const s of [1, 2] as const)
      console.log(`warm-up (not reported): ${JSON.stringify(await window(s, 1, WARMUP))}`);
  }
  const cases: [1 | 2, number][] = [
    [1, 1],
    [1, 8],
    [2, 1],
    [2, 8],
  ];
  const rows: Record<string, unknown>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [nServers, clients] of round % 2 ? [...cases].reverse() : cases) {
      const row = { round, ...(await window(nServers, clients, SECS)) };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
  const rps = (sv: number, c: number, round: number) =>
    (rows.find((x) => x.servers === sv && x.clients === c && x.round === round)?.req_per_s as number) ?? Number.NaN;
  const ratios = Array.from({ length: ROUNDS }, (_, round) => ({
    round,
    "1 server: 8 clients / 1 client": r2(rps(1, 8, round) / rps(1, 1, round)),
    "2 servers: 8 clients / 1 client": r2(rps(2, 8, round) / rps(2, 1, round)),
    "2 servers, 8 clients / 1 server, 1 client": r2(rps(2, 8, round) / rps(1, 1, round)),
  }));
  console.log(`\nsearch with 1 and 2 serve processes on one PostgreSQL (${cpus()[0]?.model}, ${cpus().length} cores)`);
  console.table(rows);
  console.log("\nthroughput ratios (issue 27: 8 clients ≥ 1.8× one client)");
  console.table(ratios);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify(
      { at: new Date().toISOString(), cpu: cpus()[0]?.model, cores: cpus().length, frames: FRAMES, rows, ratios },
      null,
      2,
    ),
  );
  console.log(`wrote ${OUT}`);
} finally {
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(children.map((c) => Promise.race([c.exited, Bun.sleep(20_000)])));
  for (const c of children) c.kill("SIGKILL");
  await admin.end({ timeout: 1 });
  await cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
