import type { Database } from "bun:sqlite";
import type { Account, Plan, User } from "./schema.ts";

export interface UserWithHash extends User {
  password_hash: string;
}

type UserRow = Omit<User, "must_change_password"> & { must_change_password: number };
type UserRowWithHash = UserRow & { password_hash: string };

const USER_COLUMNS = "id, account_id, email, role, must_change_password, created_at";
const toUser = <R extends UserRow>(r: R | null): (Omit<R, "must_change_password"> & User) | null =>
  r ? { ...r, must_change_password: r.must_change_password === 1 } : null;

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

  countAccounts(): number {
    return this.db.query<{ n: number }, []>("SELECT count(*) AS n FROM accounts").get()!.n;
  }

  /** Accounts with this exact name (names are not unique across accounts), oldest first. */
  findAccountsByName(name: string): Account[] {
    return this.db
      .query<Account, [string]>(
        "SELECT id, name, plan, credits_balance, created_at FROM accounts WHERE name = ? ORDER BY rowid",
      )
      .all(name);
  }

  insertUser(u: UserWithHash): void {
    this.db
      .query(
        "INSERT INTO users (id, account_id, email, password_hash, role, must_change_password, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(u.id, u.account_id, u.email, u.password_hash, u.role, u.must_change_password ? 1 : 0, u.created_at);
  }

  findUserByEmail(email: string): UserWithHash | null {
    return toUser(
      this.db
        .query<UserRowWithHash, [string]>(`SELECT ${USER_COLUMNS}, password_hash FROM users WHERE email = ?`)
        .get(email),
    );
  }

  getUser(id: string): User | null {
    return toUser(this.db.query<UserRow, [string]>(`SELECT ${USER_COLUMNS} FROM users WHERE id = ?`).get(id));
  }

  getUserWithHash(id: string): UserWithHash | null {
    return toUser(
      this.db.query<UserRowWithHash, [string]>(`SELECT ${USER_COLUMNS}, password_hash FROM users WHERE id = ?`).get(id),
    );
  }

  listUsers(accountId: string): User[] {
    return this.db
      .query<UserRow, [string]>(`SELECT ${USER_COLUMNS} FROM users WHERE account_id = ? ORDER BY rowid`)
      .all(accountId)
      .map((r) => toUser(r)!);
  }

  countAdmins(accountId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM users WHERE account_id = ? AND role = 'admin'")
      .get(accountId)!.n;
  }

  setPassword(userId: string, passwordHash: string, mustChange: boolean): void {
    this.db
      .query("UPDATE users SET password_hash = ?, must_change_password = ? WHERE id = ?")
      .run(passwordHash, mustChange ? 1 : 0, userId);
  }

  setRole(userId: string, role: User["role"]): void {
    this.db.query("UPDATE users SET role = ? WHERE id = ?").run(role, userId);
  }

  /** Removes a user; their sessions go with them (foreign key), so they stop working at once. */
  deleteUser(userId: string): void {
    this.db.query("DELETE FROM users WHERE id = ?").run(userId);
  }

  /** Ends a user's open sessions (all, or all but `keep`): the next request with one is a 401. */
  endSessions(userId: string, at: string, keep: string | null = null): number {
    return this.db
      .query("UPDATE sessions SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL AND id IS NOT ?")
      .run(at, userId, keep).changes;
  }

  insertSetupToken(tokenHash: string, at: string): void {
    this.db.query("INSERT INTO setup_tokens (token_hash, created_at) VALUES (?, ?)").run(tokenHash, at);
  }

  hasSetupToken(tokenHash: string): boolean {
    return this.db.query("SELECT 1 FROM setup_tokens WHERE token_hash = ?").get(tokenHash) !== null;
  }

  /** Every setup link stops working (the first account exists). */
  clearSetupTokens(): void {
    this.db.query("DELETE FROM setup_tokens").run();
  }
}
