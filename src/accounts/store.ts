import type { Executor } from "../store/executor.ts";
import { lockAccount } from "../store/sql.ts";
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
  constructor(private readonly db: Executor) {}

  async insertAccount(a: Account): Promise<void> {
    await this.db.run(
      "INSERT INTO accounts (id, name, plan, credits_balance, created_at) VALUES (?, ?, ?, ?, ?)",
      a.id,
      a.name,
      a.plan,
      a.credits_balance,
      a.created_at,
    );
  }

  /**
   * Locks the account's row until the unit of work this runs in ends, and says whether it exists:
   * what a check-then-write on the account's data (a plan limit counted before an insert, a
   * threshold read before it moves) takes first, so two such writers of one account run one
   * after the other. Convention: the account row is the first lock a unit of work takes. On
   * SQLite the unit of work already holds the database's write lock (BEGIN IMMEDIATE), so the
   * read is all it takes there. Outside a unit of work it locks nothing.
   */
  async lock(id: string): Promise<boolean> {
    return await lockAccount(this.db, id);
  }

  async getAccount(id: string): Promise<Account | null> {
    return await this.db.get<Account>(
      "SELECT id, name, plan, credits_balance, created_at FROM accounts WHERE id = ?",
      id,
    );
  }

  async listAccounts(): Promise<Account[]> {
    return await this.db.all<Account>(
      "SELECT id, name, plan, credits_balance, created_at FROM accounts ORDER BY rowid",
    );
  }

  async setPlan(id: string, plan: Plan): Promise<void> {
    await this.db.run("UPDATE accounts SET plan = ? WHERE id = ?", plan, id);
  }

  async deleteAccount(id: string): Promise<void> {
    await this.db.run("DELETE FROM accounts WHERE id = ?", id);
  }

  /** Account deletion's first step: no key or sign-in (users cascade their sessions) works any more. */
  async closeAccess(id: string): Promise<void> {
    await this.db.run("DELETE FROM api_keys WHERE account_id = ?", id);
    await this.db.run("DELETE FROM sessions WHERE account_id = ?", id);
    await this.db.run("DELETE FROM users WHERE account_id = ?", id);
  }

  async countAccounts(): Promise<number> {
    return (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM accounts"))!.n;
  }

  /** Accounts with this exact name (names are not unique across accounts), oldest first. */
  async findAccountsByName(name: string): Promise<Account[]> {
    return await this.db.all<Account>(
      "SELECT id, name, plan, credits_balance, created_at FROM accounts WHERE name = ? ORDER BY rowid",
      name,
    );
  }

  async insertUser(u: UserWithHash): Promise<void> {
    await this.db.run(
      "INSERT INTO users (id, account_id, email, password_hash, role, must_change_password, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      u.id,
      u.account_id,
      u.email,
      u.password_hash,
      u.role,
      u.must_change_password ? 1 : 0,
      u.created_at,
    );
  }

  async findUserByEmail(email: string): Promise<UserWithHash | null> {
    return toUser(
      await this.db.get<UserRowWithHash>(`SELECT ${USER_COLUMNS}, password_hash FROM users WHERE email = ?`, email),
    );
  }

  async getUser(id: string): Promise<User | null> {
    return toUser(await this.db.get<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = ?`, id));
  }

  async getUserWithHash(id: string): Promise<UserWithHash | null> {
    return toUser(
      await this.db.get<UserRowWithHash>(`SELECT ${USER_COLUMNS}, password_hash FROM users WHERE id = ?`, id),
    );
  }

  async listUsers(accountId: string): Promise<User[]> {
    return (
      await this.db.all<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE account_id = ? ORDER BY rowid`, accountId)
    ).map((r) => toUser(r)!);
  }

  async countAdmins(accountId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(
      "SELECT count(*) AS n FROM users WHERE account_id = ? AND role = 'admin'",
      accountId,
    ))!.n;
  }

  async setPassword(userId: string, passwordHash: string, mustChange: boolean): Promise<void> {
    await this.db.run(
      "UPDATE users SET password_hash = ?, must_change_password = ? WHERE id = ?",
      passwordHash,
      mustChange ? 1 : 0,
      userId,
    );
  }

  async setRole(userId: string, role: User["role"]): Promise<void> {
    await this.db.run("UPDATE users SET role = ? WHERE id = ?", role, userId);
  }

  /** Removes a user; their sessions go with them (foreign key), so they stop working at once. */
  async deleteUser(userId: string): Promise<void> {
    await this.db.run("DELETE FROM users WHERE id = ?", userId);
  }

  /** Ends a user's open sessions (all, or all but `keep`): the next request with one is a 401. */
  async endSessions(userId: string, at: string, keep: string | null = null): Promise<number> {
    return (
      await this.db.run(
        "UPDATE sessions SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL AND id IS DISTINCT FROM CAST(? AS TEXT)",
        at,
        userId,
        keep,
      )
    ).changes;
  }

  async insertSetupToken(tokenHash: string, at: string): Promise<void> {
    await this.db.run("INSERT INTO setup_tokens (token_hash, created_at) VALUES (?, ?)", tokenHash, at);
  }

  async hasSetupToken(tokenHash: string): Promise<boolean> {
    return (await this.db.get("SELECT 1 FROM setup_tokens WHERE token_hash = ?", tokenHash)) !== null;
  }

  /**
   * Deletes every setup token and says which there were: inside a unit of work this takes them
   * (PostgreSQL row locks: a second setup racing with the first waits here, then finds none).
   */
  async takeSetupTokens(): Promise<string[]> {
    return (await this.db.all<{ token_hash: string }>("DELETE FROM setup_tokens RETURNING token_hash")).map(
      (r) => r.token_hash,
    );
  }

  /** Every setup link stops working (the first account exists). */
  async clearSetupTokens(): Promise<void> {
    await this.db.run("DELETE FROM setup_tokens");
  }
}
