import { notFound } from "../core/errors.ts";
import type { EventStore } from "../events/store.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { VideoService } from "../videos/service.ts";
import type { WebhookDispatcher } from "../webhooks/dispatcher.ts";
import type { WebhookStore } from "../webhooks/store.ts";
import type { AccountStore } from "./store.ts";

export interface AccountDeletionResult {
  user_id: string;
  videos_deleted: number;
  /** The outcome of the one immediate `account.deleted` attempt per endpoint. */
  deliveries: { webhook_id: string; status: string }[];
}

/**
 * `vsearch accounts delete`: close, announce, deliver, purge.
 *
 * 1. In one transaction: record `account.deleted` and remove the account's keys, users and
 *    sessions, so from the announcement on no request of the account is accepted.
 * 2. Fan the outbox out and make one immediate attempt per subscribed endpoint. The wait is
 *    bounded by the attempt timeout: the endpoints are purged next, so there is no retry schedule
 *    to wait for (a receiver that is down misses the event).
 * 3. Switch the account's endpoints off, so the `video.deleted` events the purge records (and any
 *    retry still pending) are never sent — not even by a server running beside this CLI.
 * 4. Purge every video through `VideoService.purgeVideos` (rows, vectors, files, search index),
 *    repeated while videos remain (an upload that was already past authentication), then delete
 *    the account row — its foreign keys cascade to collections, jobs, webhooks, deliveries, the
 *    credit ledger and search feedback — and the account's outbox rows.
 */
export class AccountDeletion {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountStore,
    private readonly events: EventStore,
    private readonly webhooks: WebhookStore,
    private readonly dispatcher: WebhookDispatcher,
    private readonly videos: VideoService,
  ) {}

  async delete(accountId: string): Promise<AccountDeletionResult> {
    if (!(await this.accounts.getAccount(accountId))) throw notFound("NOT_FOUND", `Account ${accountId}`);
    const eventId = await this.uow.run(async () => {
      await this.accounts.closeAccess(accountId);
      return await this.events.record(accountId, "account.deleted", { user_id: accountId });
    });
    await this.dispatcher.drainOutbox();
    const deliveries = await this.dispatcher.deliverEventNow(accountId, eventId);
    await this.webhooks.deactivateAll(accountId);

    let videosDeleted = 0;
    // Bounded passes: a video accepted during the purge is caught by the next one.
    for (let pass = 0; pass < 5; pass++) {
      const ids = await this.videos.allIds(accountId);
      if (!ids.length) break;
      await this.videos.purgeVideos(accountId, ids);
      videosDeleted += ids.length;
    }
    await this.uow.run(async () => {
      await this.accounts.deleteAccount(accountId);
      await this.events.deleteForAccount(accountId);
    });
    return { user_id: accountId, videos_deleted: videosDeleted, deliveries };
  }
}
