import type { Executor } from "../store/executor.ts";
import { nowIso } from "../core/ids.ts";
import { StoreError } from "../store/errors.ts";

/** Tries of a balance change that found the balance moved by another writer (see apply). */
const BALANCE_TRIES = 100;

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

export interface LedgerRow {
  id: number;
  delta: number;
  reason: string;
  balance_after: number;
  created_at: string;
}

export class CreditStore {
  constructor(private readonly db: Executor) {}

  async balance(accountId: string): Promise<number | null | undefined> {
    const row = await this.db.get<{ b: number | null }>(
      "SELECT credits_balance AS b FROM accounts WHERE id = ?",
      accountId,
    );
    return row ? row.b : undefined;
  }

  /**
   * Moves a metered balance by `delta` and records it in the ledger; `delta` is clamped so the
   * balance never goes below zero (`paid`: what was taken). Null when the account is unlimited
   * (nothing is charged) or a charge finds nothing to take. Call inside a unit of work (balance
   * and ledger row land together).
   *
   * The write is one conditional statement: it sets the new balance only if the balance is still
   * the one it was computed from, and reads again when another charge or grant moved it meanwhile.
   * Under concurrent writers (PostgreSQL's READ COMMITTED) a read-then-write would lose one of two
   * simultaneous charges; this cannot. One statement with the old value in RETURNING would need
   * no retry, but SQLite's RETURNING sees only the new row.
   */
  async apply(
    accountId: string,
    delta: number,
    reason: (paid: number) => string,
  ): Promise<{ before: number; after: number; paid: number; unlimitedBefore: boolean } | null> {
    // Bounded: each retry means another writer changed this balance in between; a handful at most
    // in practice (every contender succeeds once), BALANCE_TRIES is far past that.
    for (let attempt = 0; attempt < BALANCE_TRIES; attempt++) {
      const before = await this.balance(accountId);
      if (before === undefined) return null; // the account is gone
      if (before === null && delta < 0) return null; // unlimited: nothing to charge
      const from = before ?? 0;
      const after = Math.max(round6(from + delta), 0);
      const paid = round6(from - after);
      if (delta < 0 && paid <= 0) return null;
      const { changes } =
        before === null
          ? await this.db.run(
              "UPDATE accounts SET credits_balance = ? WHERE id = ? AND credits_balance IS NULL",
              after,
              accountId,
            )
          : await this.db.run(
              "UPDATE accounts SET credits_balance = ? WHERE id = ? AND credits_balance = ?",
              after,
              accountId,
              before,
            );
      if (changes === 0) continue;
      await this.db.run(
        "INSERT INTO credit_ledger (account_id, delta, reason, balance_after, created_at) VALUES (?, ?, ?, ?, ?)",
        accountId,
        round6(after - from),
        reason(paid),
        after,
        nowIso(),
      );
      return { before: from, after, paid, unlimitedBefore: before === null };
    }
    throw new StoreError("busy", `the credit balance of ${accountId} kept changing under ${BALANCE_TRIES} tries`);
  }

  async setUnlimited(accountId: string): Promise<void> {
    await this.db.run("UPDATE accounts SET credits_balance = NULL WHERE id = ?", accountId);
  }

  async ledger(accountId: string, limit: number): Promise<LedgerRow[]> {
    return await this.db.all<LedgerRow>(
      "SELECT id, delta, reason, balance_after, created_at FROM credit_ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?",
      accountId,
      limit,
    );
  }
}
