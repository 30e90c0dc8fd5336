/**
 * Memory of a large upload: streams a 2 GiB multipart body (a real MP4 followed by padding) to a
 * running `vsearch serve` and reports how much the server's RSS grew (VmHWM, the peak, read from
 * /proc). Target: < 100 MB for a 2 GB upload. Run: npx bun bench/upload-rss.ts [--gib 2]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ffmpegInstaller from "@ffmpeg-installer/ffmpeg";

const ROOT = join(import.meta.dirname, "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const gibArg = process.argv.indexOf("--gib");
const GIB = gibArg > 0 ? Number(process.argv[gibArg + 1]) : 2;
const TOTAL = Math.round(GIB * 1024 ** 3);
const dir = mkdtempSync(join(tmpdir(), "vsearch-upload-bench-"));
const env = { ...process.env, VSEARCH_LOG_LEVEL: "warn", VSEARCH_MAX_UPLOAD_BYTES: String(TOTAL + 1024 ** 2) };

const cli = async (...args: string[]) => {
  const p = Bun.spawn([BUN, join(ROOT, "src", "main.ts"), "--data-dir", dir, "--json", ...args], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`${args.join(" ")}: ${await new Response(p.stderr).text()}`);
  return JSON.parse(out);
};
const status = (pid: number) => {
  const s = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 };
};

const mp4 = join(dir, "seed.mp4");
const ff = Bun.spawn([
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
]);
await ff.exited;
const seed = readFileSync(mp4);

const account = await cli("accounts", "create", "--name", "bench");
const key = (await cli("keys", "create", "--account", account.id, "--name", "bench")).key;
const server = Bun.spawn([BUN, join(ROOT, "src", "main.ts"), "--data-dir", dir, "--json", "serve", "--port", "0"], {
  env,
  stdout: "pipe",
  stderr: "inherit",
});
const reader = server.stdout.getReader();
let line = "";
for (let i = 0; i < 100 && !line.includes("}"); i++)
  line += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
const { url } = JSON.parse(line);
const auth = { authorization: `Bearer ${key}` };
const col = (
  await (
    await fetch(`${url}/v1/collections`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: '{"name":"bench"}',
    })
  ).json()
).data.id;
// Warm the upload path once with a small file so one-time costs are not counted.
const small = new FormData();
small.append("collection_id", col);
small.append("file", new Blob([seed]), "warm.mp4");
await fetch(`${url}/v1/upload`, { method: "POST", headers: auth, body: small });
await Bun.sleep(500);
const before = status(server.pid);

const boundary = "vsearchbench" + Date.now();
const head = new TextEncoder().encode(
  `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
);
const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
const chunk = new Uint8Array(1024 * 1024);
let sent = 0;
const bodyBytes = TOTAL;
const body = new ReadableStream<Uint8Array>({
  start(c) {
    c.enqueue(head);
    c.enqueue(seed);
    sent = seed.length;
  },
  pull(c) {
    if (sent >= bodyBytes) {
      c.enqueue(tail);
      c.close();
      return;
    }
    const n = Math.min(chunk.length, bodyBytes - sent);
    c.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n));
    sent += n;
  },
});
const t0 = performance.now();
let peak = before.rssMb;
const sampler = setInterval(() => (peak = Math.max(peak, status(server.pid).rssMb)), 100);
const res = await fetch(`${url}/v1/upload`, {
  method: "POST",
  headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
  body,
});
const answer = await res.json();
clearInterval(sampler);
const secs = (performance.now() - t0) / 1000;
const after = status(server.pid);
server.kill();
await server.exited;

const rows = [
  ["upload size", `${(TOTAL / 1024 ** 3).toFixed(2)} GiB`],
  ["response", `${res.status} ${JSON.stringify(answer.data ?? answer.detail)}`],
  ["throughput", `${(TOTAL / 1024 ** 2 / secs).toFixed(0)} MiB/s (${secs.toFixed(1)} s)`],
  ["server RSS before / peak during (MB)", `${before.rssMb.toFixed(0)} / ${Math.max(peak, after.rssMb).toFixed(0)}`],
  ["server VmHWM before / after (MB)", `${before.hwmMb.toFixed(0)} / ${after.hwmMb.toFixed(0)}`],
  ["RSS growth during the upload (MB)", (Math.max(peak, after.hwmMb) - before.hwmMb).toFixed(1)],
];
console.log(rows.map(([k, v]) => `${k.padEnd(40)} ${v}`).join("\n"));
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench", "results", "upload-rss.json"),
  JSON.stringify({ bytes: TOTAL, status: res.status, secs, before, after, peak_rss_mb: peak }, null, 2),
);
rmSync(dir, { recursive: true, force: true });
