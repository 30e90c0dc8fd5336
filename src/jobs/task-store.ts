import type { Executor } from "../store/executor.ts";
import { DATABASE_CLOCK, type DbClock, withDbNow } from "../store/sql.ts";

// Every statement written with `withDbNow` reads the database's clock and binds its skew as ?1.

/** The larger of two numbers: SQLite's scalar max(a, b) is GREATEST on PostgreSQL. */
const greatest = (backend: "sqlite" | "postgres") => (backend === "postgres" ? "GREATEST" : "max");

/** What the one lease queue runs (docs/ARCHITECTURE.md "The task queue"). */
export const TASK_KINDS = ["ingest", "ocr", "rendition"] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export interface TaskRow {
  id: number;
  kind: TaskKind;
  account_id: string;
  video_id: string;
  job_id: string | null;
  payload: string | null;
  state: "queued" | "running";
  attempts: number;
  lease_owner: string | null;
  lease_node: string | null;
  lease_expires_at: number | null;
  started_at: number | null;
  queued_at: number;
}

export interface NewTask {
  kind: TaskKind;
  accountId: string;
  videoId: string;
  jobId?: string | null;
  payload?: unknown;
}

export interface ClaimRequest {
  kinds: readonly TaskKind[];
  owner: string;
  node: string;
  leaseMs: number;
  /** Most tasks one account may have running at once, across every node; 0: no cap. */
  maxRunningPerAccount: number;
}

/**
 * All SQL of the task queue (migration 011). Every time is the database's clock (`dbNowMs`), so
 * processes on machines whose clocks disagree still agree on leases. Each statement has a direct
 * PostgreSQL form: the claim's pick adds `FOR UPDATE OF t SKIP LOCKED` there, and the guard on the
 * UPDATE (`state = 'queued' OR lease expired`) is what keeps a claim single when two claimers pick
 * the same row under READ COMMITTED (the second one's UPDATE re-reads the row and matches nothing).
 */
/**
 * The fair claim (TaskStore.claim). On PostgreSQL the pick skips rows another claimer has locked
 * and the kinds come as a jsonb array; the UPDATE's own guard keeps a claim single either way.
 */
const CLAIM = withDbNow(
  (now, backend) => `WITH clock AS (SELECT ${now} AS now),
         live AS (
           SELECT t.account_id, count(*) AS n, sum(clock.now - t.started_at) AS ran
             FROM tasks t CROSS JOIN clock
            WHERE t.state = 'running' AND t.lease_expires_at > clock.now
            GROUP BY t.account_id),
         pick AS (
           SELECT t.id FROM tasks t CROSS JOIN clock
             LEFT JOIN live ON live.account_id = t.account_id
             LEFT JOIN task_accounts a ON a.account_id = t.account_id
            WHERE t.kind IN (${backend === "postgres" ? "SELECT jsonb_array_elements_text(?2::jsonb)" : "SELECT value FROM json_each(?2)"})
              AND (t.state = 'queued' OR t.lease_expires_at <= clock.now)
              AND (?3 = 0 OR coalesce(live.n, 0) < ?3)
            ORDER BY coalesce(live.n, 0), coalesce(a.served_ms, 0) + coalesce(live.ran, 0), t.id
            LIMIT 1${backend === "postgres" ? " FOR UPDATE OF t SKIP LOCKED" : ""})
         UPDATE tasks SET state = 'running', lease_owner = ?4, lease_node = ?5, attempts = attempts + 1,
                started_at = (SELECT now FROM clock), lease_expires_at = (SELECT now FROM clock) + ?6
          WHERE id = (SELECT id FROM pick)
            AND (state = 'queued' OR lease_expires_at <= (SELECT now FROM clock))
          RETURNING *`,
);

/** How long a task `owner` holds has run (database clock), its row locked for the caller's unit of work. */
const RAN_OF_HELD = withDbNow((now, backend) => {
  const ran = `CASE WHEN ${now} > coalesce(started_at, 0) THEN ${now} - coalesce(started_at, 0) ELSE 0 END`;
  const lock = backend === "postgres" ? " FOR UPDATE" : "";
  return `SELECT account_id, ${ran} AS ran FROM tasks WHERE id = ?2 AND lease_owner = ?3 AND state = 'running'${lock}`;
});

