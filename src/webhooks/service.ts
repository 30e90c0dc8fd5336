import type { EventPublisher } from "../events/bus.ts";
import { PLAN_LIMITS } from "../accounts/schema.ts";
import type { AccountStore } from "../accounts/store.ts";
import { AppError, notFound, ValidationError } from "../core/errors.ts";
import { newId, nowIso, randomBase62 } from "../core/ids.ts";
import type { Page } from "../core/paging.ts";
import { offsetOf } from "../core/paging.ts";
import { parseInput } from "../core/validate.ts";
import type { EventStore } from "../events/store.ts";
import { checkTarget, type CidrAllowList, type Resolver } from "../net/address-rules.ts";
import { NetError } from "../net/errors.ts";
import type { SecretBox } from "./secret-box.ts";
import type { DeliveryRow, WebhookRow, WebhookStore } from "./store.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import { createWebhookInput, type Delivery, updateWebhookInput, type Webhook } from "./schema.ts";

export interface TargetRules {
  allowNetworks: CidrAllowList;
  resolve?: Resolver;
}

export class WebhookService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: WebhookStore,
    private readonly events: EventStore,
    private readonly accounts: AccountStore,
    private readonly box: SecretBox,
    private readonly rules: TargetRules,
    /** `outbox.written` after a ping or a redelivery is queued: the dispatcher sends it now. */
    private readonly bus: EventPublisher,
    private readonly now: () => number = Date.now,
  ) {}

  async create(accountId: string, input: unknown): Promise<Webhook & { secret: string }> {
    const { url, events } = parseInput(createWebhookInput, input);
    // The address check (DNS) stays outside the unit of work: a transaction awaits only the store.
    const normalized = await this.checkUrl(url);
    const secret = `whsec_${randomBase62(32)}`;
    const at = nowIso(this.now());
    const row: WebhookRow = {
      id: newId("wh"),
      account_id: accountId,
      url: normalized,
      events: JSON.stringify(events),
      secret_sealed: this.box.seal(secret),
      is_active: 1,
      created_at: at,
      updated_at: at,
    };
    await this.uow.run(async () => {
      await this.assertUnderLimit(accountId);
      await this.store.insert(row);
    });
    return { ...toWebhook(row), secret };
  }

  async list(accountId: string): Promise<Webhook[]> {
    return (await this.store.list(accountId)).map(toWebhook);
  }

  async require(accountId: string, id: string): Promise<WebhookRow> {
    const row = await this.store.get(accountId, id);
    if (!row) throw notFound("WEBHOOK_NOT_FOUND", `Webhook ${id}`);
    return row;
  }

  async get(accountId: string, id: string): Promise<Webhook> {
    return toWebhook(await this.require(accountId, id));
  }

  async update(accountId: string, id: string, input: unknown): Promise<Webhook> {
    const patch = parseInput(updateWebhookInput, input);
    await this.require(accountId, id);
    const url = patch.url !== undefined ? await this.checkUrl(patch.url) : undefined;
    // Re-read after the (awaited) address check, under the account's lock: the limit check and
    // the update cannot interleave with another request's.
    await this.uow.run(async () => {
      const row = await this.require(accountId, id);
      if (patch.is_active === true && row.is_active === 0) await this.assertUnderLimit(accountId);
      await this.store.update(id, {
        url,
        events: patch.events ? JSON.stringify(patch.events) : undefined,
        is_active: patch.is_active === undefined ? undefined : patch.is_active ? 1 : 0,
      });
    });
    return await this.get(accountId, id);
  }

  async delete(accountId: string, id: string): Promise<void> {
    await this.require(accountId, id);
    await this.store.delete(id); // deliveries cascade
  }

  /** `webhook.ping` through the outbox, like any event; it goes to this endpoint only. */
  async ping(accountId: string, id: string): Promise<{ event_id: string; webhook_id: string }> {
    const row = await this.require(accountId, id);
    if (!row.is_active) throw new AppError("WEBHOOK_INACTIVE", "The webhook is inactive; activate it before testing");
    const eventId = await this.events.record(accountId, "webhook.ping", { webhook_id: id }, nowIso(this.now()));
    this.bus.publish({ type: "outbox.written", accountId });
    return { event_id: eventId, webhook_id: id };
  }

  async deliveries(accountId: string, id: string, page: Page): Promise<{ items: Delivery[]; total: number }> {
    await this.require(accountId, id);
    return {
      items: (await this.store.listDeliveries(id, page.perPage, offsetOf(page))).map(toDelivery),
      total: await this.store.countDeliveries(id),
    };
  }

  /**
   * Manual redelivery: a `failed` delivery goes back to `pending`, due now, for one attempt (if
   * that fails too it is `failed` again; no new schedule). Pending or succeeded ones: 409. An
   * inactive endpoint: 409 as for the test ping, since nothing is sent to inactive endpoints.
   */
  async retry(accountId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
    const webhook = await this.require(accountId, webhookId);
    const d = await this.store.getDelivery(webhookId, deliveryId);
    if (!d) throw notFound("DELIVERY_NOT_FOUND", `Delivery ${deliveryId}`);
    if (!webhook.is_active)
      throw new AppError("WEBHOOK_INACTIVE", "The webhook is inactive; activate it before retrying");
    if (!(await this.store.requeueFailed(deliveryId))) {
      throw new AppError("DELIVERY_NOT_FAILED", `Only failed deliveries can be retried; this one is ${d.status}`);
    }
    this.bus.publish({ type: "outbox.written", accountId });
    return toDelivery((await this.store.getDelivery(webhookId, deliveryId))!);
  }

  /** Inside a unit of work: locks the account first (see AccountStore.lock), then counts. */
  private async assertUnderLimit(accountId: string): Promise<void> {
    await this.accounts.lock(accountId);
    const account = await this.accounts.getAccount(accountId);
    const limit = account ? PLAN_LIMITS[account.plan].webhooks : null;
    if (limit !== null && (await this.store.countActive(accountId)) >= limit) {
      throw new AppError("WEBHOOK_LIMIT_REACHED", `The ${account!.plan} plan allows ${limit} active webhook endpoints`);
    }
  }

  /** The registration-time half of the target rules (delivery checks again, see dispatcher). */
  private async checkUrl(url: string): Promise<string> {
    try {
      const t = await checkTarget(url, { allowNetworks: this.rules.allowNetworks, resolve: this.rules.resolve });
      return t.url.toString();
    } catch (e) {
      if (!(e instanceof NetError)) throw e;
      const why = e.code === "TARGET_FORBIDDEN" && e.details.reason ? ` (${e.details.reason})` : "";
      throw new ValidationError([
        {
          loc: ["body", "url"],
          msg: `The webhook target is not allowed: ${e.message}${why}${howToAllow(e)}`,
          type: "value_error",
          input: url,
          ctx: { code: e.code, reason: e.details.reason },
        },
      ]);
    }
  }
}

