/**
 * The one lease queue (src/jobs/lease-queue.ts, task-store.ts) over a real SQLite file, with
 * workers on connections of their own as nodes have them: the fair claim order, the per-account
 * running cap, the heartbeat that holds a lease whatever the task reports, leases on the
 * database's clock, and a node's start that frees only what its own previous incarnation held.
 * (8 worker processes claiming at once: claimers.test.ts. Through HTTP and the real pipeline:
 * fairness.test.ts, cancel.test.ts.)
 */
import { afterAll, describe, expect, test } from "vitest";
import { databaseUrlFor } from "../pg/backend.ts";
import { createLogger } from "../../src/core/logger.ts";
import type { LeaseQueue, TaskHandler } from "../../src/jobs/lease-queue.ts";
import type { TaskRow } from "../../src/jobs/task-store.ts";
import { openStores, type Stores } from "../helpers/stores.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { seedIngest } from "./seed.ts";

const dirs = tempDirs("vsearch-queue-");
const silent = createLogger("silent");
const opened: Stores[] = [];
const queues: LeaseQueue[] = [];
afterAll(async () => {
  for (const q of queues) await q.stop();
  for (const s of opened) s.close();
});

/** A connection to `dir`'s database whose clock runs `clock.ms` ahead (one shared skew = one database clock). */
async function connect(dir: string, clock = { ms: 0 }): Promise<Stores> {
  await databaseUrlFor(dir); // the pg project: this dir's database (test/pg/backend.ts)
  const s = openStores(dir, { dbClockSkewMs: () => clock.ms });
  opened.push(s);
  return s;
}

/** A worker node over its own connection, running `handler` for ingest tasks, one at a time. */
function worker(s: Stores, node: string, handler: TaskHandler, opts: { leaseMs?: number; slots?: number } = {}) {
  const q = s.leaseQueue({
    node,
    lanes: [{ name: "index", kinds: ["ingest"], slots: opts.slots ?? 1 }],
    logger: silent,
    leaseMs: opts.leaseMs ?? 60_000,
    pollMs: 20,
  });
  q.handle("ingest", handler);
  queues.push(q);
  return q;
}

/** A handler that records what it ran and how it ended; each run lasts `ms`, or until stopped. */
function recorder(ms = Number.POSITIVE_INFINITY) {
  const log = { ran: [] as number[], done: [] as number[], stopped: [] as number[], failed: [] as number[] };
  const handler: TaskHandler = {
    run: (task, ctx) =>
      new Promise((resolve, reject) => {
        log.ran.push(task.id);
        const timer = Number.isFinite(ms)
          ? setTimeout(
              () =>
                resolve(() => {
                  log.done.push(task.id);
                }),
              ms,
            )
          : null;
        ctx.signal.addEventListener("abort", () => {
          if (timer) clearTimeout(timer);
          log.stopped.push(task.id);
          reject(new Error("stopped"));
        });
      }),
    fail: async (task) => {
      log.failed.push(task.id);
    },
  };
  return { log, handler };
}

const claimAs = async (s: Stores, owner: string, maxRunningPerAccount = 0): Promise<TaskRow | null> =>
  await s.tasks.claim({
    kinds: ["ingest", "ocr"],
    owner,
    node: owner.split("/")[0],
    leaseMs: 60_000,
    maxRunningPerAccount,
  });

