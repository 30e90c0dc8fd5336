import type { EventPublisher } from "../events/bus.ts";
import { AppError, notFound } from "../core/errors.ts";
import type { EventStore } from "../events/store.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { CreditStore, LedgerRow } from "./store.ts";

export interface CreditSettings {
  perMinute: number;
  perSearch: number;
  lowThreshold: number;
}

/**
 * Optional metering (SPEC §3). A null balance means unlimited — the self-hosted default — and
 * nothing is charged. Once credits are granted the account is metered: indexing costs per minute
 * of video, a search costs per request. Crossing the low threshold downward records `credits.low`
 * (also when a first grant makes an unlimited account metered below the threshold), reaching zero
 * `credits.exhausted`, both in the transaction that caused them. The balance never goes below
 * zero: a search that costs more than what is left is refused (402) before it runs, and a charge
 * that would overdraw (an indexing job finishing, two searches racing) takes what is left.
 */
export class CreditService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: CreditStore,
    private readonly events: EventStore,
    private readonly settings: CreditSettings,
    /** `outbox.written` when credits.low/exhausted is recorded, delivered once the charge (or what it is part of) commits. */
    private readonly bus: EventPublisher,
  ) {}

  async show(accountId: string): Promise<{
    user_id: string;
    balance: number | null;
    metered: boolean;
    low_threshold: number;
    ledger: LedgerRow[];
  }> {
    const balance = await this.store.balance(accountId);
    if (balance === undefined) throw notFound("NOT_FOUND", `Account ${accountId}`);
    return {
      user_id: accountId,
      balance,
      metered: balance !== null,
      low_threshold: this.settings.lowThreshold,
      ledger: await this.store.ledger(accountId, 20),
    };
  }

  async grant(accountId: string, amount: number): Promise<{ balance: number }> {
    if (!Number.isFinite(amount) || amount <= 0)
      throw new AppError("INVALID_AMOUNT", "amount must be a positive number");
    if ((await this.store.balance(accountId)) === undefined) throw notFound("NOT_FOUND", `Account ${accountId}`);
    const after = await this.uow.run(async () => {
      const moved = await this.store.apply(accountId, amount, () => "grant");
      if (!moved) throw notFound("NOT_FOUND", `Account ${accountId}`);
      const { after } = moved;
      const wasUnlimited = moved.unlimitedBefore;
      // From unlimited to below the threshold is a downward crossing too.
      if (wasUnlimited && after <= this.settings.lowThreshold) {
        await this.events.record(accountId, "credits.low", { balance: after, threshold: this.settings.lowThreshold });
        return { after, fired: true };
      }
      return { after, fired: false };
    });
    if (after.fired) this.bus.publish({ type: "outbox.written", accountId });
    return { balance: after.after };
  }

  /** Metering off: the balance becomes unlimited (null) again; the ledger is kept. */
  async setUnlimited(accountId: string): Promise<{ balance: null }> {
    if ((await this.store.balance(accountId)) === undefined) throw notFound("NOT_FOUND", `Account ${accountId}`);
    await this.store.setUnlimited(accountId);
    return { balance: null };
  }

  /** 402 when a metered account has nothing left (uploads: their cost is known only once indexed). */
  async assertCanSpend(accountId: string): Promise<void> {
    await this.assertBalance(accountId, 0);
  }

  /** 402 unless a metered account can pay a whole search: a balance of 0.05 cannot pay 0.1. */
  async assertCanSearch(accountId: string): Promise<void> {
    await this.assertBalance(accountId, this.settings.perSearch);
  }

  private async assertBalance(accountId: string, cost: number): Promise<void> {
    const b = await this.store.balance(accountId);
    if (b === null || b === undefined) return;
    if (b <= 0 || b < cost) {
      throw new AppError(
        "INSUFFICIENT_CREDITS",
        b <= 0
          ? "This account has no credits left; ask an operator to grant more (vsearch credits grant)"
          : `This account has ${b} credits; this costs ${cost}. Ask an operator to grant more (vsearch credits grant)`,
      );
    }
  }

  /**
   * Called inside the transaction that completes the job, so the charge commits with it. Its own
   * transaction becomes a savepoint there, and keeps charge + events atomic when called alone.
   */
  async chargeIndexing(accountId: string, durationSecs: number): Promise<void> {
    await this.uow.run(
      async () => await this.charge(accountId, (Math.max(durationSecs, 0) / 60) * this.settings.perMinute, "indexing"),
    );
  }

  async chargeSearch(accountId: string): Promise<void> {
    // An unlimited account (metering off, the default) pays nothing, which one read tells without
    // a write transaction around it: that transaction took the writer connection on every search
    // (other searches' reads meanwhile went to the reader and its cold cache) to change nothing. A
    // grant landing just after the read is as if the search had finished just before it.
    if (this.settings.perSearch <= 0 || (await this.store.balance(accountId)) === null) return;
    await this.uow.run(async () => await this.charge(accountId, this.settings.perSearch, "search"));
  }

  private async charge(accountId: string, cost: number, reason: string): Promise<void> {
    if (cost <= 0) return;
    // Never below zero: what cannot be paid is noted in the ledger's reason, not owed.
    const moved = await this.store.apply(accountId, -cost, (paid) => {
      const short = Math.round((cost - paid) * 1e6) / 1e6;
      return short > 0 ? `${reason} (${short} unpaid)` : reason;
    });
    if (!moved) return;
    const { before, after } = moved;
    const threshold = this.settings.lowThreshold;
    let fired = false;
    // Once per downward crossing (a grant back above the threshold re-arms it). Also when one
    // charge jumps straight to zero: a subscriber to `credits.low` alone must still hear of it.
    if (before > threshold && after <= threshold) {
      await this.events.record(accountId, "credits.low", { balance: after, threshold });
      fired = true;
    }
    if (before > 0 && after <= 0) {
      await this.events.record(accountId, "credits.exhausted", { balance: after });
      fired = true;
    }
    if (fired) this.bus.publish({ type: "outbox.written", accountId });
  }
}
