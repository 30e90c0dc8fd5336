import type { Database } from "bun:sqlite";
import { nowIso } from "../core/ids.ts";

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
  next_attempt_at: number | null;
  response_status: number | null;
  response_excerpt: string | null;
  error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export class WebhookStore {
  constructor(private readonly db: Database) {}

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

  insertDelivery(
    d: Omit<DeliveryRow, "response_status" | "response_excerpt" | "error" | "delivered_at" | "manual_retry">,
  ): void {
    this.db
      .query(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, account_id, event_id, event, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
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
   * Pending deliveries due now whose endpoint is still active, oldest due first, leaving out the
   * endpoints in `skip` (those already at their concurrency limit): one endpoint's backlog must not
   * fill every batch and keep the others waiting. Walks the partial index on `next_attempt_at`
   * (a window function per endpoint would sort every due row on every poll).
   */
  due(nowMs: number, limit: number, skip: readonly string[] = []): DeliveryRow[] {
    return this.db
      .query<DeliveryRow, [number, string, number]>(
        `SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND w.is_active = 1
            AND d.webhook_id NOT IN (SELECT value FROM json_each(?))
          ORDER BY d.next_attempt_at LIMIT ?`,
      )
      .all(nowMs, JSON.stringify(skip), limit);
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

  /** Claims an attempt: bumps `attempts` and pushes the due time out first, so a crash mid-attempt means a retry, never a loss. */
  beginAttempt(id: string, expectedAttempts: number, holdUntil: number): boolean {
    return (
      this.db
        .query(
          "UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ? AND attempts = ? AND status = 'pending'",
        )
        .run(holdUntil, id, expectedAttempts).changes === 1
    );
  }

  recordOutcome(
    id: string,
    o: {
      status: DeliveryRow["status"];
      nextAttemptAt: number | null;
      responseStatus: number | null;
      excerpt: string | null;
      error: string | null;
      deliveredAt: string | null;
    },
  ): void {
    this.db
      .query(
        `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, response_status = ?, response_excerpt = ?, error = ?, delivered_at = ?
          WHERE id = ?`,
      )
      .run(o.status, o.nextAttemptAt, o.responseStatus, o.excerpt, o.error, o.deliveredAt, id);
  }

  requeueFailed(id: string, nowMs: number): boolean {
    return (
      this.db
        .query(
          "UPDATE webhook_deliveries SET status = 'pending', manual_retry = 1, next_attempt_at = ?, error = NULL WHERE id = ? AND status = 'failed'",
        )
        .run(nowMs, id).changes === 1
    );
  }
}
