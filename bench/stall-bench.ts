/**
 * Can one caller stall everyone else (issue 21)? Against a real `vsearch serve` child process with
 * two accounts: account A attacks, account B's cheap requests are timed meanwhile.
 *  1. idle: B polls `GET /v1/videos` (authenticated, a database read) and `/healthz` every 20 ms;
 *  2. MCP batches: 4 clients of A send JSON-RPC batches of 100 `tools/list` to /v1/mcp back to back;
 *  3. deep MCP bodies: 2 clients of A send 1 MiB of `[` to /v1/mcp back to back;
 *  4. clip flood: A asks for 40 distinct 8 s clips of its video and closes each socket after 1 s,
 *     then B asks for one 1 s clip of its own video: how long B's clip takes, and how many of A's
 *     encodes the server ran.
 * The MCP attackers run in a child process of their own (this script with `--attacker`), so what B
 * waits for is the server, not the attackers' own sending on B's event loop; `--attackers here` puts
 * them back on this process's loop (how the first runs of 2026-11-28 measured: bodies are encoded
 * once, but 1 MiB sends still share B's loop).
 * B's own search is not timed: the bench server has no models installed; `GET /v1/videos` goes
 * through the same auth, limiter and event loop.
 * Run: node_modules/.bin/bun bench/stall-bench.ts [--secs 8] [--label after] [--attackers apart|here]
 *        [--mcp-only (no clip flood)]
 * Writes bench/results/stall-<label>.json.
 */
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { loadAvg, startBenchServer } from "./lib/server.ts";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const SECS = Number(arg("--secs", "8"));
const LABEL = arg("--label", "run");
const ATTACKERS = arg("--attackers", "apart");
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const round = (x: number) => Math.round(x * 10) / 10;
const summary = (xs: number[]) => ({ n: xs.length, p50: round(pct(xs, 50)), p99: round(pct(xs, 99)) });

const mcpHeaders = (key: string) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
});
const attackBody = (kind: string) =>
  new TextEncoder().encode(
    kind === "deep"
      ? "[".repeat(1024 * 1024)
      : JSON.stringify(
          Array.from({ length: 100 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "tools/list", params: {} })),
        ),
  );

/** `clients` loops posting one body to /v1/mcp until `until()` says stop; answers counted by status. */
async function attack(url: string, key: string, clients: number, kind: string, until: () => boolean) {
  const body = attackBody(kind); // encoded once: the client's own work stays small
  const statuses: Record<number, number> = {};
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!until()) {
        const r = await fetch(`${url}/v1/mcp`, { method: "POST", headers: mcpHeaders(key), body });
        await r.arrayBuffer();
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

if (process.argv.includes("--attacker")) {
  // The child: --attacker URL KEY CLIENTS KIND MS; prints its answers' statuses as JSON.
  const [url, key, clients, kind, ms] = process.argv.slice(process.argv.indexOf("--attacker") + 1);
  const end = performance.now() + Number(ms);
  console.log(JSON.stringify(await attack(url!, key!, Number(clients), kind!, () => performance.now() >= end)));
  process.exit(0);
}

const srv = await startBenchServer({
  // The limiter is not what is measured: high limits, so every attack request reaches the server's work.
  VSEARCH_RATE_LIMIT_AGENT: "1000000",
  VSEARCH_RATE_LIMIT_VIDEOS: "1000000",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000",
  VSEARCH_RATE_LIMIT_JOBS: "1000000",
});
const results: Record<string, unknown> = { label: LABEL, load_start: loadAvg(), secs: SECS };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const bAccount = await srv.cli("accounts", "create", "--name", "tenant-b");
const bKey: string = (await srv.cli("keys", "create", "--account", bAccount.id, "--name", "b")).key;
const bCol = await fetch(`${srv.url}/v1/collections`, {
  method: "POST",
  headers: { ...auth(bKey), "content-type": "application/json" },
  body: '{"name":"b"}',
});
const bCollection: string = ((await bCol.json()) as any).data.id;

async function time(url: string, headers: Record<string, string> = {}): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(url, { headers });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`${url} → ${r.status}`);
  return performance.now() - t0;
}

/** B's view for `ms`: its video list and /healthz, alternately, every 20 ms. */
async function victim(ms: number) {
  const list: number[] = [];
  const health: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    list.push(await time(`${srv.url}/v1/videos?collection_id=${bCollection}`, auth(bKey)));
    health.push(await time(`${srv.url}/healthz`));
    await Bun.sleep(20);
  }
  return { b_list_videos_ms: summary(list), healthz_ms: summary(health) };
}

/** `clients` of A post `kind` bodies to /v1/mcp while B is timed (in a child process unless `--attackers here`). */
async function mcpAttack(clients: number, kind: "batch" | "deep") {
  if (ATTACKERS === "here") {
    let on = true;
    const attackers = attack(srv.url, srv.key, clients, kind, () => !on);
    const seen = await victim(SECS * 1000);
    on = false;
    return { ...seen, attack_answers: await attackers };
  }
  const child = Bun.spawn(
    [process.execPath, import.meta.path, "--attacker", srv.url, srv.key, String(clients), kind, String(SECS * 1000)],
    { stdout: "pipe", stderr: "inherit" },
  );
  const seen = await victim(SECS * 1000);
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error("the attacker process failed");
  return { ...seen, attack_answers: JSON.parse(out) as Record<number, number> };
}

