/**
 * Web renditions on real clips (SPEC §11), through a real server (the app behind Bun.serve on
 * 127.0.0.1, no models: indexing is not what is measured):
 *  - per clip: the rendition decision and its reason, source and rendition bytes, and for those
 *    that need one the encode time of that rendition (encodeWebMp4 run again on its own, so the
 *    figure is the encode alone, not queue polling) and its realtime factor;
 *  - with /usr/bin/chromium: whether a seeked frame of the *source* and of `playback_url` decodes
 *    in headless Chromium (so the decision table is checked against the browser, both ways).
 *
 *   node_modules/.bin/bun bench/playback-bench.ts [--dir /work/shared/media/video/clips] [--also FILE…]
 *
 * Prints a table and writes bench/results/playback.json with the load average. Not a test.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { tmpdir } from "node:os";
import { probeMedia } from "../src/media/index.ts";
import { encodeWebMp4 } from "../src/media/web-mp4.ts";
import { loadOrCreateSecret, UrlSigner } from "../src/signing/url-signer.ts";
import { createTenant, startTestApp } from "../test/helpers/app.ts";
import { mediaBins } from "../test/helpers/media.ts";
import {
  CHROMIUM_FLAGS,
  collection,
  frameIn,
  PLAYER_PAGE,
  uploadAndIndex,
  waitForRendition,
} from "../test/playback/helpers.ts";

const OUT = fileURLToPath(new URL("./results/playback.json", import.meta.url));
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    dir: { type: "string", default: "/work/shared/media/video/clips" },
    also: { type: "string", multiple: true, default: ["/work/shared/media/video/grid/bbaf2n.mpg"] },
  },
});
const VIDEO = /\.(mp4|webm|mkv|avi|ts|mpg|3gp|mov)$/i;
const files = [
  ...readdirSync(args.dir!)
    .filter((f) => VIDEO.test(f))
    .sort()
    .map((f) => join(args.dir!, f)),
  ...args.also!.filter(existsSync),
];

const t = await startTestApp({
  VSEARCH_RATE_LIMIT_VIDEOS: "1000000",
  VSEARCH_RATE_LIMIT_JOBS: "1000000",
  VSEARCH_RATE_LIMIT_UPLOAD: "1000000",
});
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) =>
    new URL(req.url).pathname === PLAYER_PAGE
      ? new Response("<!doctype html><body></body>", { headers: { "content-type": "text/html" } })
      : t.app.fetch(req),
});
const origin = `http://127.0.0.1:${server.port}`;
t.app.setBaseUrl(origin);
// The source's own link (the API hands out the rendition once it exists), signed as the app signs: its secret, lifetime and origin.
const signer = new UrlSigner(loadOrCreateSecret(join(t.dir, "secret.key")), () => origin, t.config.presignTtlSecs);
await t.app.start();
const tenant = await createTenant(t);
const col = await collection(t, tenant);

const haveChromium = existsSync("/usr/bin/chromium");
const { chromium } = await import("playwright-core");
const browser = haveChromium
  ? await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_FLAGS, headless: true })
  : null;
const page = browser ? await browser.newPage() : null;
if (page) await page.goto(`${origin}${PLAYER_PAGE}`);
const plays = async (url: string) => {
  if (!page) return "n/a";
  const r = await page.evaluate(frameIn, url);
  return r.error ? `no (${r.error.slice(0, 40)})` : r.videoWidth > 0 && r.nonBlack > 0 ? "yes" : "no picture";
};

const rows: Record<string, unknown>[] = [];
try {
  for (const file of files) {
    const id = await uploadAndIndex(t, tenant, col, file);
    const v = await waitForRendition(t, tenant, id, 600_000);
    let encodeS: number | null = null;
    if (v.rendition.status === "ready") {
      const info = await probeMedia(mediaBins(), file, { decodeCheck: false });
      const started = performance.now();
      await encodeWebMp4(mediaBins(), file, join(tmpdir(), `playback-bench-${process.pid}.mp4`), {
        hdr: info.hdr,
        hasAudio: info.hasAudio,
        maxBitRate: info.bitRate,
        timeoutMs: 600_000,
      });
      encodeS = (performance.now() - started) / 1000;
    }
    const source = signer.sign(`/media/videos/${id}/source`);
    rows.push({
      clip: file.split("/").pop(),
      codec: v.codec,
      size: `${v.width}x${v.height}`,
      duration_s: v.duration_secs,
      rendition: v.rendition.status,
      reason: v.rendition.reason,
      encode_s: encodeS === null ? null : Math.round(encodeS * 100) / 100,
      x_realtime: encodeS && v.duration_secs ? Math.round((v.duration_secs / encodeS) * 10) / 10 : null,
      source_bytes: statSync(file).size,
      rendition_bytes: v.rendition.size_bytes,
      source_plays: await plays(source),
      playback_url_plays: await plays(v.playback_url),
      load1: Math.round(loadavg()[0] * 100) / 100,
    });
    console.error(
      `${file.split("/").pop()}: ${v.rendition.status}${encodeS === null ? "" : `, encode ${encodeS.toFixed(2)} s`}`,
    );
  }
} finally {
  await browser?.close();
  await server.stop(true);
  await t.close();
}

console.table(rows.map(({ reason: _r, ...r }) => r));
mkdirSync(fileURLToPath(new URL("./results/", import.meta.url)), { recursive: true });
writeFileSync(
  OUT,
  JSON.stringify(
    { at: new Date().toISOString(), cpus: cpus().length, cpu: cpus()[0]?.model, loadavg: loadavg(), rows },
    null,
    2,
  ),
);
console.error(`wrote ${OUT}`);