/**
 * For an address the rules refuse (a receiver on the LAN, say): the setting that opens its network,
 * since the default opens none (SPEC §7). Scheme and credential refusals have no such setting.
 */
function howToAllow(e: NetError): string {
  const address = e.code === "TARGET_FORBIDDEN" ? e.details.address : undefined;
  if (!address) return "";
  const example = address.includes(":") ? `${address}/128` : `${address.split(".").slice(0, 3).join(".")}.0/24`;
  return `. An operator can allow that network with the setting VSEARCH_WEBHOOK_ALLOW_NETWORKS (config.json "allow_networks"), e.g. VSEARCH_WEBHOOK_ALLOW_NETWORKS=${example}, then restart the server`;
}

export const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  user_id: r.account_id,
  url: r.url,
  events: JSON.parse(r.events),
  is_active: r.is_active === 1,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export const toDelivery = (d: DeliveryRow): Delivery => ({
  id: d.id,
  webhook_id: d.webhook_id,
  event_id: d.event_id,
  event: d.event,
  status: d.status,
  attempts: d.attempts,
  response_status: d.response_status,
  response_excerpt: d.response_excerpt,
  error: d.error,
  next_attempt_at: d.status === "pending" && d.next_attempt_at !== null ? nowIso(d.next_attempt_at) : null,
  created_at: d.created_at,
  delivered_at: d.delivered_at,
});