describe("the claim order is fair across accounts", () => {
  test("a newcomer's short job (ingest, then its OCR) goes before the rest of another account's backlog", async () => {
    const clock = { ms: 0 };
    const s = await connect(dirs.make(), clock);
    await seedIngest(s, "usr_a", 20);
    const a0 = (await claimAs(s, "w/1"))!;
    expect(a0.video_id).toBe("vid_usr_a_0");
    clock.ms += 5_000; // A's task runs 5 s; B uploads meanwhile
    await seedIngest(s, "usr_b", 1);
    expect(await s.tasks.finish(a0.id, "w/1")).toBe(true);

    const b0 = (await claimAs(s, "w/1"))!;
    expect(b0.video_id).toBe("vid_usr_b_0");
    clock.ms += 800;
    // B's ingest ends and queues B's OCR (as the pipeline does, in one transaction).
    await s.transaction(async () => {
      await s.tasks.finish(b0.id, "w/1");
      await s.tasks.enqueue({ kind: "ocr", accountId: "usr_b", videoId: b0.video_id, jobId: b0.job_id });
    });
    const b1 = (await claimAs(s, "w/1"))!;
    expect([b1.kind, b1.account_id]).toEqual(["ocr", "usr_b"]);
    clock.ms += 300;
    await s.tasks.finish(b1.id, "w/1");
    // B is done; A's backlog continues in its own order.
    const order = [];
    for (let t = await claimAs(s, "w/1"); t; t = await claimAs(s, "w/1")) {
      order.push(t.video_id);
      clock.ms += 1_000;
      await s.tasks.finish(t.id, "w/1");
    }
    expect(order).toEqual(Array.from({ length: 19 }, (_, i) => `vid_usr_a_${i + 1}`));
  });

  test("with several slots, the account with the fewest tasks running goes first; the running cap holds an account back", async () => {
    const s = await connect(dirs.make());
    await seedIngest(s, "usr_a", 5);
    await seedIngest(s, "usr_b", 5);
    await seedIngest(s, "usr_c", 5);
    const first = [await claimAs(s, "w/1"), await claimAs(s, "w/2"), await claimAs(s, "w/3")].map((t) => t!.account_id);
    expect(first.sort()).toEqual(["usr_a", "usr_b", "usr_c"]); // one each, not three of A's
    // Cap 1: every account already has one running, so nothing more is claimed …
    expect(await claimAs(s, "w/4", 1)).toBeNull();
    // … until one of them ends; then that account's next task, and only that.
    const aRunning = (await s.tasks.list({ accountId: "usr_a" })).find((t) => t.state === "running")!;
    await s.tasks.finish(aRunning.id, aRunning.lease_owner!);
    expect((await claimAs(s, "w/4", 1))?.account_id).toBe("usr_a");
    expect(await claimAs(s, "w/5", 1)).toBeNull();
  });

  test("an account back from idle starts level, whatever it was served before", async () => {
    const clock = { ms: 0 };
    const s = await connect(dirs.make(), clock);
    // B had an hour of work yesterday; today A has a backlog.
    await seedIngest(s, "usr_b", 1, "b_yesterday");
    const old = (await claimAs(s, "w/1"))!;
    clock.ms += 3_600_000;
    await s.tasks.finish(old.id, "w/1");
    await seedIngest(s, "usr_a", 3);
    const a0 = (await claimAs(s, "w/1"))!;
    clock.ms += 10_000;
    await seedIngest(s, "usr_b", 1, "b_today");
    await s.tasks.finish(a0.id, "w/1");
    expect((await claimAs(s, "w/1"))?.video_id).toBe("vid_b_today_0");
  });

  test("renditions are claimed by the same fair rule: another account's goes right after the encode running", async () => {
    const clock = { ms: 0 };
    const s = await connect(dirs.make(), clock);
    const claimRendition = async () =>
      await s.tasks.claim({ kinds: ["rendition"], owner: "w/r", node: "w", leaseMs: 60_000, maxRunningPerAccount: 0 });
    const indexAll = async () => {
      for (let t = await claimAs(s, "w/1"); t; t = await claimAs(s, "w/1")) await s.tasks.finish(t.id, "w/1");
    };
    // A's five videos are indexed; their renditions wait for the one encoding slot.
    const aVideos = await seedIngest(s, "usr_a", 5);
    await indexAll();
    for (const videoId of aVideos) await s.tasks.enqueue({ kind: "rendition", accountId: "usr_a", videoId });
    const a0 = (await claimRendition())!;
    expect(a0.video_id).toBe(aVideos[0]);
    clock.ms += 60_000; // A's first encode runs a minute; B's video is indexed meanwhile
    const [bVideo] = await seedIngest(s, "usr_b", 1);
    await indexAll();
    await s.tasks.enqueue({ kind: "rendition", accountId: "usr_b", videoId: bVideo });
    await s.tasks.finish(a0.id, "w/r");
    const order = [];
    for (let t = await claimRendition(); t; t = await claimRendition()) {
      order.push(t.video_id);
      clock.ms += 1_000;
      await s.tasks.finish(t.id, "w/r");
    }
    expect(order).toEqual([bVideo, ...aVideos.slice(1)]);
  });
});

