/**
 * PostgreSQL errors by kind (src/store/errors.ts), each provoked on a real server: constraint
 * violations, serialization failures and deadlocks (and their retry by the unit of work), lock
 * and statement timeouts, a backend terminated by the administrator, a refused connection, a
 * statement after a failed one in a transaction.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { isStoreError, pgKind, StoreError } from "../../../src/store/errors.ts";
import { openPgStore } from "../../../src/store/pg/open.ts";
import { freePort } from "../../pg/cluster.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { until } from "../../helpers/wait.ts";
import { gate, openPg, tableName } from "./backends.ts";

type Store = Awaited<ReturnType<typeof openPg>>;

/** The error `p` rejects with (fails the test if it resolves). */
async function rejection(p: Promise<unknown>): Promise<StoreError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(StoreError);
    return e as StoreError;
  }
  throw new Error("expected a rejection");
}

describe.skipIf(!pgAvailable())("PostgreSQL errors by kind", () => {
  let s: Store;
  let once: Store; // a unit of work that does not retry, to see the error itself
  beforeAll(async () => {
    s = await openPg();
    once = await openPg({ maxAttempts: 1 });
    await s.exec.exec(`
      CREATE TABLE parents (id integer PRIMARY KEY, email text NOT NULL, n integer NOT NULL CHECK (n >= 0));
      CREATE UNIQUE INDEX parents_email ON parents (email);
      CREATE TABLE children (id integer PRIMARY KEY, parent_id integer NOT NULL REFERENCES parents (id));
      CREATE TABLE counters (id integer PRIMARY KEY, v integer NOT NULL);
      INSERT INTO parents (id, email, n) VALUES (1, 'a@x', 0);
      INSERT INTO counters (id, v) VALUES (1, 0), (2, 0);`);
  });

  test("23505 unique (with the constraint's name), 23503 foreign key, 23514/23502 constraint", async () => {
    const dupKey = await rejection(s.exec.run("INSERT INTO parents (id, email, n) VALUES (?, ?, ?)", 1, "b@x", 0));
    expect([dupKey.kind, dupKey.code, dupKey.constraint]).toEqual(["unique", "23505", "parents_pkey"]);
    const dupEmail = await rejection(s.exec.run("INSERT INTO parents (id, email, n) VALUES (?, ?, ?)", 2, "a@x", 0));
    expect([dupEmail.kind, dupEmail.constraint]).toEqual(["unique", "parents_email"]);
    const fk = await rejection(s.exec.run("INSERT INTO children (id, parent_id) VALUES (?, ?)", 1, 99));
    expect([fk.kind, fk.code, fk.constraint]).toEqual(["foreign_key", "23503", "children_parent_id_fkey"]);
    const check = await rejection(s.exec.run("UPDATE parents SET n = ? WHERE id = ?", -1, 1));
    expect([check.kind, check.code]).toEqual(["constraint", "23514"]);
    const notNull = await rejection(s.exec.run("INSERT INTO parents (id, email, n) VALUES (?, ?, ?)", 3, null, 0));
    expect([notNull.kind, notNull.code]).toEqual(["constraint", "23502"]);
    const syntax = await rejection(s.exec.all("SELEKT 1"));
    expect([syntax.kind, syntax.code]).toEqual(["misuse", "42601"]);
  });

  test("a statement after a failed one in a unit of work names the first failure (25P02)", async () => {
    const err = await rejection(
      once.uow.run(async () => {
        await once.exec.run("INSERT INTO parents (id, email, n) VALUES (?, ?, ?)", 1, "c@x", 0).catch(() => {});
        await once.exec.get("SELECT 1 AS one");
      }),
    );
    expect(err.code).toBe("25P02");
    expect(err.kind).toBe("misuse");
    expect(err.message).toMatch(/after a failed one.*parents_pkey/s);
    expect(err.constraint).toBe("parents_pkey");
  });

  /** Two serializable read-then-write units of work that both read before either writes. */
  async function writeSkew(store: Store, t: string) {
    const bothRead = { a: gate(), b: gate() };
    const tries = { a: 0, b: 0 };
    const body = (who: "a" | "b", other: "a" | "b") => async () => {
      tries[who]++;
      await store.exec.exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
      const row = await store.exec.get<{ total: number }>(`SELECT coalesce(sum(v), 0) AS total FROM ${t}`);
      bothRead[who].open();
      await bothRead[other].promise;
      await store.exec.run(`INSERT INTO ${t} (who, v) VALUES (?, ?)`, who, (row?.total ?? 0) + 1);
    };
    const results = await Promise.allSettled([store.uow.run(body("a", "b")), store.uow.run(body("b", "a"))]);
    return { results, tries };
  }

  test("40001 serialization failure: kind retry; the unit of work runs fn again and both commit", async () => {
    const t1 = tableName("skew");
    const t2 = tableName("skew");
    for (const t of [t1, t2]) await s.exec.exec(`CREATE TABLE ${t} (who text NOT NULL, v integer NOT NULL)`);
    const failing = await writeSkew(once, t1);
    const rejected = failing.results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    expect(rejected).toHaveLength(1);
    expect([rejected[0].reason.kind, rejected[0].reason.code]).toEqual(["retry", "40001"]);

    const retried = await writeSkew(s, t2);
    expect(retried.results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(retried.tries.a + retried.tries.b).toBe(3); // the loser ran again, once
    // The second try read the first's row: the totals are 1 and 2, not 1 and 1.
    expect((await s.exec.all<{ v: number }>(`SELECT v FROM ${t2} ORDER BY v`)).map((r) => r.v)).toEqual([1, 2]);
  });

  test("a conflict that persists is given up after 3 tries, as kind retry", async () => {
    let tries = 0;
    const err = await rejection(
      s.uow.run(async () => {
        tries++;
        await s.exec.exec("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$");
      }),
    );
    expect([err.kind, err.code, tries]).toEqual(["retry", "40001", 3]);
  });

  /** Two units of work that each lock one counter row and then want the other's. */
  async function crossedUpdates(store: Store) {
    const locked = { a: gate(), b: gate() };
    const tries = { a: 0, b: 0 };
    const body = (who: "a" | "b", mine: number, theirs: number, other: "a" | "b") => async () => {
      tries[who]++;
      await store.exec.run("UPDATE counters SET v = v + 1 WHERE id = ?", mine);
      locked[who].open();
      await locked[other].promise;
      await store.exec.run("UPDATE counters SET v = v + 1 WHERE id = ?", theirs);
    };
    const results = await Promise.allSettled([
      store.uow.run(body("a", 1, 2, "b")),
      store.uow.run(body("b", 2, 1, "a")),
    ]);
    return { results, tries };
  }

  test("40P01 deadlock: kind retry; the victim runs again and both commit", async () => {
    const before = await s.exec.all<{ v: number }>("SELECT v FROM counters ORDER BY id");
    const failing = await crossedUpdates(once);
    const rejected = failing.results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
    expect(rejected).toHaveLength(1);
    expect([rejected[0].reason.kind, rejected[0].reason.code]).toEqual(["retry", "40P01"]);

    const retried = await crossedUpdates(s);
    expect(retried.results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    expect(retried.tries.a + retried.tries.b).toBe(3);
    // One committed pair from the failing round (+1 each) and two from the retried one (+2 each).
    const after = await s.exec.all<{ v: number }>("SELECT v FROM counters ORDER BY id");
    expect(after.map((r, i) => r.v - before[i].v)).toEqual([3, 3]);
  });

  test("55P03 lock not available is busy; 57014 statement timeout is timeout", async () => {
    const held = gate();
    const locked = gate();
    const holder = s.uow.run(async () => {
      await s.exec.get("SELECT id FROM counters WHERE id = 1 FOR UPDATE");
      locked.open();
      await held.promise;
    });
    await locked.promise;
    const busy = await rejection(once.exec.get("SELECT id FROM counters WHERE id = 1 FOR UPDATE NOWAIT"));
    expect([busy.kind, busy.code]).toEqual(["busy", "55P03"]);
    held.open();
    await holder;
    const slow = await rejection(
      once.uow.run(async () => {
        await once.exec.exec("SET LOCAL statement_timeout = '50ms'");
        await once.exec.get("SELECT pg_sleep(30)");
      }),
    );
    expect([slow.kind, slow.code]).toEqual(["timeout", "57014"]);
  });

  test("57P01: a backend terminated by the administrator is unavailable; the pool reconnects", async () => {
    const one = await openPg({ max: 1 });
    const { admin } = pgTest();
    const pid = (await one.exec.get<{ pid: number }>("SELECT pg_backend_pid() AS pid"))?.pid;
    const sleeping = one.exec.get("SELECT pg_sleep(60)");
    expect(
      await until(
        async () =>
          (await admin`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid ?? 0} AND state = 'active'`).length > 0,
      ),
    ).toBe(true);
    await admin`SELECT pg_terminate_backend(${pid ?? 0})`;
    const lost = await rejection(sleeping);
    expect(lost.kind).toBe("unavailable");
    // postgres.js fails the statement in flight with CONNECTION_CLOSED and hands the server's FATAL
    // 57P01 to the next statement it is given; the one after runs on a new connection.
    const next = await one.exec.get<{ pid: number }>("SELECT pg_backend_pid() AS pid").catch((e: StoreError) => e);
    const codes = [lost.code, next instanceof StoreError ? next.code : "ok"];
    expect(codes).toContain("57P01");
    if (next instanceof StoreError) expect(next.kind).toBe("unavailable");
    const again = await one.exec.get<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    expect(again?.pid).toBeGreaterThan(0);
    expect(again?.pid).not.toBe(pid);
  });

  test("a refused connection is unavailable, and the error names the server, not the password", async () => {
    const port = await freePort(); // nothing listens there
    const err = await rejection(
      openPgStore(`postgres://vsearch:s3cret@127.0.0.1:${port}/nowhere`, { connectTimeoutS: 5 }),
    );
    expect(err.kind).toBe("unavailable");
    expect(err.code).toBe("ECONNREFUSED");
    expect(err.message).toContain(`127.0.0.1:${port}/nowhere`);
    expect(err.message).not.toContain("s3cret");
  });

  test("every SQLSTATE class maps to its kind; driver-less errors are not store errors", () => {
    const table: [string, string][] = [
      ["23505", "unique"],
      ["23503", "foreign_key"],
      ["23P01", "constraint"],
      ["40001", "retry"],
      ["40P01", "retry"],
      ["55P03", "busy"],
      ["53100", "storage_full"],
      ["53200", "unavailable"],
      ["53300", "unavailable"],
      ["57P01", "unavailable"],
      ["57P02", "unavailable"],
      ["57P03", "unavailable"],
      ["08006", "unavailable"],
      ["28P01", "unavailable"],
      ["3D000", "unavailable"],
      ["57014", "timeout"],
      ["25P02", "misuse"],
      ["42P01", "misuse"],
      ["22P02", "misuse"],
      ["XX000", "other"],
    ];
    expect(table.map(([code]) => [code, pgKind(code)])).toEqual(table);
    expect(isStoreError(new Error("plain"))).toBe(false);
  });
});
