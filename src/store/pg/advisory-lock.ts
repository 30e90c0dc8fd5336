/**
 * Session advisory locks: one process at a time for work that must not run twice at once across
 * processes and machines (migrations now; the leader's duties of issue 26 later). The pattern
 * Immich uses: the lock lives as long as the session that took it, so it is taken on a
 * connection of its own and released (or lost with that connection) as a whole.
 *
 * The connection is a one-connection client of its own (as postgres.js's LISTEN connection is),
 * not `pool.reserve()`: a reserved connection whose server process dies hangs the next statement
 * sent to it and breaks the pool it is released into (postgres.js 3.4.9 under Bun: "null is not
 * an object (evaluating 'socket.write')"), and a lock holder must be able to find out that it
 * lost its session. No idle timeout or maximum lifetime: recycling the connection would drop the lock.
 *
 * Keys are (vsearch's namespace, purpose) pairs so they never meet another application's.
 */
import postgres from "postgres";
import { StoreError, toStoreError } from "../errors.ts";

/** "vsea" as a 32-bit integer: the first key of every vsearch advisory lock. */
export const LOCK_NAMESPACE = 0x76736561;

/** The second key, per purpose. Never renumber one that has shipped: nodes of two versions must agree. */
export const ADVISORY_LOCKS = {
  migrations: 1,
  leader: 2,
} as const;

export type AdvisoryLock = (typeof ADVISORY_LOCKS)[keyof typeof ADVISORY_LOCKS];

export interface HeldAdvisoryLock {
  /** The holding session's client (one connection): statements that must run under the lock. */
  readonly conn: postgres.Sql;
  /** The server process holding it (pg_stat_activity.pid). */
  readonly pid: number;
  /** False once the session was lost (its connection closed) or the lock released. */
  readonly held: boolean;
  /** Asks the server whether this session still holds the lock. */
  stillHeld(): Promise<boolean>;
  /** Unlocks and closes the session; safe to call twice, and after the session was lost. */
  release(): Promise<void>;
}

/**
 * Takes `lock` on a session of its own, opened with `pool`'s settings. `wait: true` blocks until it
 * is free; `wait: false` answers null at once when another session holds it.
 */
export async function acquireAdvisoryLock(
  pool: postgres.Sql,
  lock: AdvisoryLock,
  opts: { wait: boolean },
): Promise<HeldAdvisoryLock | null> {
  let lost = false;
  let released = false;
  const conn = postgres({
    ...(pool.options as unknown as postgres.Options<Record<string, postgres.PostgresType>>),
    max: 1,
    idle_timeout: null,
    max_lifetime: null,
    onclose: () => {
      lost = true;
    },
  } as unknown as postgres.Options<Record<string, postgres.PostgresType>>);
  const close = () => conn.end({ timeout: 1 }).catch(() => {});
  try {
    const [row] = opts.wait
      ? await conn<
          { pid: number }[]
        >`SELECT pg_backend_pid() AS pid, pg_advisory_lock(${LOCK_NAMESPACE}, ${lock})::text`
      : await conn<
          { pid: number; ok: boolean }[]
        >`SELECT pg_backend_pid() AS pid, pg_try_advisory_lock(${LOCK_NAMESPACE}, ${lock}) AS ok`;
    if (!opts.wait && !(row as { ok: boolean }).ok) {
      await close();
      return null;
    }
    const pid = row.pid;
    return {
      conn,
      pid,
      get held() {
        return !lost && !released;
      },
      async stillHeld() {
        if (lost || released) return false;
        try {
          const rows = await conn`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ${LOCK_NAMESPACE}
            AND objid = ${lock} AND pid = pg_backend_pid() AND granted`;
          return rows.length > 0 && !lost;
        } catch {
          return false;
        }
      },
      async release() {
        if (released) return;
        released = true;
        try {
          if (!lost) await conn`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${lock})`;
        } catch {
          // The session is gone, and its locks with it.
        } finally {
          await close();
        }
      },
    };
  } catch (err) {
    await close();
    throw toStoreError(err) ?? err;
  }
}

/**
 * Runs `fn` holding `lock` (waiting for it). `fn` gets the lock's session for statements that
 * must run under it, and `assertHeld` to call between steps: it throws once the session was lost
 * (the lock went with it, and another process may have taken it). Always unlocks.
 */
export async function withAdvisoryLock<T>(
  pool: postgres.Sql,
  lock: AdvisoryLock,
  fn: (conn: postgres.Sql, assertHeld: () => void) => Promise<T>,
): Promise<T> {
  const held = await acquireAdvisoryLock(pool, lock, { wait: true });
  if (!held) throw new Error("advisory lock not taken"); // cannot happen with wait: true
  const assertHeld = () => {
    if (!held.held) throw new StoreError("unavailable", "lost the database session holding the advisory lock");
  };
  try {
    return await fn(held.conn, assertHeld);
  } finally {
    await held.release();
  }
}
