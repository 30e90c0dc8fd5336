import type { Executor } from "../store/executor.ts";
import { newId, nowIso } from "../core/ids.ts";
import { DATABASE_CLOCK, type DbClock, withDbNow } from "../store/sql.ts";
import type { EventRecord, EventType } from "./schema.ts";

/** The fan-out claim (below); on PostgreSQL the pick skips rows another claimer has locked. */
const CLAIM_UNDISPATCHED = withDbNow(
  (now, backend) => `UPDATE events SET claimed_by = ?2, claim_expires_at = ${now} + ?3
          WHERE seq IN (SELECT seq FROM events
                         WHERE dispatched_at IS NULL AND (claim_expires_at IS NULL OR claim_expires_at <= ${now})
                         ORDER BY seq LIMIT ?4${backend === "postgres" ? " FOR UPDATE SKIP LOCKED" : ""})
            AND dispatched_at IS NULL AND (claim_expires_at IS NULL OR claim_expires_at <= ${now})
          RETURNING *`,
);

/**
 * The outbox. `record` must be called inside the transaction of the change that caused the
 * event, so the event exists if and only if the change committed.
 */
export class EventStore {
  constructor(
    private readonly db: Executor,
    private readonly clock: DbClock = DATABASE_CLOCK,
  ) {}

  async record(accountId: string, type: EventType, data: Record<string, unknown>, at = nowIso()): Promise<string> {
    const id = newId("evt");
    await this.db.run(
      "INSERT INTO events (id, account_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)",
      id,
      accountId,
      type,
      JSON.stringify(data),
      at,
    );
    return id;
  }

  async undispatched(limit: number): Promise<EventRecord[]> {
    return await this.db.all<EventRecord>(
      "SELECT * FROM events WHERE dispatched_at IS NULL ORDER BY seq LIMIT ?",
      limit,
    );
  }

  /**
   * The fan-out claim: up to `limit` undispatched events, oldest first, that no other dispatcher
   * holds, held by `owner` for `holdMs` on the database's clock (a dispatcher that dies lets go
   * when the hold runs out). Two dispatchers over one database never fan out the same event.
   * PostgreSQL: the inner SELECT takes `FOR UPDATE SKIP LOCKED`.
   */
  async claimUndispatched(owner: string, holdMs: number, limit: number): Promise<EventRecord[]> {
    return (await this.db.write<EventRecord>(CLAIM_UNDISPATCHED, this.clock.skewMs(), owner, holdMs, limit)).sort(
      (a, b) => a.seq - b.seq,
    );
  }

  /**
   * Marks an event fanned out. With `owner`, only while that dispatcher's claim holds (false: its
   * claim ran out and another dispatcher has it now); without, whoever holds it (account deletion
   * fans its own event out at once; the deliveries are unique per endpoint and event).
   */
  async markDispatched(seq: number, at = nowIso(), owner?: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          `UPDATE events SET dispatched_at = ?, claimed_by = NULL, claim_expires_at = NULL
            WHERE seq = ? AND dispatched_at IS NULL AND (CAST(? AS TEXT) IS NULL OR claimed_by = ?)`,
          at,
          seq,
          owner ?? null,
          owner ?? null,
        )
      ).changes === 1
    );
  }

  /** One event by id, dispatched or not. */
  async byId(id: string): Promise<EventRecord | null> {
    return await this.db.get<EventRecord>("SELECT * FROM events WHERE id = ?", id);
  }

  /** The outbox in order, optionally one account's or one type's (what was recorded; checks and tests). */
  async list(f: { accountId?: string; type?: EventType } = {}): Promise<EventRecord[]> {
    return await this.db.all<EventRecord>(
      "SELECT * FROM events WHERE (CAST(?1 AS TEXT) IS NULL OR account_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR type = ?2) ORDER BY seq",
      f.accountId ?? null,
      f.type ?? null,
    );
  }

  async deleteForAccount(accountId: string): Promise<void> {
    await this.db.run("DELETE FROM events WHERE account_id = ?", accountId);
  }
}
