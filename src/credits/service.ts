import type { Database } from "bun:sqlite";
import { AppError, notFound } from "../core/errors.ts";
import type { EventStore } from "../events/store.ts";
import type { CreditStore, LedgerRow } from "./store.ts";

export interface CreditSettings {
  perMinute: number;
  perSearch: number;
  lowThreshold: number;
}

/**
 * Optional metering (SPEC §3). A null balance means unlimited — the self-hosted default — and
 * nothing is charged. Once credits are granted the account is metered: indexing costs per minute
 * of video, a search costs per request. Crossing the low threshold downward records `credits.low`,
 * reaching zero `credits.exhausted`, both in the transaction of the charge that caused them.
 */
export class CreditService {
  constructor(
    private readonly db: Database,
    private readonly store: CreditStore,
    private readonly events: EventStore,
    private readonly settings: CreditSettings,
    private readonly onEvent: () => void = () => {},
  ) {}

  show(accountId: string): { user_id: string; balance: number | null; metered: boolean; low_threshold: number; ledger: LedgerRow[] } {
    const balance = this.store.balance(accountId);
    if (balance === undefined) throw notFound("NOT_FOUND", `Account ${accountId}`);
    return { user_id: accountId, balance, metered: balance !== null, low_threshold: this.settings.lowThreshold, ledger: this.store.ledger(accountId, 20) };
  }

  grant(accountId: string, amount: number): { balance: number } {
    if (!Number.isFinite(amount) || amount <= 0) throw new AppError(400, "INVALID_AMOUNT", "amount must be a positive number");
    if (this.store.balance(accountId) === undefined) throw notFound("NOT_FOUND", `Account ${accountId}`);
    const { after } = this.db.transaction(() => this.store.apply(accountId, amount, "grant"))();
    return { balance: after };
  }

  /** 402 when a metered account has nothing left. */
  assertCanSpend(accountId: string): void {
    const b = this.store.balance(accountId);
    if (b !== null && b !== undefined && b <= 0) {
      throw new AppError(402, "INSUFFICIENT_CREDITS", "This account has no credits left; ask an operator to grant more (vsearch credits grant)");
    }
  }

  /**
   * Called inside the transaction that completes the job, so the charge commits with it. Its own
   * transaction becomes a savepoint there, and keeps charge + events atomic when called alone.
   */
  chargeIndexing(accountId: string, durationSecs: number): void {
    this.db.transaction(() => this.charge(accountId, (Math.max(durationSecs, 0) / 60) * this.settings.perMinute, "indexing"))();
  }

  chargeSearch(accountId: string): void {
    this.db.transaction(() => this.charge(accountId, this.settings.perSearch, "search"))();
  }

  private charge(accountId: string, cost: number, reason: string): void {
    if (cost <= 0 || (this.store.balance(accountId) ?? null) === null) return;
    const { before, after } = this.store.apply(accountId, -cost, reason);
    const threshold = this.settings.lowThreshold;
    let fired = false;
    // Once per downward crossing (a grant back above the threshold re-arms it). Also when one
    // charge jumps straight to zero: a subscriber to `credits.low` alone must still hear of it.
    if (before > threshold && after <= threshold) {
      this.events.record(accountId, "credits.low", { balance: after, threshold });
      fired = true;
    }
    if (before > 0 && after <= 0) {
      this.events.record(accountId, "credits.exhausted", { balance: after });
      fired = true;
    }
    if (fired) this.onEvent();
  }
}
