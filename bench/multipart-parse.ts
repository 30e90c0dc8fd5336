/**
 * The upload's multipart reader alone: the hand-written streaming parser
 * (src/upload/multipart-stream.ts) against busboy behind the same interface
 * (bench/lib/multipart-busboy.ts), on a 64 MiB file part fed in 64 KiB chunks, best of 5.
 * End to end (bench/upload-rss.ts) both are bound by the socket; this is the CPU each costs.
 * Run: node_modules/.bin/bun bench/multipart-parse.ts [--mib 64]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { boundaryOf, type PartHandlers, readMultipart } from "../src/upload/multipart-stream.ts";
import { readMultipartBusboy } from "./lib/multipart-busboy.ts";

const i = process.argv.indexOf("--mib");
const MIB = i > 0 ? Number(process.argv[i + 1]) : 64;
const payload = new Uint8Array(MIB * 1024 * 1024).map((_, k) => (k * 31) % 256);
const fd = new FormData();
fd.append("collection_id", "col_1");
fd.append("file", new Blob([payload]), "a.mp4");
const req = new Request("http://x", { method: "POST", body: fd });
const ct = req.headers.get("content-type")!;
const bytes = new Uint8Array(await req.arrayBuffer());
const stream = () => {
  let off = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(off, off + 65536));
      off += 65536;
    },
  });
};
const parsers: Record<string, (h: PartHandlers) => Promise<void>> = {
  "hand-written": (h) => readMultipart(stream(), boundaryOf(ct)!, h),
  busboy: (h) => readMultipartBusboy(stream(), ct, h),
};
const rows: Record<string, { best_ms: number; mib_per_s: number; cpu_ms_per_gib: number }> = {};
for (const [name, run] of Object.entries(parsers)) {
  let best = Infinity;
  for (let k = 0; k < 5; k++) {
    let n = 0;
    const t0 = performance.now();
    await run({ onPartStart: () => {}, onPartData: (d) => void (n += d.byteLength), onPartEnd: () => {} });
    best = Math.min(best, performance.now() - t0);
    if (n !== payload.length + 5) throw new Error(`${name}: ${n} bytes`);
  }
  rows[name] = {
    best_ms: Math.round(best),
    mib_per_s: Math.round(MIB / (best / 1000)),
    cpu_ms_per_gib: Math.round((best * 1024) / MIB),
  };
}
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
console.table(rows);
console.log("load average", load);
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(
  join(import.meta.dirname, "results", "multipart-parse.json"),
  JSON.stringify({ mib: MIB, rows, load }, null, 2),
);
