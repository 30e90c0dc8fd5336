import type { Database } from "bun:sqlite";
import { notFound } from "../core/errors.ts";
import type { EventStore } from "../events/store.ts";
import type { VideoService } from "../videos/service.ts";
import type { WebhookDispatcher } from "../webhooks/dispatcher.ts";
import type { AccountStore } from "./store.ts";

/**
 * `vsearch accounts delete`: announce, deliver, then purge. `account.deleted` goes through the
 * outbox like every event and gets one immediate attempt per subscribed endpoint (bounded by the
 * webhook timeout) — the endpoints are part of what is purged, so there is no retry schedule to
 * wait for. Then every video (files and vectors), and the account row, whose foreign keys
 * cascade to users, sessions, keys, collections, jobs, webhooks, deliveries, credits and search
 * feedback; finally the account's outbox rows.
 */
export class AccountDeletion {
  constructor(
    private readonly db: Database,
    private readonly accounts: AccountStore,
    private readonly events: EventStore,
    private readonly dispatcher: WebhookDispatcher,
    private readonly videos: VideoService,
  ) {}

  async delete(accountId: string): Promise<{ user_id: string; videos_deleted: number; deliveries: { webhook_id: string; status: string }[] }> {
    if (!this.accounts.getAccount(accountId)) throw notFound("NOT_FOUND", `Account ${accountId}`);
    const eventId = this.events.record(accountId, "account.deleted", { user_id: accountId });
    this.dispatcher.fanOut();
    const deliveries = await this.dispatcher.deliverEventNow(eventId);
    const videoIds = this.videos.allIds(accountId);
    await this.videos.purgeVideos(accountId, videoIds);
    this.db.transaction(() => {
      this.accounts.deleteAccount(accountId);
      this.events.deleteForAccount(accountId);
    })();
    return { user_id: accountId, videos_deleted: videoIds.length, deliveries };
  }
}
