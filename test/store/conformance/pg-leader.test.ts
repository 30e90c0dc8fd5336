/**
 * The leader election (src/system/leader.ts) on the `leader` advisory lock (issue 26): of two
 * contenders on one database one leads and runs the duties; when its lock session is terminated
 * (what a lost connection does) it stops leading at its next check and one of them takes the lock
 * again; stop() hands the lock over at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../../../src/core/logger.ts";
import { ADVISORY_LOCKS, acquireAdvisoryLock, type HeldAdvisoryLock } from "../../../src/store/pg/advisory-lock.ts";
import { LeaderElection } from "../../../src/system/leader.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { until } from "../../helpers/wait.ts";
import { openPg } from "./backends.ts";

type Store = Awaited<ReturnType<typeof openPg>>;

describe.skipIf(!pgAvailable())("leader election", () => {
  let s: Store;
  const held: HeldAdvisoryLock[] = [];
  const runs = { a: 0, b: 0 };
  let a: LeaderElection;
  let b: LeaderElection;
  const contender = (name: "a" | "b") =>
    new LeaderElection(
      async () => {
        const lock = await acquireAdvisoryLock(s.pool, ADVISORY_LOCKS.leader, { wait: false });
        if (lock) held.push(lock);
        return lock;
      },
      {
        intervalMs: 100,
        logger: createLogger("silent"),
        duties: [{ name: "count", everyMs: 0, run: async () => void runs[name]++ }],
      },
    );

  beforeAll(async () => {
    s = await openPg();
    a = contender("a");
    b = contender("b");
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  test("one leads and runs the duties; a terminated session is noticed and the lock taken again; stop hands it over", async () => {
    expect(a.isLeader && b.isLeader).toBe(true); // neither started: each answers for itself
    await a.start();
    await b.start();
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(await until(() => runs.a >= 3, 30_000)).toBe(true);
    expect(runs.b).toBe(0);

    // The leader's lock session ends (a network failure, an administrator): it stops leading,
    // and a contender (either: both try every 100 ms) holds the lock again.
    await pgTest().admin`SELECT pg_terminate_backend(${held[0]!.pid})`;
    // (The old leader may believe it leads until its client sees the session close: the duties
    // are ones that tolerate a brief overlap.)
    expect(await until(() => a.terms + b.terms === 2 && a.isLeader !== b.isLeader, 30_000)).toBe(true);

    const [leader, other] = a.isLeader ? [a, b] : [b, a];
    const before = other.terms;
    await leader.stop();
    expect(leader.isLeader).toBe(false);
    expect(await until(() => other.terms === before + 1 && other.isLeader, 30_000)).toBe(true);
  }, 120_000);
});
