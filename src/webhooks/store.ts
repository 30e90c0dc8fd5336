import { dialect, type Executor } from "../store/executor.ts";
import { nowIso } from "../core/ids.ts";
import { DATABASE_CLOCK, type DbClock, withDbNow } from "../store/sql.ts";

// Every statement written with `withDbNow` reads the database's clock and binds its skew as ?1.

/** Listed, not `*`: PostgreSQL's tables carry a `rowid` column rows must not take into answers. */
const WEBHOOK_COLUMNS = "id, account_id, url, events, secret_sealed, is_active, created_at, updated_at";
const DELIVERY_COLUMNS = `id, webhook_id, account_id, event_id, event, payload, status, attempts, manual_retry,
  next_attempt_at, lease_expires_at, response_status, response_excerpt, error, created_at, delivered_at`;
const DELIVERY_COLUMNS_OF_D = DELIVERY_COLUMNS.replace(/(\w+)/g, "d.$1");

const SUBSCRIBERS = dialect({
  sqlite: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = ? AND is_active = 1 AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?)`,
  pg: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = ? AND is_active = 1 AND jsonb_exists(events::jsonb, ?)`,
});

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
    private readonly db: Executor,
    private readonly clock: DbClock = DATABASE_CLOCK,
  ) {}

  async insert(w: WebhookRow): Promise<void> {
    await this.db.run(
      "INSERT INTO webhooks (id, account_id, url, events, secret_sealed, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      w.id,
      w.account_id,
      w.url,
      w.events,
      w.secret_sealed,
      w.is_active,
      w.created_at,
      w.updated_at,
    );
  }

  async get(accountId: string, id: string): Promise<WebhookRow | null> {
    return await this.db.get<WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = ? AND id = ?`,
      accountId,
      id,
    );
  }

  async getById(id: string): Promise<WebhookRow | null> {
    return await this.db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`, id);
  }

  async list(accountId: string): Promise<WebhookRow[]> {
    return await this.db.all<WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = ? ORDER BY rowid`,
      accountId,
    );
  }

  async countActive(accountId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(
      "SELECT count(*) AS n FROM webhooks WHERE account_id = ? AND is_active = 1",
      accountId,
    ))!.n;
  }

  async update(id: string, f: { url?: string; events?: string; is_active?: number }): Promise<void> {
    const entries = Object.entries(f).filter(([, v]) => v !== undefined);
    if (!entries.length) return;
    await this.db.run(
      `UPDATE webhooks SET ${entries.map(([k]) => `${k} = ?`).join(", ")}, updated_at = ? WHERE id = ?`,
      ...(entries.map(([, v]) => v) as never[]),
      nowIso(),
      id,
    );
  }

  async delete(id: string): Promise<void> {
    await this.db.run("DELETE FROM webhooks WHERE id = ?", id);
  }

  /** Active endpoints of an account subscribed to `type` (the fan-out targets of one event). */
  async subscribers(accountId: string, type: string): Promise<WebhookRow[]> {
    return await this.db.all<WebhookRow>(SUBSCRIBERS, accountId, type);
  }

  /** A delivery row, once per (endpoint, event); `next_attempt_at` null: due now (database clock). */
  async insertDelivery(
    d: Omit<DeliveryRow, "response_status" | "response_excerpt" | "error" | "delivered_at" | "manual_retry">,
  ): Promise<void> {
    await this.db.run(
      withDbNow(
        (
          now,
        ) => `INSERT INTO webhook_deliveries (id, webhook_id, account_id, event_id, event, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, coalesce(?10, ${now}), ?11) ON CONFLICT DO NOTHING`,
      ),
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

  async getDelivery(webhookId: string, id: string): Promise<DeliveryRow | null> {
    return await this.db.get<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND id = ?`,
      webhookId,
      id,
    );
  }

  async listDeliveries(webhookId: string, limit: number, offset: number): Promise<DeliveryRow[]> {
    return await this.db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      webhookId,
      limit,
      offset,
    );
  }

  async countDeliveries(webhookId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(
      "SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?",
      webhookId,
    ))!.n;
  }

  /**
   * Pending deliveries due now (database clock) whose endpoint is still active and that no
   * dispatcher is attempting, oldest due first, leaving out the endpoints in `skip` (those already
   * at their concurrency limit): one endpoint's backlog must not fill every batch and keep the
   * others waiting. Walks the partial index on `next_attempt_at` (a window function per endpoint
   * would sort every due row on every poll).
   */
  async due(limit: number, skip: readonly string[] = []): Promise<DeliveryRow[]> {
    return await this.db.all<DeliveryRow>(
      withDbNow(
        (
          now,
          backend,
        ) => `SELECT ${DELIVERY_COLUMNS_OF_D} FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ${now} AND w.is_active = 1
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ${now})
            AND d.webhook_id NOT IN (${backend === "postgres" ? "SELECT jsonb_array_elements_text(?2::jsonb)" : "SELECT value FROM json_each(?2)"})
          ORDER BY d.next_attempt_at LIMIT ?3`,
      ),
      this.clock.skewMs(),
      JSON.stringify(skip),
      limit,
    );
  }

  /** Pending deliveries of one event to the account's active endpoints, whatever their due time. */
  async pendingForEvent(accountId: string, eventId: string): Promise<DeliveryRow[]> {
    // Through the account's endpoints, so the lookup uses the (webhook_id, event_id) unique index.
    return await this.db.all<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS_OF_D} FROM webhooks w JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.event_id = ?
          WHERE w.account_id = ? AND w.is_active = 1 AND d.status = 'pending'`,
      eventId,
      accountId,
    );
  }

  /** Switches every endpoint of an account off (account deletion: nothing more may be sent). */
  async deactivateAll(accountId: string): Promise<void> {
    await this.db.run("UPDATE webhooks SET is_active = 0, updated_at = ? WHERE account_id = ?", nowIso(), accountId);
  }

  /**
   * Claims attempt number `expectedAttempts + 1` with a lease of `holdMs` (database clock): the
   * row must still be pending at that count, due (unless `anyDueTime`: account deletion attempts
   * at once), and attempted by no one else. The count is bumped and the due time pushed out
   * first, so a crash mid-attempt means a retry after the hold, never a loss or a second
   * attempt while the first is under way.
   */
  async beginAttempt(id: string, expectedAttempts: number, holdMs: number, anyDueTime = false): Promise<boolean> {
    return (
      (
        await this.db.run(
          withDbNow(
            (
              now,
            ) => `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ${now} + ?2, lease_expires_at = ${now} + ?2
            WHERE id = ?3 AND attempts = ?4 AND status = 'pending'
              AND (?5 = 1 OR next_attempt_at <= ${now})
              AND (lease_expires_at IS NULL OR lease_expires_at <= ${now})`,
          ),
          this.clock.skewMs(),
          holdMs,
          id,
          expectedAttempts,
          anyDueTime ? 1 : 0,
        )
      ).changes === 1
    );
  }

  /**
   * Records attempt `attemptNo`'s outcome and lets go of its lease; a retry is due `retryInMs`
   * from now on the database's clock. Ignored when a later attempt has begun (this one's lease
   * ran out and another dispatcher took over): a stale outcome never overwrites a newer one.
   */
  async recordOutcome(
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
  ): Promise<boolean> {
    return (
      (
        await this.db.run(
          withDbNow(
            (now) => `UPDATE webhook_deliveries SET status = ?2,
                  next_attempt_at = CASE WHEN CAST(?3 AS BIGINT) IS NULL THEN NULL ELSE ${now} + CAST(?3 AS BIGINT) END,
                  lease_expires_at = NULL, response_status = ?4, response_excerpt = ?5, error = ?6, delivered_at = ?7
            WHERE id = ?8 AND attempts = ?9`,
          ),
          this.clock.skewMs(),
          o.status,
          o.retryInMs,
          o.responseStatus,
          o.excerpt,
          o.error,
          o.deliveredAt,
          id,
          attemptNo,
        )
      ).changes === 1
    );
  }

  /** A failed delivery is due again now (database clock), for one attempt. */
  async requeueFailed(id: string): Promise<boolean> {
    return (
      (
        await this.db.run(
          withDbNow(
            (
              now,
            ) => `UPDATE webhook_deliveries SET status = 'pending', manual_retry = 1, next_attempt_at = ${now}, error = NULL
            WHERE id = ?2 AND status = 'failed'`,
          ),
          this.clock.skewMs(),
          id,
        )
      ).changes === 1
    );
  }
}
