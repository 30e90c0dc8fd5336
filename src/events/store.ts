import type { Database } from "bun:sqlite";
import { newId, nowIso } from "../core/ids.ts";
import type { EventRecord, EventType } from "./schema.ts";

/**
 * The outbox. `record` must be called inside the transaction of the change that caused the
 * event, so the event exists if and only if the change committed.
 */
export class EventStore {
  constructor(private readonly db: Database) {}

  record(accountId: string, type: EventType, data: Record<string, unknown>, at = nowIso()): string {
    const id = newId("evt");
    this.db
      .query("INSERT INTO events (id, account_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, accountId, type, JSON.stringify(data), at);
    return id;
  }

  undispatched(limit: number): EventRecord[] {
    return this.db
      .query<EventRecord, [number]>("SELECT * FROM events WHERE dispatched_at IS NULL ORDER BY seq LIMIT ?")
      .all(limit);
  }

  markDispatched(seq: number, at = nowIso()): void {
    this.db.query("UPDATE events SET dispatched_at = ? WHERE seq = ?").run(at, seq);
  }

  /** The outbox in order, optionally one account's or one type's (what was recorded; checks and tests). */
  list(f: { accountId?: string; type?: EventType } = {}): EventRecord[] {
    return this.db
      .query<EventRecord, [string | null, string | null]>(
        "SELECT * FROM events WHERE (?1 IS NULL OR account_id = ?1) AND (?2 IS NULL OR type = ?2) ORDER BY seq",
      )
      .all(f.accountId ?? null, f.type ?? null);
  }

  deleteForAccount(accountId: string): void {
    this.db.query("DELETE FROM events WHERE account_id = ?").run(accountId);
  }
}
