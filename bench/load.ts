/**
 * Mixed load against a real `vsearch serve` child (issue 9): autocannon, 50 connections × 60 s,
 * cycling reads (collections, videos, a video), lexical searches and small uploads (1 in 8
 * requests is a 60 kB MP4 upload). Rate limits are raised for the run: one key drives all of it.
 * Reports p50/p99 latency, errors, non-2xx and the server's RSS growth.
 * Run: node_modules/.bin/bun bench/load.ts [--secs 60] [--connections 50]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";
import { loadAvg, startBenchServer } from "./lib/server.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SECS = arg("--secs", 60);
const CONNECTIONS = arg("--connections", 50);
const HIGH = "100000000";
const srv = await startBenchServer(
  Object.fromEntries(
    ["SEARCH", "UPLOAD", "VIDEOS", "COLLECTIONS_READ", "COLLECTIONS_WRITE", "JOBS"].map((g) => [
      `VSEARCH_RATE_LIMIT_${g}`,
      HIGH,
    ]),
  ),
);
const auth = { authorization: `Bearer ${srv.key}` };

const mp4 = join(srv.dir, "seed.mp4");
await Bun.spawn([
  ffmpegInstaller.path,
  "-loglevel",
  "error",
  "-f",
  "lavfi",
  "-i",
  "testsrc=size=160x120:rate=10:duration=2",
  "-c:v",
  "libx264",
  "-preset",
  "ultrafast",
  "-pix_fmt",
  "yuv420p",
  mp4,
]).exited;
const boundary = "vsearchload";
const uploadBody = Buffer.concat([
  Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${srv.collectionId}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="l.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
  ),
  readFileSync(mp4),
  Buffer.from(`\r\n--${boundary}--\r\n`),
]);
// One video to read back.
const first = await fetch(`${srv.url}/v1/upload`, {
  method: "POST",
  headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
  body: uploadBody,
});
const videoId = ((await first.json()) as any).data.video_id;

const get = (path: string) => ({ method: "GET" as const, path, headers: auth });
const searchReq = (q: string) => ({
  method: "POST" as const,
  path: "/v1/search",
  headers: { ...auth, "content-type": "application/x-www-form-urlencoded" },
  body: `query=${encodeURIComponent(q)}&modes=transcript&collection_id=${srv.collectionId}`,
});
const requests = [
  get("/v1/collections"),
  searchReq("hello world"),
  get(`/v1/videos?collection_id=${srv.collectionId}`),
  get(`/v1/videos/${videoId}`),
  searchReq('"exact phrase"'),
  get(`/v1/collections/${srv.collectionId}`),
  get("/healthz"),
  {
    method: "POST" as const,
    path: "/v1/upload",
    headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
    body: uploadBody,
  },
];

await Bun.sleep(500);
const loadStart = loadAvg();
const before = srv.rssMb();
let peak = before.rss;
const sampler = setInterval(() => (peak = Math.max(peak, srv.rssMb().rss)), 500);
const r = await autocannon({ url: srv.url, connections: CONNECTIONS, duration: SECS, requests });
clearInterval(sampler);
const after = srv.rssMb();
const result = {
  connections: CONNECTIONS,
  secs: SECS,
  requests_total: r.requests.total,
  requests_per_s: r.requests.average,
  latency_ms: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max },
  errors: r.errors,
  timeouts: r.timeouts,
  non_2xx: r.non2xx,
  status_codes: (r as any).statusCodeStats,
  rss_mb: {
    before: Math.round(before.rss),
    after: Math.round(after.rss),
    peak_sampled: Math.round(peak),
    growth: Math.round(after.rss - before.rss),
  },
  load_start: loadStart,
  load_end: loadAvg(),
};
await srv.stop();
console.table({
  p50_ms: result.latency_ms.p50,
  p99_ms: result.latency_ms.p99,
  req_per_s: result.requests_per_s,
  errors: result.errors,
  non_2xx: result.non_2xx,
  rss_growth_mb: result.rss_mb.growth,
});
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(join(import.meta.dirname, "results", "load.json"), JSON.stringify(result, null, 2));
