/**
 * What the shared rate-limit table costs per request (issue 26), side by side in one run:
 *
 *   node_modules/.bin/bun bench/scale-out-rates.ts [--database-url postgres://…/postgres] [--n 3000] [--concurrency 16]
 *
 *   (a) one limiter call, sequential: the in-memory limiter (the embedded store's), the database
 *       one (src/http/rate-windows.ts: one upsert into the UNLOGGED table) on one hot key (one API
 *       key's requests) and on a new key each time (many clients: a row inserted), and a bare
 *       `SELECT 1` on the same pool (the round trip every database call pays);
 *   (b) the same with `--concurrency` calls in flight (servers answer many requests at once; on
 *       the hot key they queue on its row lock);
 *   (c) a whole request, GET /v1/collections through an app on PostgreSQL (authentication, the
 *       limiter's upsert, the list), for the limiter's share.
 *
 * PostgreSQL: `--database-url` (a superuser URL; the database `cluster26_rates` is made there
 * anew), else a throw-away cluster of this machine's PostgreSQL (test/pg/cluster.ts: fsync off).
 * PostgreSQL runs on the same machine (2 cores here): the figures are one box doing both jobs.
 * Prints tables and writes bench/results/scale-out-rates.json. Not a test.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createApp } from "../src/app.ts";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { DEFAULT_RATE_LIMITS, loadConfig } from "../src/config/config.ts";
import { createLogger } from "../src/core/logger.ts";
import { RateLimiter } from "../src/http/rate-limit.ts";
import { DbRateLimiter } from "../src/http/rate-windows.ts";
import { openPgStore } from "../src/store/pg/open.ts";
import { benchPostgres } from "./lib/bench-postgres.ts";
import { argValue as str } from "./lib/args.ts";

const N = Number(str("n") ?? 3000);
const CONC = Number(str("concurrency") ?? 16);
const OUT = join(import.meta.dir, "results", "scale-out-rates.json");
const DB = "cluster26_rates";
const r2 = (x: number) => Math.round(x * 100) / 100;
const load1 = () => r2(loadavg()[0]);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
};

function table(title: string, rows: Record<string, unknown>[]): void {
  console.log(`\n${title}`);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "-").length)));
  console.log(cols.map((c, i) => c.padEnd(w[i]!)).join("  "));
  for (const r of rows) console.log(cols.map((c, i) => String(r[c] ?? "-").padEnd(w[i]!)).join("  "));
}

/** `n` calls of `fn(i)`, `conc` in flight: per-call latencies (µs) and calls per second. */
async function measure(n: number, conc: number, fn: (i: number) => Promise<unknown>) {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      for (let i = next++; i < n; i = next++) {
        const t = performance.now();
        await fn(i);
        lat.push((performance.now() - t) * 1000);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { p50_us: r2(pct(lat, 50)), p99_us: r2(pct(lat, 99)), per_s: Math.round(n / secs), load: load1() };
}

const { cluster, adminUrl, url } = await benchPostgres(str("database-url"), DB);
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.unsafe(`CREATE DATABASE ${DB}`);
await postgres(url, { max: 1 })
  .unsafe("CREATE EXTENSION IF NOT EXISTS vector")
  .then(() => {});

const store = await openPgStore(url, { applicationName: "vsearch bench" });
const limits = { ...DEFAULT_RATE_LIMITS, search: 1_000_000_000 };
const memory = new RateLimiter(limits);
const db = new DbRateLimiter(store.exec, randomBytes(32), limits); // the cluster secret keys its HMAC of `who`
const ping = () => store.exec.get("SELECT 1 AS one");
// Warm the pool and the prepared statements.
for (let i = 0; i < 200; i++) await db.take("search", `warm:${i % 4}`, 1);

const results: Record<string, unknown>[] = [];
for (const conc of [1, CONC]) {
  const rows = [
    { limiter: "in memory, one key", ...(await measure(N, conc, () => memory.take("search", "key:hot", 1))) },
    { limiter: "database, one key", ...(await measure(N, conc, () => db.take("search", "key:hot", 1))) },
    {
      limiter: "database, new key each call",
      ...(await measure(N, conc, (i) => db.take("search", `ip:${conc}:${i}`, 1))),
    },
    { limiter: "SELECT 1 (round-trip floor)", ...(await measure(N, conc, ping)) },
  ];
  table(`(${conc === 1 ? "a" : "b"}) one limiter call, ${conc} in flight, ${N} calls`, rows);
  results.push(...rows.map((r) => ({ concurrency: conc, ...r })));
}

// (c) a whole request on an app over the same database: the limiter's share of it.
const dataDir = mkdtempSync(join(tmpdir(), "vsearch-rates-"));
mkdirSync(dataDir, { recursive: true });
const config = loadConfig(
  { dataDir, logLevel: "silent" },
  { VSEARCH_DATABASE_URL: url, VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "1000000000" },
);
const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent") });
const account = await app.services.accounts.createAccount({ name: "bench" });
const { key } = await app.services.apiKeys.create(account.id, { name: "k" });
const get = async () => {
  const res = await app.fetch(
    new Request("http://localhost/v1/collections", { headers: { authorization: `Bearer ${key}` } }),
  );
  if (res.status !== 200) throw new Error(`GET /v1/collections: ${res.status}`);
  await res.arrayBuffer();
};
for (let i = 0; i < 100; i++) await get();
const request = { request: "GET /v1/collections (PostgreSQL app)", ...(await measure(Math.min(N, 2000), 1, get)) };
table("(c) a whole request, sequential", [request]);
await app.close();
rmSync(dataDir, { recursive: true, force: true });

const rows = Number((await admin.unsafe(`SELECT count(*)::int AS n FROM pg_stat_activity`))[0]?.n ?? 0);
console.log(`\nCPU ${cpus()[0]?.model} ×${cpus().length}; load ${loadavg().map(r2).join(" ")}; sessions ${rows}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(
  OUT,
  JSON.stringify(
    { at: new Date().toISOString(), cpu: cpus()[0]?.model, cores: cpus().length, n: N, results, request },
    null,
    2,
  ),
);
console.log(`wrote ${OUT}`);
await store.close();
await admin.unsafe(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.end();
await cluster?.stop();
