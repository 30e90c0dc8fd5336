import type { Database } from "bun:sqlite";
import { nowIso } from "../core/ids.ts";

export interface LedgerRow {
  id: number;
  delta: number;
  reason: string;
  balance_after: number;
  created_at: string;
}

export class CreditStore {
  constructor(private readonly db: Database) {}

  balance(accountId: string): number | null | undefined {
    const row = this.db
      .query<{ b: number | null }, [string]>("SELECT credits_balance AS b FROM accounts WHERE id = ?")
      .get(accountId);
    return row ? row.b : undefined;
  }

  /** Applies a delta and records it; returns the balances before and after. Call inside a transaction. */
  apply(accountId: string, delta: number, reason: string): { before: number; after: number } {
    const before = this.balance(accountId) ?? 0;
    const after = Math.round((before + delta) * 1e6) / 1e6;
    this.db.query("UPDATE accounts SET credits_balance = ? WHERE id = ?").run(after, accountId);
    this.db
      .query("INSERT INTO credit_ledger (account_id, delta, reason, balance_after, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(accountId, delta, reason, after, nowIso());
    return { before, after };
  }

  setUnlimited(accountId: string): void {
    this.db.query("UPDATE accounts SET credits_balance = NULL WHERE id = ?").run(accountId);
  }

  ledger(accountId: string, limit: number): LedgerRow[] {
    return this.db
      .query<LedgerRow, [string, number]>(
        "SELECT id, delta, reason, balance_after, created_at FROM credit_ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?",
      )
      .all(accountId, limit);
  }
}
