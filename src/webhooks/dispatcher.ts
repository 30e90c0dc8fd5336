import { createHmac, randomBytes } from "node:crypto";
import { newId, nowIso } from "../core/ids.ts";
import type { Logger } from "../core/logger.ts";
import type { EventStore } from "../events/store.ts";
import type { CidrAllowList, Resolver } from "../net/address-rules.ts";
import { NetError } from "../net/errors.ts";
import { safeFetch } from "../net/safe-fetch.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { SecretBox } from "./secret-box.ts";
import type { EventRecord } from "../events/schema.ts";
import type { DeliveryRow, WebhookRow, WebhookStore } from "./store.ts";

export interface DispatcherOptions {
  retryDelaysSecs: number[];
  timeoutMs: number;
  allowNetworks: CidrAllowList;
  resolve?: Resolver;
  logger: Logger;
  version: string;
  pollMs?: number;
  perEndpoint?: number;
  maxInFlight?: number;
  /** For the timestamps written (created_at, delivered_at); due times and claims use the database's clock. */
  now?: () => number;
}

/** How long a fan-out claim on outbox events holds (a dispatcher that dies mid-fan-out lets go after this). */
const FAN_OUT_HOLD_MS = 30_000;

const EXCERPT_BYTES = 1024;

export const signBody = (secret: string, body: string) =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

/**
 * Delivers the outbox. Several dispatchers may run over one database (several `serve` processes,
 * a CLI beside a server); every decision is a claim on the database's clock, so each event is
 * delivered once:
 * - fan-out (event → one delivery row per subscribed active endpoint): a dispatcher claims a batch
 *   of outbox events for a while, then turns each into rows in the transaction that marks it
 *   dispatched (only while its claim holds); rows are unique per (endpoint, event) besides;
 * - an attempt: a lease on the delivery row (the attempt counted, the due time pushed out) before
 *   the request, released with the outcome, so no one else attempts it meanwhile and a crash
 *   mid-attempt means a retry after the hold, never a loss or a second delivery.
 * Attempts: at once, then after each configured delay (30 s, 60 s), then `failed`.
 */