export class TaskStore {
  constructor(
    private readonly db: Executor,
    private readonly clock: DbClock = DATABASE_CLOCK,
  ) {}

  /**
   * Queues a task, once: a second task of the same kind for the same job (or a second rendition
   * of one video) is not added. An account that had no task waiting or running (renditions aside:
   * they run when the box is idle and say nothing about competing for it) starts just ahead of
   * the least served account that has work, counting that account's finished tasks but not the
   * one it is running: the newcomer's tasks go next, until they have had as much service as that
   * running task will have had (fair share; see migration 011). Returns whether a row was added.
   * Call it inside the transaction that creates the work (the job, the video).
   */
  async enqueue(t: NewTask): Promise<boolean> {
    await this.db.run(
      `INSERT INTO task_accounts (account_id, served_ms)
         VALUES (?1, (SELECT coalesce(min(a.served_ms) - 1, 0) FROM task_accounts a
                       WHERE a.account_id IN (SELECT account_id FROM tasks WHERE kind <> 'rendition')
                         AND a.account_id <> ?1))
         ON CONFLICT (account_id) DO UPDATE SET served_ms = excluded.served_ms
          WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE account_id = ?1 AND kind <> 'rendition')`,
      t.accountId,
    );
    return (
      (
        await this.db.run(
          withDbNow(
            (now) => `INSERT INTO tasks (kind, account_id, video_id, job_id, payload, state, queued_at)
           VALUES (?2, ?3, ?4, ?5, ?6, 'queued', ${now}) ON CONFLICT DO NOTHING`,
          ),
          this.clock.skewMs(),
          t.kind,
          t.accountId,
          t.videoId,
          t.jobId ?? null,
          t.payload === undefined ? null : JSON.stringify(t.payload),
        )
      ).changes === 1
    );
  }

  /**
   * Claims one task of `kinds` with a lease, fairly across accounts: the account with the fewest
   * tasks running first (across every node), then the one served least (its finished tasks' time
   * since it last had no work, plus the time its running tasks have run so far), then the oldest
   * task of that account. A task whose lease ran out (its worker died) is claimable again, and
   * the claim counts as an attempt. One statement: SQLite runs it under its one writer lock.
   */
  async claim(r: ClaimRequest): Promise<TaskRow | null> {
    return (
      (
        await this.db.write<TaskRow>(
          CLAIM,
          this.clock.skewMs(),
          JSON.stringify(r.kinds),
          r.maxRunningPerAccount,
          r.owner,
          r.node,
          r.leaseMs,
        )
      )[0] ?? null
    );
  }

  /**
   * The heartbeat: renews every lease `owner` holds, in one statement, whatever its tasks are
   * doing. Returns the ids it still holds; a running task missing from them was deleted (its
   * video was) or taken over after its lease ran out, and must stop without writing.
   */
  async renew(owner: string, leaseMs: number): Promise<Set<number>> {
    return new Set(
      (
        await this.db.write<{ id: number }>(
          withDbNow(
            (now) =>
              `UPDATE tasks SET lease_expires_at = ${now} + ?2 WHERE lease_owner = ?3 AND state = 'running' RETURNING id`,
          ),
          this.clock.skewMs(),
          leaseMs,
          owner,
        )
      ).map((r) => r.id),
    );
  }

  /**
   * Ends a task `owner` still holds: the row goes, and its run time is added to its account's
   * share. False when it is not held any more (deleted, or taken over): the caller's transaction
   * must then write nothing.
   */
  async finish(id: number, owner: string): Promise<boolean> {
    const done =
      (
        await this.db.write<{ account_id: string; kind: TaskKind; ran: number }>(
          withDbNow(
            (now, backend) => `DELETE FROM tasks WHERE id = ?2 AND lease_owner = ?3 AND state = 'running'
         RETURNING account_id, kind, ${greatest(backend)}(${now} - started_at, 0) AS ran`,
          ),
          this.clock.skewMs(),
          id,
          owner,
        )
      )[0] ?? null;
    if (!done) return false;
    await this.charge(done.account_id, done.ran, done.kind === "ingest" ? done.ran : null);
    return true;
  }

