/**
 * Ingest throughput with 1, 2 and 4 `vsearch worker` processes on one PostgreSQL (issue 26),
 * side by side in one run:
 *
 *   node_modules/.bin/bun bench/scale-out-bench.ts [--database-url postgres://…/postgres] [--binary ./vsearch]
 *       [--workers 1,2,4] [--clips 8] [--secs 10]
 *
 * Each configuration gets a fresh database (`worker26_scale_<n>`, made with the superuser URL
 * given; else a throw-away cluster of this machine's PostgreSQL, test/pg/cluster.ts), a `serve
 * --role serve` that takes the uploads (it claims nothing) and n workers, each with a data dir
 * of its own, the server's data dir as its media root (VSEARCH_MEDIA_ROOT, as a real cluster
 * mounts one: the videos and the cluster secret) and its models folder. `--clips` distinct copies of a 1080p H.264 clip (bench/lib/bench-clip.ts: real
 * footage when ../shared has it, else a test pattern) are uploaded at once; the clock runs from
 * the first upload to the last job done. Reported: videos/min and × realtime (clip seconds
 * indexed per wall second). Models: the full-size benchmark CLIP from ../shared/fixtures/models
 * when present, else the tiny test CLIP (then the figures are decode and pipeline cost, not model
 * cost; the output says which). OCR and speech are off, renditions not claimed (`--kinds ingest`):
 * the measure is the ingest stage.
 *
 * On one 2-core machine the workers share the cores (and with PostgreSQL and the server): more
 * workers cannot beat the cores here, and the table shows the overhead of splitting them. The
 * multi-host method: one `serve --role serve` and the database on one host, `vsearch worker
 * --database-url … --data-dir …` on each other machine (media on the shared mount, the same
 * models: `vsearch nodes` shows them claiming), upload the same clip set, and take the span from
 * the first job's `created_at` to the last one's `updated_at` (GET /v1/jobs). This script runs
 * the single-host case only. Prints a table; writes bench/results/scale-out.json. Not a test.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { resolveRuntime } from "../src/cli/runtime.ts";
import { loadConfig } from "../src/config/config.ts";
import { findPostgres, startCluster } from "../test/pg/cluster.ts";
import { makeBenchClip } from "./lib/bench-clip.ts";
import { argValue as str } from "./lib/args.ts";

const ROOT = join(import.meta.dir, "..");
const WORKERS = (str("workers") ?? "1,2,4").split(",").map(Number);
const CLIPS = Number(str("clips") ?? 8);
const SECS = Number(str("secs") ?? 10);
const BIN = str("binary")
  ? [resolve(str("binary")!)]
  : [join(ROOT, "node_modules", ".bin", "bun"), join(ROOT, "src", "main.ts")];
const OUT = join(import.meta.dir, "results", "scale-out.json");
const BENCH_CLIP = join(ROOT, "..", "shared", "fixtures", "models", "bench-clip-vit-base-patch32");
const FULL = ["vision", "text"].every((m) => existsSync(join(BENCH_CLIP, "onnx", `${m}_model_quantized.onnx`)));
const MODEL = FULL ? BENCH_CLIP : join(ROOT, "test", "fixtures", "models", "tiny-random-clip");
const r2 = (x: number) => Math.round(x * 100) / 100;
const work = mkdtempSync(join(tmpdir(), "vsearch-scale-out-"));
const quiet = { ...process.env, VSEARCH_LOG_LEVEL: "warn", VSEARCH_OCR_THREADS: "0" } as Record<string, string>;

async function vsearch(args: string[], env: Record<string, string>): Promise<any> {
  const p = Bun.spawn([...BIN, ...args, "--json"], { env: { ...quiet, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`vsearch ${args.join(" ")}: exit ${code}: ${err}`);
  return JSON.parse(out);
}

/** A long-running vsearch process and its first JSON document on stdout. */
async function spawn(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([...BIN, "--json", ...args], { env: { ...quiet, ...env }, stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + 120_000;
  while (!text.trimEnd().endsWith("}") && Date.now() < deadline) {
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
    if (next === null || next.done) break;
    text += new TextDecoder().decode(next.value);
  }
  reader.releaseLock();
  return { proc, info: JSON.parse(text) };
}

async function run(adminUrl: string, n: number, clips: string[]) {
  const db = `worker26_scale_${n}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS ${db}`);
  await admin.unsafe(`CREATE DATABASE ${db}`);
  await admin.end();
  const url = adminUrl.replace(/\/[^/?]*(\?|$)/, `/${db}$1`);
  const ext = postgres(url, { max: 1, onnotice: () => {} });
  await ext.unsafe("CREATE EXTENSION IF NOT EXISTS vector");
  await ext.end();
  const data = join(work, `server-${n}`);
  const env = { VSEARCH_DATABASE_URL: url, VSEARCH_RATE_LIMIT_UPLOAD: "100000", VSEARCH_RATE_LIMIT_JOBS: "100000" };
  await vsearch(
    [
      "--data-dir",
      data,
      "models",
      "import",
      MODEL,
      "--role",
      "image-text",
      ...(FULL ? ["--dtype", "q8"] : []),
      "--no-load-check",
    ],
    env,
  );
  const acct = await vsearch(["--data-dir", data, "accounts", "create", "--name", "bench"], env);
  const key = (await vsearch(["--data-dir", data, "keys", "create", "--account", acct.id, "--name", "k"], env)).key;
  const server = await spawn(["--data-dir", data, "serve", "--port", "0", "--role", "serve"], env);
  mkdirSync(join(data, "videos"), { recursive: true });
  const workers = [];
  for (let i = 0; i < n; i++) {
    const d = join(work, `worker-${n}-${i}`);
    mkdirSync(d, { recursive: true });
    workers.push(
      await spawn(["--data-dir", d, "worker", "--kinds", "ingest"], {
        ...env,
        VSEARCH_MEDIA_ROOT: data,
        VSEARCH_MODELS_DIR: join(data, "models"),
      }),
    );
  }
  const base = server.info.url as string;
  const auth = { authorization: `Bearer ${key}` };
  const col = (
    (await (
      await fetch(`${base}/v1/collections`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: "bench" }),
      })
    ).json()) as any
  ).data.id;
  const load0 = loadavg()[0];
  const t0 = performance.now();
  const jobs = await Promise.all(
    clips.map(async (c, i) => {
      const fd = new FormData();
      fd.append("collection_id", col);
      fd.append("file", Bun.file(c), `clip${i}.mp4`);
      const r = (await (await fetch(`${base}/v1/upload`, { method: "POST", headers: auth, body: fd })).json()) as any;
      return r.data.job_id as string;
    }),
  );
  const deadline = Date.now() + 3_600_000;
  const pending = new Set(jobs);
  while (pending.size && Date.now() < deadline) {
    for (const id of [...pending]) {
      const j = ((await (await fetch(`${base}/v1/jobs/${id}`, { headers: auth })).json()) as any).data;
      if (j.status === "failed") throw new Error(`job ${id} failed: ${JSON.stringify(j.error)}`);
      if (j.status === "done") pending.delete(id);
    }
    if (pending.size) await Bun.sleep(250);
  }
  const wallS = (performance.now() - t0) / 1000;
  const load1 = loadavg()[0];
  for (const w of workers) w.proc.kill("SIGTERM");
  server.proc.kill("SIGTERM");
  await Promise.all([...workers.map((w) => w.proc.exited), server.proc.exited]);
  return {
    workers: n,
    videos: clips.length,
    wall_s: r2(wallS),
    videos_per_min: r2((clips.length / wallS) * 60),
    x_realtime: r2((clips.length * SECS) / wallS),
    load_before: r2(load0),
    load_after: r2(load1),
  };
}

