/**
 * What the upload's duplicate check (issue 22) costs: 1 GiB multipart uploads (a real MP4 followed
 * by padding) over loopback to two servers on this tree, one with the check (the default) and one
 * without (`uploadDuplicateCheck: false`), interleaved so both see the same load:
 *
 *   new file, no check                the baseline
 *   new file, check                   the collection holds no video of that size: one indexed query
 *   same size, other bytes, check     the upload is hashed and the other video's hash computed once
 *   same bytes again, check           hashed, found: answered with the existing video (200), no new job
 *
 * Target: the check costs < 10 % of the baseline's throughput for a new file. The servers run no
 * job runner (nothing is indexed while measuring) and each new video is deleted after its round.
 *
 *   node_modules/.bin/bun bench/upload-dedupe.ts [--gib 1] [--rounds 3]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { loadAvg } from "./lib/server.ts";

const ROOT = join(import.meta.dirname, "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

// A child process: one server on a fresh data dir, with or without the check.
if (process.argv[2] === "--serve") {
  const { createApp } = await import("../src/app.ts");
  const { loadConfig } = await import("../src/config/config.ts");
  const { resolveRuntime } = await import("../src/cli/runtime.ts");
  const { bunServeOptions } = await import("../src/http/serve-options.ts");
  const config = loadConfig({ dataDir: process.argv[3], port: 0 }, process.env);
  const app = await createApp(config, {
    runtime: await resolveRuntime(config),
    uploadDuplicateCheck: process.argv[4] === "on",
  });
  const account = await app.services.accounts.createAccount({ name: "bench" });
  const key = (await app.services.apiKeys.create(account.id, { name: "bench", permissions: "all" })).key;
  const collection = await app.services.collections.create(account.id, { name: "bench" });
  const server = Bun.serve(bunServeOptions(app, config));
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}`, key, collection: collection.id }));
  await new Promise(() => {});
}

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { gib: { type: "string", default: "1" }, rounds: { type: "string", default: "3" } },
});
const TOTAL = Math.round(Number(values.gib) * 1024 ** 3);
const ROUNDS = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), "vsearch-dedupe-bench-"));
// The upload limit (10 a minute) raised: a run of more than a few rounds measured 429s.
const env = {
  ...process.env,
  VSEARCH_LOG_LEVEL: "warn",
  VSEARCH_MAX_UPLOAD_BYTES: String(TOTAL + 1024 ** 2),
  VSEARCH_RATE_LIMIT_UPLOAD: "100000",
};

const mp4 = join(dir, "seed.mp4");
await Bun.spawn([
  ffmpegInstaller.path,
  "-loglevel",
  "error",
  "-f",
  "lavfi",
  "-i",
  "testsrc=size=320x240:rate=25:duration=5",
  "-c:v",
  "libx264",
  "-preset",
  "ultrafast",
  "-pix_fmt",
  "yuv420p",
  "-movflags",
  "+faststart",
  mp4,
]).exited;
const seed = readFileSync(mp4);

interface Srv {
  url: string;
  key: string;
  collection: string;
  proc: ReturnType<typeof Bun.spawn>;
}
async function start(check: "on" | "off"): Promise<Srv> {
  const data = join(dir, check);
  const proc = Bun.spawn([BUN, import.meta.path, "--serve", data, check], { env, stdout: "pipe", stderr: "inherit" });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let line = "";
  for (let i = 0; i < 100 && !line.includes("}"); i++)
    line += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
  reader.releaseLock();
  return { ...JSON.parse(line), proc };
}

/** Streams one multipart upload of `TOTAL` bytes: the seed MP4, then chunks filled with `fill`. */
async function upload(s: Srv, fill: number): Promise<{ secs: number; status: number; data: any }> {
  const boundary = `vsearchbench${Date.now()}`;
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${s.collection}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const chunk = new Uint8Array(1024 * 1024).fill(fill);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(head);
      c.enqueue(seed);
      sent = seed.length;
    },
    pull(c) {
      if (sent >= TOTAL) {
        c.enqueue(tail);
        c.close();
        return;
      }
      const n = Math.min(chunk.length, TOTAL - sent);
      c.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n));
      sent += n;
    },
  });
  const t0 = performance.now();
  const res = await fetch(`${s.url}/v1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
  });
  const json = (await res.json()) as any;
  const secs = (performance.now() - t0) / 1000;
  console.error(
    `  ${s.url} fill ${fill}: ${res.status} in ${secs.toFixed(1)} s (${(TOTAL / 1024 ** 2 / secs).toFixed(0)} MiB/s)`,
  );
  // A refused upload is not a measurement of one.
  if (res.status !== 200 && res.status !== 202)
    throw new Error(`upload answered ${res.status}: ${JSON.stringify(json)}`);
  return { secs, status: res.status, data: json.data ?? json.detail };
}
const remove = (s: Srv, id: string) =>
  fetch(`${s.url}/v1/videos/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${s.key}` } });

const off = await start("off");
const on = await start("on");
const load0 = loadAvg();
const runs: Record<string, number[]> = {
  "new file, no check": [],
  "new file, check": [],
  "same size, other bytes, check": [],
  "same bytes again, check": [],
};
const answers: Record<string, string> = {};
try {
  // Warm both paths once (first-request costs are not the check's).
  for (const s of [off, on]) {
    const w = await upload(s, 1);
    await remove(s, w.data.video_id);
  }
  for (let r = 0; r < ROUNDS; r++) {
    const a = await upload(off, 0);
    runs["new file, no check"].push(a.secs);
    await remove(off, a.data.video_id);
    const b = await upload(on, 0);
    runs["new file, check"].push(b.secs);
    answers["new file, check"] = `${b.status} duplicate=${b.data.duplicate}`;
    // The video b stays: an upload of other bytes of its size, then of its very bytes.
    const c = await upload(on, 0x55);
    runs["same size, other bytes, check"].push(c.secs);
    answers["same size, other bytes, check"] = `${c.status} duplicate=${c.data.duplicate}`;
    await remove(on, c.data.video_id);
    const d = await upload(on, 0);
    runs["same bytes again, check"].push(d.secs);
    answers["same bytes again, check"] = `${d.status} duplicate=${d.data.duplicate}`;
    await remove(on, b.data.video_id);
  }
} finally {
  for (const s of [off, on]) {
    s.proc.kill();
    await s.proc.exited;
  }
  rmSync(dir, { recursive: true, force: true });
}
const load1 = loadAvg();
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const mibs = (secs: number) => TOTAL / 1024 ** 2 / secs;
const base = mibs(median(runs["new file, no check"]));
const rows = Object.entries(runs).map(([name, xs]) => {
  const m = mibs(median(xs));
  return {
    case: name,
    "MiB/s (median)": m.toFixed(0),
    "vs no check": `${((m / base - 1) * 100).toFixed(1)} %`,
    runs: xs.map((s) => mibs(s).toFixed(0)).join(" / "),
    answer: answers[name] ?? "202",
  };
});
console.log(
  `${(TOTAL / 1024 ** 3).toFixed(2)} GiB uploads, ${ROUNDS} rounds interleaved; load ${load0.join(" ")} → ${load1.join(" ")}`,
);
console.table(rows);
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench", "results", "upload-dedupe.json"),
  JSON.stringify({ bytes: TOTAL, rounds: ROUNDS, load: [load0, load1], runs, rows }, null, 2),
);
