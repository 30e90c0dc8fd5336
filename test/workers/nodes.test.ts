/**
 * The node registry (issue 26): every process that starts registers under its node id with its
 * role, kinds, device, active models, version, host and pid, and beats on the database's clock;
 * GET /v1/system/nodes (admins) and `vsearch nodes` list them as running, lost (no heartbeat for
 * three periods) or stopped. A worker whose active model differs from the serving nodes' refuses
 * jobs and says why. Here in-process, on both backends; the processes themselves (and the refused
 * worker claiming nothing): workers.test.ts.
 */
import { afterAll, expect, test } from "vitest";
import { createTenant, json, startTestApp, type TestApp } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { testBackend } from "../pg/backend.ts";

const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps.reverse()) await t.close().catch(() => {});
});

test("nodes register, beat and stop; a worker with another image-text model refuses jobs, one with the same claims", async () => {
  const cluster = fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper });
  const server = await startTestApp({}, { models: cluster, prefix: "vsearch-nodes-" });
  apps.push(server);
  await server.app.start();
  const a = await createTenant(server);

  const res = await server.request("GET", "/v1/system/nodes", { token: a.adminToken });
  expect(res.status).toBe(200);
  const [me] = (await json(res)).data;
  expect(me).toMatchObject({
    role: "all",
    status: "running",
    kinds: ["ingest", "ocr", "rendition"],
    concurrency: 1,
    models: { "image-text": tinyClip.modelId, speech: tinyWhisper.modelId },
    pid: process.pid,
    refused: null,
  });
  expect(me.device).toBe("cpu");
  expect(Date.parse(me.last_heartbeat)).toBeGreaterThan(0);
  expect((await server.request("GET", "/v1/system/nodes", { token: a.memberToken })).status).toBe(403);

  // A worker (same database, its own node id) whose CLIP is another model: refused, and listed so.
  const other = { ...tinyClip, modelId: "another-clip@1" };
  const wrong = await startTestApp(
    {},
    {
      models: fixedCatalog({ "image-text": other, speech: tinyWhisper }),
      dataDir: server.dir,
      nodeId: "node_00000000000000aa",
      role: "worker",
    },
  );
  apps.push(wrong);
  await wrong.app.start();
  expect(wrong.app.services.nodes.refused).toMatch(
    new RegExp(`image-text model \\(another-clip@1\\) differs from the cluster's \\(${tinyClip.modelId}, on all node `),
  );
  const right = await startTestApp(
    {},
    { models: cluster, dataDir: server.dir, nodeId: "node_00000000000000bb", role: "worker" },
  );
  apps.push(right);
  await right.app.start();
  expect(right.app.services.nodes.refused).toBeNull();
  const listed = await server.app.services.nodes.list();
  expect(listed.map((n) => [n.id, n.role, n.status, n.refused !== null])).toEqual([
    [me.id, "all", "running", false],
    ["node_00000000000000aa", "worker", "running", true],
    ["node_00000000000000bb", "worker", "running", false],
  ]);

  // No heartbeat for three periods (the database's clock a minute on): lost. A clean stop: stopped.
  right.dbClock.skewMs = 60_000;
  expect((await right.app.services.nodes.list()).find((n) => n.id === me.id)?.status).toBe("lost");
  right.dbClock.skewMs = 0;
  await wrong.close();
  expect((await server.app.services.nodes.list()).find((n) => n.id === "node_00000000000000aa")?.status).toBe(
    "stopped",
  );

  // The CLI's list: every node, the refusal spelled out.
  const cli = await runCli(["--data-dir", server.dir, "nodes"]);
  expect(cli.code).toBe(0);
  expect(cli.stdout).toMatch(/node_00000000000000aa +worker +stopped, refusing jobs/);
  expect(cli.stdout).toMatch(/node_00000000000000aa: this worker's image-text model/);
}, 120_000);

// The pg project hands every CLI process a database: there the refusal cannot happen.
test.skipIf(testBackend() === "postgres")(
  "vsearch worker refuses to start without a PostgreSQL database",
  async () => {
    const noDb = await runCli(["worker"], { VSEARCH_DATA_DIR: "/nonexistent-vsearch-worker" });
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toMatch(/vsearch worker needs database_url \(--database-url or VSEARCH_DATABASE_URL\)/);
  },
  120_000,
);

test("vsearch worker refuses unknown --kinds and a --concurrency below 1", async () => {
  const kinds = await runCli(["worker", "--kinds", "ingest,thumbnails"]);
  expect(kinds.code).toBe(1);
  expect(kinds.stderr).toMatch(/--kinds must list one or more of ingest, ocr, rendition, got "ingest,thumbnails"/);
  const conc = await runCli(["worker", "--concurrency", "0"]);
  expect(conc.code).toBe(1);
  expect(conc.stderr).toMatch(/--concurrency must be a positive integer, got "0"/);
}, 120_000);