describe("one queue for every kind", () => {
  test("one heartbeat holds an ingest, an OCR and a rendition lease at once; a rendition's lease runs out on the database's clock", async () => {
    const dir = dirs.make();
    const clock = { ms: 0 };
    const a = await connect(dir, clock);
    const [videoId] = await seedIngest(a, "usr_a", 1);
    await a.tasks.enqueue({ kind: "ocr", accountId: "usr_a", videoId, jobId: "job_usr_a_0" });
    await a.tasks.enqueue({ kind: "rendition", accountId: "usr_a", videoId });
    const lanes = [
      { name: "index", kinds: ["ingest", "ocr"] as const, slots: 2 },
      { name: "rendition", kinds: ["rendition"] as const, slots: 1 },
    ];
    const node = (s: Stores, name: string, handler: TaskHandler) => {
      // 3 s leases, renewed each second: a 1.5 s lease was lost to a stall of the loaded box (the
      // whole suite on 2 cores, PostgreSQL among it) and the holder's task stopped.
      const q = s.leaseQueue({ node: name, lanes, logger: silent, leaseMs: 3_000, pollMs: 20 });
      for (const kind of ["ingest", "ocr", "rendition"] as const) q.handle(kind, handler);
      queues.push(q);
      return q;
    };
    const holder = recorder(12_000);
    await node(a, "node_a", holder.handler).start();
    expect(await until(async () => holder.log.ran.length === 3, 10_000)).toBe(true);
    // Another node polls for every kind all along; each task runs 4 leases without a word.
    const other = recorder(10);
    await node(await connect(dir, clock), "node_b", other.handler).start();
    expect(await until(async () => holder.log.done.length === 3, 40_000)).toBe(true);
    expect(other.log.ran).toEqual([]);
    expect(holder.log.stopped).toEqual([]);
    expect(await a.tasks.list()).toEqual([]);

    // A rendition whose encoder froze (claimed, never renewed) is free once its lease ran out.
    await Promise.all(queues.splice(-2).map((q) => q.stop()));
    const [later] = await seedIngest(a, "usr_a", 1, "later");
    const indexed = (await claimAs(a, "w/1"))!;
    await a.tasks.finish(indexed.id, "w/1");
    const dead = await connect(dir, clock);
    await dead.tasks.enqueue({ kind: "rendition", accountId: "usr_a", videoId: later });
    const frozen = await dead.tasks.claim({
      kinds: ["rendition"],
      owner: "node_c/1",
      node: "node_c",
      leaseMs: 1_500,
      maxRunningPerAccount: 0,
    });
    expect(frozen?.video_id).toBe(later);
    const taker = recorder(10);
    await node(await connect(dir, clock), "node_b", taker.handler).start();
    await Bun.sleep(300);
    expect(taker.log.ran).toEqual([]); // held
    clock.ms += 1_501;
    expect(await until(async () => taker.log.done.length === 1, 10_000)).toBe(true);
    expect(await dead.tasks.finish(frozen!.id, "node_c/1")).toBe(false); // the frozen encoder writes nothing
  });
});

