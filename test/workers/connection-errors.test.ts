/**
 * Connection errors are retried, not failed (issue 26): a worker's task that meets an unreachable
 * database (StoreError kind `unavailable`: a PostgreSQL restart, a network cut) is given back to
 * the queue — its attempt not counted — and runs again, instead of failing its job; an outcome
 * write that meets one is retried until the database answers. Through the real lease queue over
 * the test's database, on both backends.
 */
import { afterAll, expect, test } from "vitest";
import { createLogger } from "../../src/core/logger.ts";
import type { LeaseQueue, TaskHandler } from "../../src/jobs/lease-queue.ts";
import { StoreError } from "../../src/store/errors.ts";
import { openStores, type Stores } from "../helpers/stores.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { seedIngest } from "../jobs/seed.ts";
import { databaseUrlFor } from "../pg/backend.ts";

const dirs = tempDirs("vsearch-conn-errors-");
const opened: Stores[] = [];
const queues: LeaseQueue[] = [];
afterAll(async () => {
  for (const q of queues) await q.stop();
  for (const s of opened) s.close();
});

const unreachable = () =>
  new StoreError("unavailable", "database unreachable: connect ECONNREFUSED 127.0.0.1:5432", { code: "ECONNREFUSED" });

test("a task that meets an unreachable database is given back and runs again; its outcome write is retried; nothing is failed", async () => {
  const dir = dirs.make();
  await databaseUrlFor(dir);
  const s = openStores(dir);
  opened.push(s);
  const [video] = await seedIngest(s, "usr_conn", 1);
  const log = { runs: 0, outcomes: 0, failed: 0 };
  const handler: TaskHandler = {
    run: async () => {
      log.runs++;
      if (log.runs === 1) throw unreachable(); // mid-task: a stage's write found no database
      return () => {
        log.outcomes++;
        if (log.outcomes === 1) throw unreachable(); // the outcome's transaction: retried
      };
    },
    fail: async () => {
      log.failed++;
    },
  };
  const q = s.leaseQueue({
    node: "node_conn",
    lanes: [{ name: "index", kinds: ["ingest"], slots: 1 }],
    logger: createLogger("silent"),
    pollMs: 20,
    maxBackoffMs: 50,
  });
  q.handle("ingest", handler);
  queues.push(q);
  await q.start();
  expect(await until(async () => (await s.tasks.list({ videoId: video })).length === 0, 30_000)).toBe(true);
  expect(log).toEqual({ runs: 2, outcomes: 2, failed: 0 });
});
