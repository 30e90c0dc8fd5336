/**
 * One `serve`-role process of bench/scale-out-search.ts: the app on the shared PostgreSQL database
 * (in-memory vector index, warmed from it), its query encoder the bench's (the tiny CLIP text tower
 * timed, then each query's vector from the queries file, as bench/lib/search-data.ts BenchEmbedder),
 * served on a free loopback port of its own and, with SHARED_PORT, also on that port with
 * SO_REUSEPORT as `vsearch serve --share-port` binds it (issue 27: several processes of one install
 * on one port). Prints {"url", "shared"} once a first vector search answers, and stops on SIGTERM.
 *
 *   bun bench/lib/scale-search-server.ts DATA_DIR DATABASE_URL QUERIES_FILE KEY MEDIA_ROOT [SHARED_PORT]
 *
 * MEDIA_ROOT: the install's (the seeding app's data dir), where the cluster secret every node must share is.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { bunServeOptions } from "../../src/http/serve-options.ts";
import { BenchEmbedder, tinyTextTower } from "./search-data.ts";

const [dataDir, databaseUrl, queriesFile, key, mediaRoot, sharedPort] = process.argv.slice(2);
const buf = readFileSync(queriesFile);
const queries = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
const env = {
  VSEARCH_RATE_LIMIT_SEARCH: "1000000",
  VSEARCH_DATABASE_URL: databaseUrl,
  VSEARCH_MEDIA_ROOT: mediaRoot,
  VSEARCH_LOG_LEVEL: "warn",
};
const config = loadConfig({ dataDir, logLevel: "silent", host: "127.0.0.1", port: 0 }, env);
const runtime = await resolveRuntime(config);
// The query's text tower on an inference pool's thread, as `vsearch serve` runs it.
const tower = await tinyTextTower(runtime.inferenceWorkerFile);
const app = await createApp(config, {
  runtime,
  logger: createLogger("silent"),
  queryEmbedder: new BenchEmbedder(tower.encode, queries),
  applicationName: "bench serve",
  role: "serve",
});
await app.start();
const server = Bun.serve(bunServeOptions(app, app.config));
const url = `http://127.0.0.1:${server.port}`;
const shared = sharedPort
  ? Bun.serve({ ...bunServeOptions(app, { ...app.config, port: Number(sharedPort) }), reusePort: true })
  : null;
// Bounded: the warm-up of a few tens of thousands of vectors takes seconds; 503 until then.
for (let i = 0; i < 600; i++) {
  const res = await fetch(`${url}/v1/search`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
    body: "query=warm",
  });
  await res.arrayBuffer();
  if (res.status === 200) break;
  await Bun.sleep(500);
}
await app.internals.search.indexes.whenVectorIndexIdle();
console.log(JSON.stringify({ url, shared: shared ? `http://127.0.0.1:${shared.port}` : null }));
process.once("SIGTERM", async () => {
  await server.stop(true);
  await shared?.stop(true);
  await app.close();
  await tower.close();
  process.exit(0);
});
