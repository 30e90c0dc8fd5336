/**
 * globalSetup of the `pg` vitest project: one throw-away cluster (test/pg/cluster.ts) with a
 * migrated template database, `vsearch_tpl`, that every test file copies (test/pg/database.ts).
 *
 * The cluster starts in the background: vitest awaits every project's global setup before any
 * test file runs, and initdb alone takes seconds, so waiting here would delay the `sqlite`
 * project too. A `pg` file that starts before the template is ready waits for it in its setup.
 *
 * Without a usable PostgreSQL (≥ 15 with pgvector ≥ 0.8) the project's files are skipped, with one
 * message; with VSEARCH_REQUIRE_PG=1 (CI) every one of them fails instead, saying why.
 */
import { mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { openPgStore } from "../../src/store/pg/open.ts";
import { type Cluster, findPostgres, startCluster } from "./cluster.ts";
import { type PgReady, TEMPLATE_DB } from "./database.ts";

const STATE_PREFIX = "vsearch-pg-state-";

/**
 * State dirs of runs that were killed before their teardown (their cluster is removed by its
 * watchdog; the small state dir is removed here, by the next run): `<prefix><pid>-…` whose pid is gone.
 */
function sweepStaleState(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(name.startsWith(STATE_PREFIX) ? name.slice(STATE_PREFIX.length).split("-")[0] : Number.NaN);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

export default async function setup(project: TestProject) {
  const required = process.env.VSEARCH_REQUIRE_PG === "1";
  const found = findPostgres();
  sweepStaleState();
  const stateDir = mkdtempSync(join(tmpdir(), `${STATE_PREFIX}${process.pid}-`));
  const readyFile = join(stateDir, "ready.json");
  const publish = (r: PgReady) => {
    writeFileSync(`${readyFile}.tmp`, JSON.stringify(r));
    renameSync(`${readyFile}.tmp`, readyFile);
  };
  const removeState = () => rmSync(stateDir, { recursive: true, force: true });
  if ("missing" in found) {
    const reason = `no PostgreSQL ≥ 15 with pgvector ≥ 0.8 (${found.missing}); install them as .ci/run does, or point VSEARCH_TEST_PG_BINDIR at a bin dir`;
    if (required) {
      // Each pg file fails with this (the sqlite project still runs and reports).
      console.error(`[pg] VSEARCH_REQUIRE_PG=1 and ${reason}`);
      publish({ error: `VSEARCH_REQUIRE_PG=1 and ${reason}` });
      project.provide("pg", { available: true, reason, readyFile, required });
      return removeState;
    }
    console.warn(`[pg] the pg project's tests are skipped: ${reason}`);
    project.provide("pg", { available: false, reason, readyFile: "", required });
    removeState();
    return;
  }
  let cluster: Cluster | undefined;
  const starting = (async () => {
    try {
      cluster = await startCluster(found.bin);
      const t0 = performance.now();
      const admin = postgres(cluster.adminUrl, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`CREATE DATABASE ${TEMPLATE_DB}`);
        const tpl = await openPgStore(cluster.urlFor(TEMPLATE_DB), { max: 2 });
        await tpl.close();
        // Nothing may connect to a template while it is copied (FILE_COPY refuses): keep it that way.
        await admin.unsafe(`ALTER DATABASE ${TEMPLATE_DB} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
      } finally {
        await admin.end({ timeout: 5 });
      }
      publish({
        adminUrl: cluster.adminUrl,
        port: cluster.port,
        timings: { ...cluster.timings, templateMs: performance.now() - t0 },
      });
    } catch (err) {
      publish({ error: `the test cluster did not start: ${err instanceof Error ? err.message : String(err)}` });
    }
  })();
  project.provide("pg", { available: true, reason: "", readyFile, required });
  return async () => {
    await starting;
    try {
      await cluster?.stop();
    } finally {
      removeState();
    }
  };
}