export class WebhookDispatcher {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running = false;
  private readonly inFlight = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private readonly now: () => number;
  /** This dispatcher, as its fan-out claims name it. */
  private readonly owner = `dispatcher-${process.pid}-${randomBytes(4).toString("hex")}`;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: WebhookStore,
    private readonly events: EventStore,
    private readonly box: SecretBox,
    private readonly opts: DispatcherOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    this.running = true;
    this.wake();
  }

  wake(): void {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), 0);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.attempts]);
  }

  private async tick(): Promise<void> {
    this.timer = null;
    try {
      await this.fanOut();
      await this.attemptDue();
    } catch (e) {
      this.opts.logger.error("webhook dispatcher tick failed", {
        err: (e as Error).message,
        stack: (e as Error).stack,
      });
    }
    if (this.running) this.timer = setTimeout(() => void this.tick(), this.opts.pollMs ?? 250);
  }

  /** Claims undispatched events and turns them into delivery rows. Returns how many events it claimed. */
  async fanOut(limit = 200): Promise<number> {
    const claimed = await this.events.claimUndispatched(this.owner, FAN_OUT_HOLD_MS, limit);
    // One transaction per event on purpose: an event whose fan-out fails must not undo the others'.
    for (const ev of claimed) await this.uow.run(async () => await this.fanOutEvent(ev, this.owner));
    return claimed.length;
  }

  /**
   * One event's delivery rows, in the caller's transaction. With `owner`, only while that claim
   * holds (it may have run out and gone to another dispatcher); without, whoever holds the event.
   */
  private async fanOutEvent(ev: EventRecord, owner?: string): Promise<void> {
    if (!(await this.events.markDispatched(ev.seq, nowIso(this.now()), owner))) return;
    const data = JSON.parse(ev.payload) as Record<string, unknown>;
    // A test ping goes to the endpoint it was sent from, whatever that endpoint subscribed to.
    const targets: WebhookRow[] =
      ev.type === "webhook.ping"
        ? [await this.store.getById(String(data.webhook_id))].filter(
            (w): w is WebhookRow => !!w && w.is_active === 1 && w.account_id === ev.account_id,
          )
        : await this.store.subscribers(ev.account_id, ev.type);
    const body = JSON.stringify({ id: ev.id, event: ev.type, created_at: ev.created_at, data });
    // One row per endpoint of the account that subscribed (a plan allows at most 100): few, and each may conflict alone.
    for (const w of targets) {
      await this.store.insertDelivery({
        id: newId("del"),
        webhook_id: w.id,
        account_id: ev.account_id,
        event_id: ev.id,
        event: ev.type,
        payload: body,
        status: "pending",
        attempts: 0,
        next_attempt_at: null, // due now
        // The event's time: history lists deliveries newest event first, however fan-outs
        // interleave (several dispatchers, or a fan-out on demand beside the poller).
        created_at: ev.created_at,
      });
    }
  }

  /**
   * Fans out everything in the outbox now (bounded by `maxEvents`). A batch smaller than asked for
   * means every event committed before the call has been handled — how account deletion makes
   * sure its `account.deleted` has delivery rows before it attempts them.
   */
  async drainOutbox(maxEvents = 100_000): Promise<void> {
    const batch = 500;
    for (let done = 0; done < maxEvents; done += batch) if ((await this.fanOut(batch)) < batch) return;
  }

  private async attemptDue(): Promise<void> {
    const max = this.opts.maxInFlight ?? 8;
    const perEndpoint = this.opts.perEndpoint ?? 2;
    if (this.attempts.size >= max) return;
    // Endpoints already at their limit are left out of the query, so their backlog cannot crowd
    // the others out of the batch; rows in flight are not due (claiming pushed their due time out).
    const full = [...this.inFlight].filter(([, n]) => n >= perEndpoint).map(([id]) => id);
    // Pages of due deliveries, one after another (each page is attempted before the next is read).
    for (const d of await this.store.due(100, full)) {
      if (this.attempts.size >= max) break;
      if ((this.inFlight.get(d.webhook_id) ?? 0) >= perEndpoint) continue;
      // Not awaited: attempts run side by side, and close() waits for them (this.attempts). An
      // attempt that throws outside its own try (the store failing) is logged here, not left as an
      // unhandled rejection that would end the process.
      this.track(d).catch((e) =>
        this.opts.logger.error("webhook attempt failed unexpectedly", {
          delivery_id: d.id,
          err: (e as Error)?.message,
          stack: (e as Error)?.stack,
        }),
      );
    }
  }

  private track(d: DeliveryRow, anyDueTime = false): Promise<void> {
    this.inFlight.set(d.webhook_id, (this.inFlight.get(d.webhook_id) ?? 0) + 1);
    const p = this.attempt(d, anyDueTime).finally(() => {
      this.attempts.delete(p);
      const n = (this.inFlight.get(d.webhook_id) ?? 1) - 1;
      if (n <= 0) this.inFlight.delete(d.webhook_id);
      else this.inFlight.set(d.webhook_id, n);
      this.wake(); // a slot is free: take the next due delivery now rather than at the next poll
    });
    this.attempts.add(p);
    return p;
  }

  /**
   * One attempt for each pending delivery of an event, now, outside the concurrency limits and the
   * schedule (account deletion cannot wait; the wait is bounded by the attempt timeout). The event
   * is fanned out here first if it is not yet (even if another dispatcher holds its claim: the
   * rows are unique per endpoint). A delivery another dispatcher is attempting at this moment is
   * skipped here (its lease holds) and reported as still pending.
   */
  async deliverEventNow(accountId: string, eventId: string): Promise<{ webhook_id: string; status: string }[]> {
    const ev = await this.events.byId(eventId);
    if (ev && !ev.dispatched_at) await this.uow.run(async () => await this.fanOutEvent(ev));
    const rows = await this.store.pendingForEvent(accountId, eventId);
    await Promise.allSettled(rows.map((d) => this.track(d, true)));
    return await Promise.all(
      rows.map(async (d) => ({
        webhook_id: d.webhook_id,
        status: (await this.store.getDelivery(d.webhook_id, d.id))?.status ?? "unknown",
      })),
    );
  }

  private async attempt(d: DeliveryRow, anyDueTime: boolean): Promise<void> {
    const webhook = await this.store.getById(d.webhook_id);
    if (!webhook || webhook.is_active !== 1) return;
    const delays = this.opts.retryDelaysSecs;
    const attemptNo = d.attempts + 1;
    // Claim: no one else attempts it meanwhile; if this process dies during the request, the
    // delivery is due again after the hold.
    if (!(await this.store.beginAttempt(d.id, d.attempts, this.opts.timeoutMs + 5_000, anyDueTime))) return;
    const log = this.opts.logger.child({
      delivery_id: d.id,
      webhook_id: d.webhook_id,
      event: d.event,
      attempt: attemptNo,
    });
    let status: number | null = null;
    let excerpt: string | null = null;
    let error: string | null = null;
    try {
      const secret = this.box.open(webhook.secret_sealed);
      const res = await safeFetch(webhook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": `vsearch-webhooks/${this.opts.version}`,
          "x-service-event": d.event,
          "x-service-delivery": d.id,
          "x-service-signature": signBody(secret, d.payload),
        },
        body: d.payload,
        allowNetworks: this.opts.allowNetworks,
        resolve: this.opts.resolve,
        timeoutMs: this.opts.timeoutMs,
        maxResponseBytes: EXCERPT_BYTES,
        onOversize: "truncate",
      });
      status = res.status;
      excerpt = new TextDecoder().decode(res.body).slice(0, EXCERPT_BYTES);
      if (status < 200 || status >= 300)
        error = status >= 300 && status < 400 ? `redirect ${status} not followed` : `HTTP ${status}`;
    } catch (e) {
      error = e instanceof NetError ? `${e.code}: ${e.message}` : `delivery error: ${(e as Error).message}`;
    }
    const t = this.now();
    if (error === null) {
      await this.store.recordOutcome(d.id, attemptNo, {
        status: "succeeded",
        retryInMs: null,
        responseStatus: status,
        excerpt,
        error: null,
        deliveredAt: nowIso(t),
      });
      log.info("webhook delivered", { status });
      return;
    }
    const final = d.manual_retry === 1 || attemptNo > delays.length;
    await this.store.recordOutcome(d.id, attemptNo, {
      status: final ? "failed" : "pending",
      retryInMs: final ? null : delays[attemptNo - 1] * 1000,
      responseStatus: status,
      excerpt,
      error,
      deliveredAt: null,
    });
    log.warn(final ? "webhook delivery failed" : "webhook attempt failed; will retry", { status, error });
  }
}
