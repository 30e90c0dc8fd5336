/**
 * The embedded store's reader threads (issue 27, store/sqlite/read-threads.ts): `allAside` runs on
 * a worker thread's own connection against the last commit, so the event loop keeps turning while
 * it reads; inside a unit of work it reads the transaction's own view; failures arrive as
 * StoreErrors, never as a hang. Real SQLite files, real worker threads.
 */
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { StoreError } from "../../src/store/errors.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/database.ts";
import { tempDir } from "../helpers/temp.ts";

const WORKER = join(import.meta.dirname, "..", "..", "src", "store", "sqlite", "read-worker.ts");
const open: SqliteStore[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

function store(workerFile = WORKER, threads = 1): SqliteStore {
  const s = openSqliteStore(join(tempDir(), "t.db"), { readThreads: { workerFile, threads } });
  open.push(s);
  return s;
}

test("a read aside sees every commit before it, and inside a unit of work the transaction's own rows", async () => {
  const s = store();
  await s.exec.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  await s.exec.run("INSERT INTO t (v) VALUES (?)", "a");
  expect(await s.exec.allAside<{ v: string }>("SELECT v FROM t ORDER BY id")).toEqual([{ v: "a" }]);

  let inside: { v: string }[] = [];
  let outside: { v: string }[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const tx = s.uow.run(async () => {
    await s.exec.run("INSERT INTO t (v) VALUES (?)", "b");
    inside = await s.exec.allAside<{ v: string }>("SELECT v FROM t ORDER BY id");
    await held;
  });
  // Another flow while the transaction is open: the last commit only, never a transaction half done.
  await new Promise((r) => setTimeout(r, 20));
  outside = await s.exec.allAside<{ v: string }>("SELECT v FROM t ORDER BY id");
  release();
  await tx;
  expect(inside).toEqual([{ v: "a" }, { v: "b" }]);
  expect(outside).toEqual([{ v: "a" }]);
  expect(await s.exec.allAside<{ n: number }>("SELECT count(*) AS n FROM t")).toEqual([{ n: 2 }]);
});

test("the event loop turns while a long read runs aside; on this thread it could not", async () => {
  const s = store();
  // A few hundred ms of SQL on any machine (2 M rows counted through a recursive CTE).
  const long =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) SELECT count(*) AS n FROM c";
  let turns = 0;
  let stop = false;
  const spin = async () => {
    // Bounded: the read ends, or 100 000 turns pass.
    while (!stop && turns < 100_000) {
      await new Promise((r) => setImmediate(r));
      turns++;
    }
  };
  const spinning = spin();
  const rows = await s.exec.allAside<{ n: number }>(long);
  const duringAside = turns;
  stop = true;
  await spinning;
  expect(rows).toEqual([{ n: 2_000_000 }]);
  expect(duringAside).toBeGreaterThan(0);

  // The same read with `all` (this thread): not one turn while it runs.
  turns = 0;
  stop = false;
  const again = spin();
  const before = turns;
  await s.exec.all<{ n: number }>(long);
  const duringAll = turns - before;
  stop = true;
  await again;
  expect(duringAll).toBe(0);
});

test("a bad statement fails as a StoreError; the thread keeps serving", async () => {
  const s = store();
  await s.exec.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  const err = await s.exec.allAside("SELECT nope FROM t").catch((e) => e);
  expect(err).toBeInstanceOf(StoreError);
  expect(err.message).toContain("no such column: nope");
  const wrongCount = await s.exec.allAside("SELECT id FROM t WHERE id = ? AND ?", 1).catch((e) => e);
  expect(wrongCount).toBeInstanceOf(StoreError);
  expect(wrongCount.message).toContain("expected 2 values, received 1");
  // Writes are refused on a reader thread's connection (query_only), loudly.
  const write = await s.exec.allAside("INSERT INTO t (id) VALUES (1) RETURNING id").catch((e) => e);
  expect(write).toBeInstanceOf(StoreError);
  expect(await s.exec.all("SELECT id FROM t")).toEqual([]);
  expect(await s.exec.allAside("SELECT 1 AS one")).toEqual([{ one: 1 }]);
});

test("reads spread over several threads all answer, in any order", async () => {
  const s = store(WORKER, 3);
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) => s.exec.allAside<{ i: number }>("SELECT ? AS i", i)),
  );
  expect(answers.map((r) => r[0].i)).toEqual(Array.from({ length: 30 }, (_, i) => i));
});

test("a thread that cannot start fails its reads with a StoreError instead of hanging; close fails what is pending", async () => {
  const broken = store(join(tempDir(), "missing-worker.ts"));
  const err = await broken.exec.allAside("SELECT 1").catch((e) => e);
  expect(err).toBeInstanceOf(StoreError);
  expect(err.kind).toBe("unavailable");
  // The same store still reads on this thread.
  expect(await broken.exec.all("SELECT 1 AS one")).toEqual([{ one: 1 }]);

  const s = store();
  const pending = s.exec.allAside(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) AS n FROM c",
  );
  s.close();
  open.splice(open.indexOf(s), 1);
  const closed = await pending.catch((e) => e);
  expect(closed).toBeInstanceOf(StoreError);
  expect(closed.message).toContain("closed");
  expect(((await s.exec.allAside("SELECT 1").catch((e) => e)) as Error).message).toContain("closed");
});
