/**
 * What a browser downloads for the dashboard (`/`) and for `/docs`: raw and gzipped bytes of each
 * file, and how long bundling web/ takes (build.ts does it once per `npm run build`).
 *
 *   bun bench/dashboard-size.ts
 *
 * Prints a table; writes bench/results/dashboard-size.json with the load average.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { bundleWeb } from "../web/bundle.ts";

const ROOT = join(import.meta.dirname, "..");
const load = loadavg();
const t0 = performance.now();
const web = await bundleWeb();
const bundleMs = performance.now() - t0;
const scalarFile = join(
  dirname(createRequire(join(ROOT, "package.json")).resolve("@scalar/api-reference")),
  "browser",
  "standalone.js",
);
const scalar = await Bun.file(scalarFile).bytes();

const rows = [
  ...web.map((a) => ({
    page: "/",
    file: a.path,
    raw: a.body.length,
    gzip: Bun.gzipSync(a.body as Uint8Array<ArrayBuffer>).length,
  })),
  {
    page: "/docs",
    file: "/docs/scalar.js (@scalar/api-reference standalone)",
    raw: scalar.length,
    gzip: Bun.gzipSync(scalar).length,
  },
];
const js = rows.filter((r) => r.page === "/" && r.file.endsWith(".js"));
console.log(`load average ${load.map((l) => l.toFixed(2)).join(" ")}; bundling web/ took ${bundleMs.toFixed(0)} ms`);
console.log(`| page | file | raw bytes | gzipped |\n|---|---|---:|---:|`);
for (const r of rows) console.log(`| ${r.page} | ${r.file} | ${r.raw} | ${r.gzip} |`);
console.log(
  `dashboard JS total: ${js.reduce((n, r) => n + r.raw, 0)} B raw, ${js.reduce((n, r) => n + r.gzip, 0)} B gzipped`,
);
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  join(ROOT, "bench", "results", "dashboard-size.json"),
  JSON.stringify({ at: new Date().toISOString(), loadavg: load, bundle_ms: bundleMs, files: rows }, null, 2),
);