results.idle = await victim(SECS * 1000);
results.attackers = ATTACKERS;
results.mcp_batches_of_100 = await mcpAttack(4, "batch");
results.mcp_deep_bodies = await mcpAttack(2, "deep");

if (!process.argv.includes("--mcp-only")) await clipFlood();

results.load_end = loadAvg();
await srv.stop();

async function clipFlood() {
  // 4. Clip flood --------------------------------------------------------------------------------------
  const dir = srv.dir;
  const src = join(dir, "bench-60s.mp4");
  const enc = Bun.spawn(
    [
      ffmpegInstaller.path,
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=25:duration=60",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "50",
      "-pix_fmt",
      "yuv420p",
      src,
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
  if ((await enc.exited) !== 0) throw new Error("ffmpeg could not make the source clip");

  async function uploadIndexed(key: string, collection: string): Promise<string> {
    const fd = new FormData();
    fd.append("collection_id", collection);
    fd.append("file", Bun.file(src), "bench-60s.mp4");
    const r = await fetch(`${srv.url}/v1/upload`, { method: "POST", headers: auth(key), body: fd });
    if (r.status !== 202) throw new Error(`upload → ${r.status} ${await r.text()}`);
    const { data } = (await r.json()) as any;
    for (let i = 0; i < 1200; i++) {
      const job = ((await (await fetch(`${srv.url}/v1/jobs/${data.job_id}`, { headers: auth(key) })).json()) as any)
        .data;
      if (job.status === "done") return data.video_id;
      if (job.status === "failed") throw new Error(`ingest failed: ${JSON.stringify(job.error)}`);
      await Bun.sleep(250);
    }
    throw new Error("ingest did not finish in 5 minutes");
  }
  const videoA = await uploadIndexed(srv.key, srv.collectionId);
  const videoB = await uploadIndexed(bKey, bCollection);
  const clipsOf = (id: string) => {
    try {
      return readdirSync(join(dir, "videos", id, "clips")).filter((f) => f.endsWith(".mp4")).length;
    } catch {
      return 0;
    }
  };
  // B's 1 s clip on an idle server (another span than the one timed below, so not from the cache).
  const t0 = performance.now();
  const idleClip = await fetch(`${srv.url}/v1/videos/${videoB}/clip?start=30&end=31`, { headers: auth(bKey) });
  await idleClip.arrayBuffer();
  const idleClipMs = performance.now() - t0;

  const floodStatuses: Record<string, number> = {};
  const flood = Array.from({ length: 40 }, async (_, i) => {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), 1000);
    try {
      const r = await fetch(`${srv.url}/v1/videos/${videoA}/clip?start=${i}&end=${i + 8}`, {
        headers: auth(srv.key),
        signal: ac.signal,
      });
      await r.arrayBuffer();
      floodStatuses[r.status] = (floodStatuses[r.status] ?? 0) + 1;
    } catch {
      floodStatuses.closed_after_1s = (floodStatuses.closed_after_1s ?? 0) + 1;
    } finally {
      clearTimeout(timer);
    }
  });
  await Bun.sleep(200);
  const t1 = performance.now();
  const bClip = await fetch(`${srv.url}/v1/videos/${videoB}/clip?start=10&end=11`, { headers: auth(bKey) });
  await bClip.arrayBuffer();
  const bClipMs = performance.now() - t1;
  await Promise.all(flood);
  // What A's abandoned spans went on to cost: wait until no more of them appear (encodes finishing).
  let encoded = clipsOf(videoA);
  for (let i = 0; i < 600; i++) {
    await Bun.sleep(1000);
    const now = clipsOf(videoA);
    if (now === encoded && i >= 5) break;
    encoded = now;
  }
  results.clip_flood = {
    b_clip_idle_ms: round(idleClipMs),
    b_clip_during_flood_ms: round(bClipMs),
    b_clip_status: bClip.status,
    a_answers: floodStatuses,
    a_spans_encoded_anyway: encoded,
  };
}

const flat = (k: string) => results[k] as any;
console.table({
  idle: {
    b_list_p50: flat("idle").b_list_videos_ms.p50,
    b_list_p99: flat("idle").b_list_videos_ms.p99,
    healthz_p50: flat("idle").healthz_ms.p50,
    healthz_p99: flat("idle").healthz_ms.p99,
  },
  "4× MCP batches of 100": {
    b_list_p50: flat("mcp_batches_of_100").b_list_videos_ms.p50,
    b_list_p99: flat("mcp_batches_of_100").b_list_videos_ms.p99,
    healthz_p50: flat("mcp_batches_of_100").healthz_ms.p50,
    healthz_p99: flat("mcp_batches_of_100").healthz_ms.p99,
  },
  "2× deep MCP bodies": {
    b_list_p50: flat("mcp_deep_bodies").b_list_videos_ms.p50,
    b_list_p99: flat("mcp_deep_bodies").b_list_videos_ms.p99,
    healthz_p50: flat("mcp_deep_bodies").healthz_ms.p50,
    healthz_p99: flat("mcp_deep_bodies").healthz_ms.p99,
  },
});
console.log(JSON.stringify(results, null, 2));
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(join(import.meta.dirname, "results", `stall-${LABEL}.json`), JSON.stringify(results, null, 2));