const found = findPostgres();
let adminUrl = str("database-url");
let cluster: Awaited<ReturnType<typeof startCluster>> | null = null;
if (!adminUrl) {
  if ("missing" in found) {
    console.log(`no PostgreSQL to run on (${found.missing}): give --database-url`);
    process.exit(0);
  }
  cluster = await startCluster(found.bin);
  adminUrl = cluster.adminUrl;
}
try {
  const { ffmpeg } = await resolveRuntime(loadConfig({ dataDir: join(work, "runtime") }, {}));
  const base = await makeBenchClip(ffmpeg, join(work, "base.mp4"), { secs: SECS, gop: 60 });
  const clips: string[] = [];
  for (let i = 0; i < CLIPS; i++) {
    const out = join(work, `clip${i}.mp4`);
    const p = Bun.spawn([ffmpeg, "-v", "error", "-y", "-i", base, "-c", "copy", "-metadata", `title=${i}`, out]);
    if ((await p.exited) !== 0) throw new Error("remux failed");
    clips.push(out);
  }
  const rows = [];
  for (const n of WORKERS) rows.push(await run(adminUrl, n, clips));
  const meta = {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    model: MODEL.includes("bench-clip")
      ? "bench-clip ViT-B/32 q8 (full size, random weights)"
      : "tiny-random-clip (test fixture)",
    clip: `${SECS} s 1080p H.264, GOP 60`,
    runner: BIN.length === 1 ? "compiled binary" : "bun src/main.ts",
  };
  console.log(`\ningest throughput, ${CLIPS} clips of ${meta.clip}, ${meta.model}, ${meta.cores} cores (${meta.cpu})`);
  const cols = Object.keys(rows[0]!);
  console.log(cols.join("  "));
  for (const r of rows) console.log(cols.map((c) => String((r as any)[c])).join("  "));
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ ...meta, rows }, null, 2));
  console.log(`wrote ${OUT}`);
} finally {
  await cluster?.stop();
  rmSync(work, { recursive: true, force: true });
}
