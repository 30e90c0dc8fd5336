/**
 * The hostile-input properties of test/security at 10⁵ cases each (CI runs a few hundred): the
 * multipart and Range parsers, address rules, client address, presigned URLs, JSON depth,
 * decode slots, and every documented request schema through the in-process app.
 * Run: node_modules/.bin/bun bench/properties.ts [--runs 100000] [--schema-runs 100000]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { properties } from "../test/security/properties.ts";
import { fuzzSchemas } from "../test/security/schema-fuzz.ts";
import { createTenant, json, startTestApp } from "../test/helpers/app.ts";
import { fixedCatalog, tinyClip } from "../test/helpers/models.ts";
import { loadAvg } from "./lib/server.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const RUNS = arg("--runs", 100_000);
const SCHEMA_RUNS = arg("--schema-runs", RUNS);
const rows: { property: string; runs: number; secs: number; ok: boolean; error?: string; load: number }[] = [];

for (const [name, run] of Object.entries(properties)) {
  const t0 = performance.now();
  let error: string | undefined;
  try {
    await run(RUNS);
  } catch (e) {
    error = (e as Error).message.slice(0, 2000);
  }
  rows.push({
    property: name,
    runs: RUNS,
    secs: Math.round((performance.now() - t0) / 10) / 100,
    ok: !error,
    error,
    load: loadAvg()[0],
  });
  console.log(rows.at(-1));
}

const high = "1000000000";
const t = await startTestApp(
  Object.fromEntries(
    [
      "COLLECTIONS_READ",
      "COLLECTIONS_WRITE",
      "SEARCH",
      "API_KEYS",
      "WEBHOOKS",
      "VIDEOS",
      "JOBS",
      "MOMENT",
      "AGENT",
    ].map((g) => [`VSEARCH_RATE_LIMIT_${g}`, high]),
  ),
  { models: fixedCatalog({ "image-text": tinyClip }), resolve: async () => [{ address: "10.0.0.1", family: 4 }] },
);
const tenant = await createTenant(t);
const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "kept" } }))).data
  .id;
const t0 = performance.now();
let schemaError: string | undefined;
let statuses: Record<number, number> = {};
try {
  statuses = (
    await fuzzSchemas(t, tenant, SCHEMA_RUNS, [col, "col_000000000000000000000", "vid_000000000000000000000"])
  ).statuses;
} catch (e) {
  schemaError = (e as Error).message.slice(0, 2000);
}
await t.close();
rows.push({
  property: "every request schema: no 5xx, rejected writes change nothing",
  runs: SCHEMA_RUNS,
  secs: Math.round((performance.now() - t0) / 10) / 100,
  ok: !schemaError,
  error: schemaError,
  load: loadAvg()[0],
});

console.table(rows.map(({ error: _e, ...r }) => r));
console.log("statuses of the schema run:", statuses);
mkdirSync(join(import.meta.dirname, "results"), { recursive: true });
writeFileSync(join(import.meta.dirname, "results", "properties.json"), JSON.stringify({ rows, statuses }, null, 2));
if (rows.some((r) => !r.ok)) process.exitCode = 1;