  /**
   * Gives a task `owner` holds back to the queue: stopping, or out of disk space. `uncount`: the
   * claim was not a crash, so its attempt is taken back. The time it ran still counts as service.
   * Call inside a unit of work: the time it ran is read (the row locked) before the release clears
   * `started_at` — RETURNING sees the row after the update (it once charged the clock's epoch).
   */
  async release(id: number, owner: string, uncount: boolean): Promise<boolean> {
    const held = await this.db.get<{ account_id: string; ran: number }>(RAN_OF_HELD, this.clock.skewMs(), id, owner);
    if (!held) return false;
    const { changes } = await this.db.run(
      `UPDATE tasks SET state = 'queued', lease_owner = NULL, lease_node = NULL, lease_expires_at = NULL,
              started_at = NULL, attempts = CASE WHEN attempts > ?1 THEN attempts - ?1 ELSE 0 END
        WHERE id = ?2 AND lease_owner = ?3 AND state = 'running'`,
      uncount ? 1 : 0,
      id,
      owner,
    );
    if (changes === 0) return false;
    await this.charge(held.account_id, held.ran, null);
    return true;
  }

  /**
   * A node's start: the tasks its previous incarnation (same data dir, so same node id; the
   * instance lock says it is gone) held when it died are queued again at once instead of after
   * their leases. The claim they had still counts as an attempt.
   */
  async releaseNode(node: string): Promise<TaskRow[]> {
    return await this.db.write<TaskRow>(
      `UPDATE tasks SET state = 'queued', lease_owner = NULL, lease_node = NULL, lease_expires_at = NULL, started_at = NULL
          WHERE lease_node = ? AND state = 'running'
          RETURNING *`,
      node,
    );
  }

  /** Tasks of `kind` this account has waiting (the per-account cap on waiting work). */
  async waiting(accountId: string, kind: TaskKind): Promise<number> {
    return (await this.db.get<{ n: number }>(
      "SELECT count(*) AS n FROM tasks WHERE account_id = ? AND state = 'queued' AND kind = ?",
      accountId,
      kind,
    ))!.n;
  }

  /** A moving average of this account's ingest task lengths, ms (null before its first one ends). */
  async typicalMs(accountId: string): Promise<number | null> {
    return (
      (
        await this.db.get<{ typical_ms: number | null }>(
          "SELECT typical_ms FROM task_accounts WHERE account_id = ?",
          accountId,
        )
      )?.typical_ms ?? null
    );
  }

  /** Every task waiting or running, in queue order (operators' and tests' view). */
  async list(f: { videoId?: string; accountId?: string } = {}): Promise<TaskRow[]> {
    return await this.db.all<TaskRow>(
      "SELECT * FROM tasks WHERE (CAST(?1 AS TEXT) IS NULL OR video_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR account_id = ?2) ORDER BY id",
      f.videoId ?? null,
      f.accountId ?? null,
    );
  }

  async countsByState(): Promise<{ kind: TaskKind; state: string; n: number }[]> {
    return await this.db.all<{ kind: TaskKind; state: string; n: number }>(
      "SELECT kind, state, count(*) AS n FROM tasks GROUP BY kind, state ORDER BY kind, state",
    );
  }

  private async charge(accountId: string, ranMs: number, typicalMs: number | null): Promise<void> {
    await this.db.run(
      `INSERT INTO task_accounts (account_id, served_ms, typical_ms) VALUES (?1, ?2, ?3)
         ON CONFLICT (account_id) DO UPDATE SET served_ms = task_accounts.served_ms + excluded.served_ms,
           typical_ms = CASE WHEN excluded.typical_ms IS NULL THEN task_accounts.typical_ms
                             WHEN task_accounts.typical_ms IS NULL THEN excluded.typical_ms
                             ELSE (task_accounts.typical_ms * 3 + excluded.typical_ms) / 4 END`,
      accountId,
      Math.round(ranMs),
      typicalMs === null ? null : Math.round(typicalMs),
    );
  }
}
