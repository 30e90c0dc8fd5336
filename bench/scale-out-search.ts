/**
 * Search with one and with two `serve` processes on one PostgreSQL database, under the same load
 * (issue 26): an account of `--frames` synthetic 512-d frames (bench/lib/search-data.ts) written
 * once; then 1 server answering `--clients` clients, and 2 servers (each its own process, its own
 * data dir and in-memory index warmed from the database) answering half of them each. The clients
 * run in child processes (bench/lib/search-clients.ts), each new text query used once (all modes).
 *
 *   node_modules/.bin/bun bench/scale-out-search.ts [--frames 20000] [--clients 4] [--secs 20] [--database-url postgres://…]
 *
 * On one 2-core machine the servers, PostgreSQL and the clients share the same two cores: a second
 * server adds no CPU, so the figure is what two servers cost on one box, not what two hosts give
 * (for that: run the servers on separate machines against one database and point the clients at
 * both, as docs/SCALE-OUT.md describes). Prints a table and writes bench/results/scale-out-search.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { findPostgres, type PgBinaries, startCluster } from "../test/pg/cluster.ts";
import { FixedEmbedder } from "./lib/fixed-embedder.ts";
import { DIM, MODEL, searchDataset, writeSearchData } from "./lib/search-data.ts";
import { generateQueries } from "./lib/synthetic.ts";

const argv = process.argv;
const str = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? argv[i + 1] : undefined;
};
const FRAMES = Number(str("frames") ?? 20_000);
const CLIENTS = Number(str("clients") ?? 4);
const SECS = Number(str("secs") ?? 20);
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

  const startServer = async (n: number): Promise<string> => {
    const dir = join(work, `server-${n}-${Date.now()}`);
    mkdirSync(dir);
    const child = Bun.spawn(
      [BUN, join(import.meta.dir, "lib", "scale-search-server.ts"), dir, dbUrl, queriesFile, data.key],
      {
        stdout: "pipe",
        stderr: "inherit",
      },
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
    const url = JSON.parse(text.split("\n")[0]).url as string;
    return url;
  };

  let word = 0;
  const texts = (n: number) =>
    Array.from({ length: n }, () => {
      const c = 1 + 37 * word++;
      return `${["red car", "beach", "city night", "dog", "snow", "kitchen", "crowd", "forest", "boat", "stage"][c % 10]} ${c}`;
    });
  const rows: Record<string, unknown>[] = [];
  const urls = [await startServer(1)];
  for (const servers of [1, 2]) {
    if (servers === 2) urls.push(await startServer(2));
    const load = r2(loadavg()[0]);
    // The same clients in all, split evenly over the servers (a load balancer's round robin).
    const share = Array.from(
      { length: servers },
      (_, i) => Math.floor(CLIENTS / servers) + (i < CLIENTS % servers ? 1 : 0),
    );
    const runs = await Promise.all(
      urls.slice(0, servers).map(async (url, i) => {
        const child = Bun.spawn(
          [BUN, join(import.meta.dir, "lib", "search-clients.ts"), url, data.key, String(share[i]), String(SECS)],
          {
            stdin: new Blob([JSON.stringify(texts(SECS * 60))]),
            stdout: "pipe",
            stderr: "inherit",
          },
        );
        const out = await new Response(child.stdout).text();
        if ((await child.exited) !== 0) throw new Error(`clients failed: ${out}`);
        return JSON.parse(out) as { requests: number; errors: number; secs: number; lat: number[] };
      }),
    );
    const lat = runs.flatMap((r) => r.lat);
    const row = {
      servers,
      clients: CLIENTS,
      frames: FRAMES,
      req_per_s: r2(runs.reduce((a, r) => a + r.requests / r.secs, 0)),
      p50_ms: r2(pct(lat, 50)),
      p99_ms: r2(pct(lat, 99)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
      load1_before: load,
      load1_after: r2(loadavg()[0]),
    };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  console.log(`\nsearch with 1 and 2 serve processes on one PostgreSQL (${cpus()[0]?.model}, ${cpus().length} cores)`);
  console.table(rows);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify({ at: new Date().toISOString(), cpu: cpus()[0]?.model, cores: cpus().length, rows }, null, 2),
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
