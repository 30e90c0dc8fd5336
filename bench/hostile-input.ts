/**
 * Hostile input costs nothing (issue 9). Against a real `vsearch serve` child process:
 *  1. event loop: a cheap request (/healthz) polled every 10 ms while 8 connections send
 *     50 000-deep JSON bodies to the unauthenticated sign-in route; its latency is how long the
 *     loop was held. Plus the server-side time of one deep body, alone.
 *  2. limiter: 200 000 distinct clients (behind a trusted proxy, one X-Forwarded-For each) guess
 *     one e-mail — every one is a new limiter entry; throughput, latency, RSS growth.
 * Run: node_modules/.bin/bun bench/hostile-input.ts [--clients 200000]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { loadAvg, startBenchServer } from "./lib/server.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const CLIENTS = arg("--clients", 200_000);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const round = (x: number) => Math.round(x * 100) / 100;

const srv = await startBenchServer({ VSEARCH_TRUSTED_PROXIES: "127.0.0.1/32" });
const loadStart = loadAvg();
const results: Record<string, unknown> = { load_start: loadStart };

// 1. Event loop under deep-nesting bodies --------------------------------------------------------
const deep = "[".repeat(50_000) + "]".repeat(50_000);
async function pollHealth(ms: number) {
  const lat: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    await (await fetch(`${srv.url}/healthz`)).arrayBuffer();
    lat.push(performance.now() - t0);
    await Bun.sleep(10);
  }
  return lat;
}
const single: number[] = [];
for (let i = 0; i < 30; i++) {
  const t0 = performance.now();
  const r = await fetch(`${srv.url}/v1/auth/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: deep,
  });
  await r.arrayBuffer();
  if (r.status !== 422) throw new Error(`deep body → ${r.status}`);
  single.push(performance.now() - t0);
}
const idle = await pollHealth(3000);
let bombs = 0;
let bombing = true;
const bombers = Array.from({ length: 8 }, async () => {
  while (bombing) {
    const r = await fetch(`${srv.url}/v1/auth/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: deep,
    });
    await r.arrayBuffer();
    if (r.status !== 422) throw new Error(`deep body → ${r.status}`);
    bombs++;
  }
});
const underAttack = await pollHealth(10_000);
bombing = false;
await Promise.all(bombers);
results.event_loop = {
  deep_body_alone_ms: { p50: round(pct(single, 50)), p99: round(pct(single, 99)) },
  healthz_idle_ms: { p50: round(pct(idle, 50)), p99: round(pct(idle, 99)), max: round(Math.max(...idle)) },
  healthz_under_deep_bodies_ms: {
    p50: round(pct(underAttack, 50)),
    p99: round(pct(underAttack, 99)),
    max: round(Math.max(...underAttack)),
  },
  deep_bodies_per_s: round(bombs / 10),
};

// 2. 200 000 distinct clients against the sign-in limiter ---------------------------------------
await srv.cli(
  "users",
  "create",
  "--account",
  (await srv.cli("accounts", "create", "--name", "victim")).id,
  "--email",
  "victim@example.com",
  "--password",
  "correct horse battery",
);
const body = JSON.stringify({ email: "victim@example.com", password: "wrong password" });
// Use up the e-mail's budget first: from here on every guess is refused without a password hash.
for (let i = 0; i < 60; i++) {
  await fetch(`${srv.url}/v1/auth/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": `198.51.100.${i}` },
    body,
  });
}
const rssBefore = srv.rssMb();
let n = 0;
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const ac = await autocannon({
  url: `${srv.url}/v1/auth/sessions`,
  connections: 50,
  amount: CLIENTS,
  requests: [
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      setupRequest: (req: any) => ({ ...req, headers: { ...req.headers, "x-forwarded-for": ip(n++) } }),
    },
  ],
});
const rssAfter = srv.rssMb();
results.limiter = {
  distinct_clients: n,
  requests_per_s: round(ac.requests.average),
  latency_ms: { p50: ac.latency.p50, p99: ac.latency.p99 },
  errors: ac.errors,
  status_codes: (ac as any).statusCodeStats,
  rss_mb: {
    before: round(rssBefore.rss),
    after: round(rssAfter.rss),
    growth: round(rssAfter.rss - rssBefore.rss),
    peak: round(rssAfter.hwm),
  },
};
results.load_end = loadAvg();
await srv.stop();

console.table({
  "deep body alone (ms)": results.event_loop && (results.event_loop as any).deep_body_alone_ms,
  "/healthz idle (ms)": (results.event_loop as any).healthz_idle_ms,
  "/healthz under 8× deep bodies (ms)": (results.event_loop as any).healthz_under_deep_bodies_ms,
});
console.log(JSON.stringify(results, null, 2));
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(join(import.meta.dirname, "results", "hostile-input.json"), JSON.stringify(results, null, 2));
