/**
 * One worker node as its own process, for claimers.test.ts: opens the database on a connection
 * of its own, signals it is ready, waits for the go file, starts after its delay (as a node does:
 * `LeaseQueue.start`), then runs ingest tasks one at a time, each held 5–25 ms, until the queue is
 * empty. Prints the ids of the tasks it ran (and finished) as one JSON line.
 * Run: bun test/jobs/claimer-process.ts DATA_DIR NODE_ID START_DELAY_MS
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/core/logger.ts";
import { openStores } from "../helpers/stores.ts";

const [dir, node, delay] = process.argv.slice(2);
const s = openStores(dir);
writeFileSync(join(dir, `ready-${node}`), "");
for (let i = 0; i < 6000 && !existsSync(join(dir, "go")); i++) await Bun.sleep(5);
await Bun.sleep(Number(delay));

const ran: number[] = [];
const ended: number[] = [];
const q = s.leaseQueue({
  node,
  lanes: [{ name: "index", kinds: ["ingest"], slots: 1 }],
  logger: createLogger("silent"),
  pollMs: 5,
});
q.handle("ingest", {
  run: async (task) => {
    ran.push(task.id);
    await Bun.sleep(5 + Math.floor(Math.random() * 20));
    return () => {
      ended.push(task.id); // written only if the task was still this worker's
    };
  },
  fail: async () => {}, // no task here fails (the run never throws)
});
await q.start();
for (let i = 0; i < 6000 && (await s.tasks.list()).length > 0; i++) await Bun.sleep(10);
await q.stop();
s.close();
console.log(JSON.stringify({ node, ran, ended }));
