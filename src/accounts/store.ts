import type { Database } from "bun:sqlite";
import type { Account, Plan, User } from "./schema.ts";

export interface UserWithHash extends User {
  password_hash: string;
}

export class AccountStore {
  constructor(private readonly db: Database) {}

  insertAccount(a: Account): void {
    this.db
      .query("INSERT INTO accounts (id, name, plan, credits_balance, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(a.id, a.name, a.plan, a.credits_balance, a.created_at);
  }

  getAccount(id: string): Account | null {
    return this.db
      .query<Account, [string]>("SELECT id, name, plan, credits_balance, created_at FROM accounts WHERE id = ?")
      .get(id);
  }

  listAccounts(): Account[] {
    return this.db
      .query<Account, []>("SELECT id, name, plan, credits_balance, created_at FROM accounts ORDER BY rowid")
      .all();
  }

  setPlan(id: string, plan: Plan): void {
    this.db.query("UPDATE accounts SET plan = ? WHERE id = ?").run(plan, id);
  }

  deleteAccount(id: string): void {
    this.db.query("DELETE FROM accounts WHERE id = ?").run(id);
  }

  /** Account deletion's first step: no key or sign-in (users cascade their sessions) works any more. */
  closeAccess(id: string): void {
    this.db.query("DELETE FROM api_keys WHERE account_id = ?").run(id);
    this.db.query("DELETE FROM sessions WHERE account_id = ?").run(id);
    this.db.query("DELETE FROM users WHERE account_id = ?").run(id);
  }

  insertUser(u: UserWithHash): void {
    this.db
      .query("INSERT INTO users (id, account_id, email, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(u.id, u.account_id, u.email, u.password_hash, u.role, u.created_at);
  }

  findUserByEmail(email: string): UserWithHash | null {
    return this.db
      .query<UserWithHash, [string]>(
        "SELECT id, account_id, email, password_hash, role, created_at FROM users WHERE email = ?",
      )
      .get(email);
  }

  getUser(id: string): User | null {
    return this.db
      .query<User, [string]>("SELECT id, account_id, email, role, created_at FROM users WHERE id = ?")
      .get(id);
  }

  listUsers(accountId: string): User[] {
    return this.db
      .query<User, [string]>(
        "SELECT id, account_id, email, role, created_at FROM users WHERE account_id = ? ORDER BY rowid",
      )
      .all(accountId);
  }
}
