/**
 * Claims under concurrent claimers and leases on the database clock, on PostgreSQL (what issue
 * 24's `queue` claim must hold to once several processes claim): `FOR UPDATE SKIP LOCKED` hands
 * each row to exactly one claimer, where the plain `id = (SELECT … LIMIT 1)` form hands a row to
 * two; a lease expires by the database's clock (`pgDbNowMs`), shifted by the skew tests use.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { pgDbNowMs } from "../../../src/store/pg/clock.ts";
import { pgAvailable, pgTest } from "../../pg/database.ts";
import { until } from "../../helpers/wait.ts";
import { gate, openPg } from "./backends.ts";

type Store = Awaited<ReturnType<typeof openPg>>;

const CLAIMERS = 8;
const PER_CLAIMER = 100;

const SKIP_LOCKED_CLAIM = `UPDATE work SET state = 'claimed', owner = ?
  WHERE id = (SELECT id FROM work WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING id`;
/** The claim shape of today's jobs/store.ts: correct on SQLite (one writer), not under READ COMMITTED. */
const PLAIN_CLAIM = `UPDATE work SET state = 'claimed', owner = ?
  WHERE id = (SELECT id FROM work WHERE state = 'queued' ORDER BY id LIMIT 1)
  RETURNING id`;

describe.skipIf(!pgAvailable())("claims and leases on PostgreSQL", () => {
  let s: Store;
  beforeAll(async () => {
    s = await openPg({ max: CLAIMERS + 1 });
    await s.exec.exec(`CREATE TABLE work (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      state text NOT NULL DEFAULT 'queued', owner text)`);
    await s.exec.exec(`CREATE TABLE leases (id text PRIMARY KEY, owner text, lease_expires_at bigint)`);
  });

  async function refill(n: number): Promise<void> {
    await s.exec.run("DELETE FROM work");
    await s.exec.insertMany(
      { table: "work", columns: ["state"] },
      Array.from({ length: n }, () => ["queued"]),
    );
  }

  test(`${CLAIMERS} concurrent claimers × ${PER_CLAIMER} rows with SKIP LOCKED: each row claimed exactly once`, async () => {
    await refill(CLAIMERS * PER_CLAIMER);
    const claimedBy = await Promise.all(
      Array.from({ length: CLAIMERS }, async (_, c) => {
        const mine: number[] = [];
        // Bounded: there are only CLAIMERS × PER_CLAIMER rows to claim.
        for (let i = 0; i <= CLAIMERS * PER_CLAIMER; i++) {
          const row = await s.uow.run(() => s.exec.get<{ id: number }>(SKIP_LOCKED_CLAIM, `claimer-${c}`));
          if (!row) break;
          mine.push(row.id);
        }
        return mine;
      }),
    );
    const all = claimedBy.flat();
    expect(all).toHaveLength(CLAIMERS * PER_CLAIMER);
    expect(new Set(all).size).toBe(CLAIMERS * PER_CLAIMER);
    expect(await s.exec.get("SELECT count(*) AS n FROM work WHERE state = 'queued'")).toEqual({ n: 0 });
    // The database agrees with what each claimer was told.
    const owners = await s.exec.all<{ id: number; owner: string }>("SELECT id, owner FROM work");
    const told = new Map(claimedBy.flatMap((ids, c) => ids.map((id) => [id, `claimer-${c}`] as const)));
    for (const o of owners) expect(told.get(o.id)).toBe(o.owner);
  });

  /** Claimer A claims inside a unit of work and holds it open; B claims while A's row is locked. */
  async function racedClaim(claim: string): Promise<{ a: number; b: number | undefined }> {
    await refill(2);
    const claimed = gate();
    const commit = gate();
    let a = 0;
    const holder = s.uow.run(async () => {
      a = (await s.exec.get<{ id: number }>(claim, "a"))?.id ?? 0;
      claimed.open();
      await commit.promise;
    });
    await claimed.promise;
    const b = s.exec.get<{ id: number }>(claim, "b");
    // Let B reach the database and either skip the locked row or wait on it, then let A commit.
    const waiting = () =>
      pgTest()
        .admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${pgTest().name} AND wait_event_type = 'Lock'`;
    const bSettled = b.then(() => true);
    await until(
      async () => (await Promise.race([bSettled, Bun.sleep(5).then(() => false)])) || (await waiting())[0].n > 0,
    );
    commit.open();
    await holder;
    return { a, b: (await b)?.id };
  }

  test("the plain `id = (SELECT … LIMIT 1)` claim hands one row to two claimers (why SKIP LOCKED)", async () => {
    const { a, b } = await racedClaim(PLAIN_CLAIM);
    expect(a).toBeGreaterThan(0);
    expect(b).toBe(a); // B waited for A's lock, re-checked only `id = …`, and took the same row
  });

  test("with SKIP LOCKED the second claimer takes the next row without waiting", async () => {
    const { a, b } = await racedClaim(SKIP_LOCKED_CLAIM);
    expect(b).toBeGreaterThan(0);
    expect(b).not.toBe(a);
  });

  const now = (p: string) => pgDbNowMs(p);
  const TAKE = `UPDATE leases SET owner = ?2, lease_expires_at = ${now("?1")} + ?3
    WHERE id = ?4 AND (owner IS NULL OR owner = ?2 OR lease_expires_at <= ${now("?1")}) RETURNING owner`;

  test("a lease expires by the database's clock: not before its time, at once after", async () => {
    await s.exec.run("INSERT INTO leases (id) VALUES (?)", "job-1");
    const take = (owner: string, skewMs: number) =>
      s.exec.get<{ owner: string }>(TAKE, skewMs, owner, 60_000, "job-1").then((r) => r?.owner ?? null);
    expect(await take("a", 0)).toBe("a");
    expect(await take("b", 0)).toBeNull();
    expect(await take("b", 50_000)).toBeNull(); // the database clock 50 s on: still a's
    expect(await take("b", 61_000)).toBe("b"); // 61 s on: a's lease ran out
    expect(await take("a", 61_000)).toBeNull(); // and b's is fresh
  });

  test("the database clock is epoch ms, fixed within a statement and new for the next one", async () => {
    const within = await s.exec.get<{ a: number; b: number; sleep: string }>(
      `SELECT ${now("?1")} AS a, (SELECT pg_sleep(0.02))::text AS sleep, ${now("?1")} AS b`,
      0,
    );
    expect(within?.a).toBe(within?.b);
    expect(Math.abs((within?.a ?? 0) - Date.now())).toBeLessThan(24 * 3_600_000); // epoch ms, not seconds
    const steps = await s.uow.run(async () => {
      const first = await s.exec.get<{ t: number }>(`SELECT ${now("?1")} AS t`, 0);
      await s.exec.get("SELECT pg_sleep(0.02)::text AS slept");
      const second = await s.exec.get<{ t: number }>(`SELECT ${now("?1")} AS t`, 0);
      return [first?.t ?? 0, second?.t ?? 0];
    });
    expect(steps[1] - steps[0]).toBeGreaterThanOrEqual(20); // transaction-stable now() would give 0
    expect(Number.isInteger(steps[0])).toBe(true);
  });
});
