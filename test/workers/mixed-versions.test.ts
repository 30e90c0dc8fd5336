/**
 * Mixed versions are refused (issue 26, docs/SCALE-OUT.md "Upgrade"): a node of another vsearch
 * version is written into the registry through the real store, as that node's own start writes it.
 * A worker beside a running server of another version claims nothing and says why; a serving node
 * (in-process and a real `vsearch serve` process) refuses to start, naming that node, its host and
 * version and the fix; stopped and lost rows of the old version block nothing. On both backends.
 */
import { afterAll, expect, test } from "vitest";
import type { NewNode } from "../../src/nodes/store.ts";
import { VERSION } from "../../src/version.ts";
import { startTestApp, type TestApp } from "../helpers/app.ts";
import { runCli, startWorker } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp.ts";
import { databaseUrlFor, testBackend } from "../pg/backend.ts";

const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps.reverse()) await t.close().catch(() => {});
});

const OLD = "0.0.1-old";
const oldServer = (id: string): NewNode => ({
  id,
  role: "serve",
  kinds: "[]",
  concurrency: 1,
  device: "cpu",
  models: JSON.stringify({ "image-text": null, speech: null }),
  version: OLD,
  host: "old-host",
  pid: 4242,
  refused: null,
});

test("beside a running server of another version a worker claims nothing and a server does not start; stopped and lost ones block nothing", async () => {
  const server = await startTestApp({}, { prefix: "vsearch-versions-" });
  apps.push(server);
  await server.app.start();
  const s = server.stores;
  await s.nodes.register(oldServer("node_00000000000000o1"));

  // A worker of this version: refused, with the reason in its registry row.
  const worker = await startTestApp({}, { dataDir: server.dir, nodeId: "node_00000000000000w1", role: "worker" });
  apps.push(worker);
  await worker.app.start();
  expect(worker.app.services.nodes.refused).toBe(
    `this worker's vsearch version (${VERSION}) differs from the cluster's (${OLD}, on serve node node_00000000000000o1 at old-host): ` +
      `mixed versions are refused; run vsearch ${OLD} here, or upgrade every node (docs/SCALE-OUT.md, "Upgrade"), then restart the worker`,
  );
  const listed = await server.app.services.nodes.list();
  expect(listed.find((n) => n.id === "node_00000000000000w1")?.refused).toMatch(/vsearch version/);
  // A real `vsearch worker` (PostgreSQL only: workers share a database) says so in its start line.
  if (testBackend() === "postgres") {
    const env = { VSEARCH_DATABASE_URL: (await databaseUrlFor(server.dir))!, VSEARCH_MEDIA_ROOT: server.dir };
    const proc = await startWorker(tempDir("vsearch-versions-worker-"), env);
    try {
      expect(proc.refused).toMatch(
        new RegExp(
          `^this worker's vsearch version \\(${VERSION}\\) differs from the cluster's \\(${OLD}, on serve node node_00000000000000o1 at old-host\\)`,
        ),
      );
    } finally {
      await proc.stop();
    }
  }

  // A serving node of this version: refused at start, one line naming the other node and the fix.
  const serve = await startTestApp({}, { dataDir: server.dir, nodeId: "node_00000000000000s1", role: "serve" });
  apps.push(serve);
  await expect(serve.app.start()).rejects.toThrow(
    `serve node node_00000000000000o1 on old-host (pid 4242) runs vsearch ${OLD} on this database, this is ${VERSION}: ` +
      `mixed versions are refused. Stop the nodes of the old version first (every server and worker), then start this version everywhere (docs/SCALE-OUT.md, "Upgrade")`,
  );
  expect((await server.app.services.nodes.list()).some((n) => n.id === "node_00000000000000s1")).toBe(false);

  // The real process: `vsearch serve` exits 1 with that line (and leaves nothing running).
  const cli = await runCli(["--data-dir", server.dir, "serve", "--port", "0"]);
  expect(cli.code).toBe(1);
  expect(cli.stderr).toMatch(
    new RegExp(
      `^error: serve node node_00000000000000o1 on old-host \\(pid 4242\\) runs vsearch ${OLD} .*"Upgrade"\\)\\n$`,
    ),
  );

  // The old server stopped cleanly: no longer a block.
  await s.nodes.stopped("node_00000000000000o1");
  const after = await startTestApp({}, { dataDir: server.dir, nodeId: "node_00000000000000s2", role: "serve" });
  apps.push(after);
  await after.app.start();
  const worker2 = await startTestApp({}, { dataDir: server.dir, nodeId: "node_00000000000000w2", role: "worker" });
  apps.push(worker2);
  await worker2.app.start();
  expect(worker2.app.services.nodes.refused).toBeNull();

  // One that crashed a minute ago (no heartbeat for three periods: lost) blocks nothing either.
  server.dbClock.skewMs = -60_000; // its row is written with the database's clock a minute back
  await s.nodes.register(oldServer("node_00000000000000o2"));
  server.dbClock.skewMs = 0;
  expect((await server.app.services.nodes.list()).find((n) => n.id === "node_00000000000000o2")?.status).toBe("lost");
  const third = await startTestApp({}, { dataDir: server.dir, nodeId: "node_00000000000000s3", role: "serve" });
  apps.push(third);
  await third.app.start();
}, 180_000);