describe("leases", () => {
  test("the heartbeat holds a lease while the task reports nothing for several lease lengths", async () => {
    const dir = dirs.make();
    const a = await connect(dir);
    await seedIngest(a, "usr_a", 1);
    const holder = recorder(6_000);
    await worker(a, "node_a", holder.handler, { leaseMs: 1_500 }).start();
    await until(async () => holder.log.ran.length === 1, 10_000);
    // Another node polls all along; the task runs 4 leases without a word of progress.
    const other = recorder(10);
    await worker(await connect(dir), "node_b", other.handler, { leaseMs: 1_500 }).start();
    expect(await until(async () => holder.log.done.length === 1, 20_000)).toBe(true);
    expect(other.log.ran).toEqual([]);
    expect(holder.log.stopped).toEqual([]);
    expect(await a.tasks.list()).toEqual([]); // ended once
  });

  test("a lease that ran out on the database's clock is taken over; the first holder stops at its next heartbeat and writes nothing", async () => {
    const dir = dirs.make();
    const clock = { ms: 0 }; // one database, one clock: both connections see it move
    const a = await connect(dir, clock);
    const b = await connect(dir, clock);
    await seedIngest(a, "usr_a", 1);
    const first = recorder();
    await worker(a, "node_a", first.handler, { leaseMs: 2_000 }).start();
    await until(async () => first.log.ran.length === 1, 10_000);
    expect(await claimAs(b, "node_b/1")).toBeNull(); // held
    clock.ms += 2_001; // no heartbeat for a whole lease, as if node_a had frozen
    const taken = (await claimAs(b, "node_b/1"))!;
    expect(taken).toMatchObject({ lease_owner: "node_b/1", attempts: 2 });
    expect(await until(async () => first.log.stopped.length === 1, 5_000)).toBe(true);
    expect(first.log.done).toEqual([]);
    expect(await b.tasks.finish(taken.id, "node_b/1")).toBe(true);
  });

  test("a task whose row is deleted elsewhere (its video, by another process) is stopped at the next heartbeat", async () => {
    const dir = dirs.make();
    const a = await connect(dir);
    const [videoId] = await seedIngest(a, "usr_a", 1);
    const r = recorder();
    await worker(a, "node_a", r.handler, { leaseMs: 900 }).start();
    await until(async () => r.log.ran.length === 1, 10_000);
    const other = await connect(dir);
    await other.videos.delete(videoId); // its job and task cascade
    // No event reaches this worker (another connection deleted it): its heartbeat finds the row gone.
    expect(await until(async () => r.log.stopped.length === 1, 10_000, 10)).toBe(true);
    expect(r.log.done).toEqual([]);
    expect(await other.tasks.list()).toEqual([]);
  });

  test("a node's start frees what its previous incarnation held at once, and leaves another node's lease to run out", async () => {
    const dir = dirs.make();
    const clock = { ms: 0 };
    const s = await connect(dir, clock);
    const [mine, theirs] = await seedIngest(s, "usr_a", 2);
    // node_a crashed holding the first task; node_b (alive, another data dir) holds the second.
    expect((await claimAs(s, "node_a/dead"))?.video_id).toBe(mine);
    expect((await claimAs(s, "node_b/alive"))?.video_id).toBe(theirs);
    const restarted = recorder(10);
    const q = worker(await connect(dir, clock), "node_a", restarted.handler);
    expect(await q.start()).toBe(1);
    expect(await until(async () => restarted.log.done.length === 1, 10_000)).toBe(true);
    await Bun.sleep(200); // polls meanwhile: node_b's task is not touched
    expect(restarted.log.ran).toHaveLength(1);
    expect(await s.tasks.list()).toMatchObject([{ video_id: theirs, state: "running", lease_owner: "node_b/alive" }]);
    clock.ms += 60_001; // node_b's lease runs out: now anyone may take it
    expect(await until(async () => restarted.log.done.length === 2, 10_000)).toBe(true);
    expect(await s.tasks.list()).toEqual([]);
  });

  test("a stopping node hands its tasks back at once, and that claim is not counted as a crash", async () => {
    const dir = dirs.make();
    const s = await connect(dir);
    await seedIngest(s, "usr_a", 1);
    const r = recorder();
    const q = worker(await connect(dir), "node_a", r.handler);
    await q.start();
    await until(async () => r.log.ran.length === 1, 10_000);
    await q.stop();
    expect(r.log.stopped).toHaveLength(1);
    expect(await s.tasks.list()).toMatchObject([{ state: "queued", attempts: 0, lease_owner: null }]);
  });
});
