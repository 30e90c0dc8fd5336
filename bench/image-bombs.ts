/**
 * Memory of query-image decoding (issue 9). Eight parallel searches by a read_only key, each with
 * an image at the decode limit (a 25 Mpx RGBA PNG, a 31.9 Mpx 4:4:4 JPEG), then the 80 Mpx PNG
 * that used to take 250 MB per ffmpeg. ffmpeg children of the server (this process) are sampled
 * from /proc every 10 ms: how many ran at once and their summed RSS.
 * Run: node_modules/.bin/bun bench/image-bombs.ts
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTenant } from "../test/helpers/app.ts";
import { ffmpeg, ffmpegChildren, scratchDir } from "../test/helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip } from "../test/helpers/models.ts";
import { startTestServer } from "../test/helpers/server.ts";
import { loadAvg } from "./lib/server.ts";

const dir = scratchDir("bench-image-bombs");
const make = async (name: string, src: string, extra: string[]) =>
  Uint8Array.from(readFileSync(await ffmpeg(["-f", "lavfi", "-i", src, "-frames:v", "1", ...extra], join(dir, name))));
const images: Record<string, Uint8Array<ArrayBuffer>> = {
  "PNG RGBA 5000×5000 (at the limit)": await make("rgba.png", "testsrc2=size=5000x5000", ["-pix_fmt", "rgba"]),
  "JPEG 4:4:4 5600×5700 (at the limit)": await make("big.jpg", "testsrc2=size=5600x5700", [
    "-pix_fmt",
    "yuvj444p",
    "-q:v",
    "5",
  ]),
  "PNG RGB 10000×8000 (the reported bomb)": await make("bomb.png", "color=c=blue:size=10000x8000", []),
};

const s = await startTestServer(
  { VSEARCH_RATE_LIMIT_SEARCH: "100000" },
  { models: fixedCatalog({ "image-text": tinyClip }) },
);
const a = await createTenant(s);

const rows: Record<string, unknown>[] = [];
for (const [name, bytes] of Object.entries(images)) {
  let peakN = 0;
  let peakKb = 0;
  let on = true;
  const sampler = (async () => {
    while (on) {
      const c = ffmpegChildren();
      peakN = Math.max(peakN, c.n);
      peakKb = Math.max(peakKb, c.rssKb);
      await Bun.sleep(10);
    }
  })();
  const t0 = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const fd = new FormData();
      fd.append("image", new Blob([bytes]), "q");
      fd.append("modes", "video");
      const r = await s.http("/v1/search", { method: "POST", token: a.readOnlyKey, body: fd });
      await r.arrayBuffer();
      return r.status;
    }),
  );
  on = false;
  await sampler;
  rows.push({
    image: name,
    kB: Math.round(bytes.byteLength / 1024),
    statuses: statuses.join(","),
    secs: Math.round((performance.now() - t0) / 100) / 10,
    ffmpeg_at_once: peakN,
    ffmpeg_rss_mb_peak: Math.round(peakKb / 1024),
    load: loadAvg()[0],
  });
}
await s.close();
console.table(rows);
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(join(import.meta.dirname, "results", "image-bombs.json"), JSON.stringify(rows, null, 2));
