import type { Database } from "bun:sqlite";
import { nowIso } from "../core/ids.ts";
import { DATABASE_CLOCK, type DbClock, dbNowMs } from "../store/sql.ts";

/** The database's clock; every statement that uses it binds the clock's skew as its first parameter. */
const NOW = dbNowMs("?1");

export interface WebhookRow {
  id: string;
  account_id: string;
  url: string;
  events: string;
  secret_sealed: string;
  is_active: number;
  created_at: string;
  updated_at: string;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: string;
  event: string;
  payload: string;
  status: "pending" | "succeeded" | "failed";
  attempts: number;
  manual_retry: number;
  /** Epoch ms on the database's clock; NULL once final. */
  next_attempt_at: number | null;
  /** Set while an attempt is under way (database clock): no other dispatcher attempts it. */
  lease_expires_at?: number | null;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export class WebhookStore {
  constructor(
    private readonly db: Database,
    private readonly clock: DbClock = DATABASE_CLOCK,
  ) {}

  insert(w: WebhookRow): void {
    this.db
      .query(
        "INSERT INTO webhooks (id, account_id, url, events, secret_sealed, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(w.id, w.account_id, w.url, w.events, w.secret_sealed, w.is_active, w.created_at, w.updated_at);
  }

  get(accountId: string, id: string): WebhookRow | null {
    return this.db
      .query<WebhookRow, [string, string]>("SELECT * FROM webhooks WHERE account_id = ? AND id = ?")
      .get(accountId, id);
  }

  getById(id: string): WebhookRow | null {
    return this.db.query<WebhookRow, [string]>("SELECT * FROM webhooks WHERE id = ?").get(id);
  }

  list(accountId: string): WebhookRow[] {
    return this.db
      .query<WebhookRow, [string]>("SELECT * FROM webhooks WHERE account_id = ? ORDER BY rowid")
      .all(accountId);
  }

  countActive(accountId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM webhooks WHERE account_id = ? AND is_active = 1")
      .get(accountId)!.n;
  }

  update(id: string, f: { url?: string; events?: string; is_active?: number }): void {
    const entries = Object.entries(f).filter(([, v]) => v !== undefined);
    if (!entries.length) return;
    this.db
      .query(`UPDATE webhooks SET ${entries.map(([k]) => `${k} = ?`).join(", ")}, updated_at = ? WHERE id = ?`)
      .run(...(entries.map(([, v]) => v) as never[]), nowIso(), id);
  }

  delete(id: string): void {
    this.db.query("DELETE FROM webhooks WHERE id = ?").run(id);
  }

  /** Active endpoints of an account subscribed to `type` (the fan-out targets of one event). */
  subscribers(accountId: string, type: string): WebhookRow[] {
    return this.db
      .query<WebhookRow, [string, string]>(
        "SELECT * FROM webhooks WHERE account_id = ? AND is_active = 1 AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?)",
      )
      .all(accountId, type);
  }

  /** A delivery row, once per (endpoint, event); `next_attempt_at` null: due now (database clock). */
  insertDelivery(
    d: Omit<DeliveryRow, "response_status" | "response_excerpt" | "error" | "delivered_at" | "manual_retry">,
  ): void {
    this.db
      .query(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, account_id, event_id, event, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, coalesce(?10, ${NOW}), ?11)`,
      )
      .run(
        this.clock.skewMs(),
        d.id,
        d.webhook_id,
        d.account_id,
        d.event_id,
        d.event,
        d.payload,
        d.status,
        d.attempts,
        d.next_attempt_at,
        d.created_at,
      );
  }

  getDelivery(webhookId: string, id: string): DeliveryRow | null {
    return this.db
      .query<DeliveryRow, [string, string]>("SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id = ?")
      .get(webhookId, id);
  }

  listDeliveries(webhookId: string, limit: number, offset: number): DeliveryRow[] {
    return this.db
      .query<DeliveryRow, [string, number, number]>(
        "SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
      )
      .all(webhookId, limit, offset);
  }

  countDeliveries(webhookId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?")
      .get(webhookId)!.n;
  }

  /**
   * Pending deliveries due now (database clock) whose endpoint is still active and that no
   * dispatcher is attempting, oldest due first, leaving out the endpoints in `skip` (those already
   * at their concurrency limit): one endpoint's backlog must not fill every batch and keep the
   * others waiting. Walks the partial index on `next_attempt_at` (a window function per endpoint
   * would sort every due row on every poll).
   */
  due(limit: number, skip: readonly string[] = []): DeliveryRow[] {
    return this.db
      .query<DeliveryRow, [number, string, number]>(
        `SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ${NOW} AND w.is_active = 1
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ${NOW})
            AND d.webhook_id NOT IN (SELECT value FROM json_each(?2))
          ORDER BY d.next_attempt_at LIMIT ?3`,
      )
      .all(this.clock.skewMs(), JSON.stringify(skip), limit);
  }

  /** Pending deliveries of one event to the account's active endpoints, whatever their due time. */
  pendingForEvent(accountId: string, eventId: string): DeliveryRow[] {
    // Through the account's endpoints, so the lookup uses the (webhook_id, event_id) unique index.
    return this.db
      .query<DeliveryRow, [string, string]>(
        `SELECT d.* FROM webhooks w JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.event_id = ?
          WHERE w.account_id = ? AND w.is_active = 1 AND d.status = 'pending'`,
      )
      .all(eventId, accountId);
  }

  /** Switches every endpoint of an account off (account deletion: nothing more may be sent). */
  deactivateAll(accountId: string): void {
    this.db.query("UPDATE webhooks SET is_active = 0, updated_at = ? WHERE account_id = ?").run(nowIso(), accountId);
  }

  /**
   * Claims attempt number `expectedAttempts + 1` with a lease of `holdMs` (database clock): the
   * row must still be pending at that count, due (unless `anyDueTime`: account deletion attempts
   * at once), and attempted by no one else. The count is bumped and the due time pushed out
   * first, so a crash mid-attempt means a retry after the hold, never a loss or a second
   * attempt while the first is under way.
   */
  beginAttempt(id: string, expectedAttempts: number, holdMs: number, anyDueTime = false): boolean {
    return (
      this.db
        .query(
          `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ${NOW} + ?2, lease_expires_at = ${NOW} + ?2
            WHERE id = ?3 AND attempts = ?4 AND status = 'pending'
              AND (?5 = 1 OR next_attempt_at <= ${NOW})
              AND (lease_expires_at IS NULL OR lease_expires_at <= ${NOW})`,
        )
        .run(this.clock.skewMs(), holdMs, id, expectedAttempts, anyDueTime ? 1 : 0).changes === 1
    );
  }

  /**
   * Records attempt `attemptNo`'s outcome and lets go of its lease; a retry is due `retryInMs`
   * from now on the database's clock. Ignored when a later attempt has begun (this one's lease
   * ran out and another dispatcher took over): a stale outcome never overwrites a newer one.
   */
  recordOutcome(
    id: string,
    attemptNo: number,
    o: {
      status: DeliveryRow["status"];
      retryInMs: number | null;
      responseStatus: number | null;
      excerpt: string | null;
      error: string | null;
      deliveredAt: string | null;
    },
  ): boolean {
    return (
      this.db
        .query(
          `UPDATE webhook_deliveries SET status = ?2, next_attempt_at = CASE WHEN ?3 IS NULL THEN NULL ELSE ${NOW} + ?3 END,
                  lease_expires_at = NULL, response_status = ?4, response_excerpt = ?5, error = ?6, delivered_at = ?7
            WHERE id = ?8 AND attempts = ?9`,
        )
        .run(
          this.clock.skewMs(),
          o.status,
          o.retryInMs,
          o.responseStatus,
          o.excerpt,
          o.error,
          o.deliveredAt,
          id,
          attemptNo,
        ).changes === 1
    );
  }

  /** A failed delivery is due again now (database clock), for one attempt. */
  requeueFailed(id: string): boolean {
    return (
      this.db
        .query(
          `UPDATE webhook_deliveries SET status = 'pending', manual_retry = 1, next_attempt_at = ${NOW}, error = NULL
            WHERE id = ?2 AND status = 'failed'`,
        )
        .run(this.clock.skewMs(), id).changes === 1
    );
  }
}
