import { AppError, notFound } from "../core/errors.ts";
import { nowIso, randomBase62 } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { AccountStore } from "./store.ts";
import { inviteSchema, type Role, resetSchema, roleSchema, type User } from "./schema.ts";
import type { AccountService } from "./service.ts";

/** argon2id: slow on purpose, so a stolen database does not give away passwords. */
export const hashPassword = (password: string): Promise<string> =>
  Bun.password.hash(password, { algorithm: "argon2id" });

/** A one-time password an admin hands over (read aloud or pasted): 16 base62 characters, ~95 bits. */
const oneTimePassword = () => randomBase62(16);

/**
 * The people of an account (SPEC §10): invite (create with a one-time password), change a role,
 * reset a password without e-mail (a new one-time password), remove; a user changes their own
 * password through AuthService. The rules hold for every caller — the admin API (scoped to the
 * admin's account) and the operator's CLI (any account, `accountId` null):
 * - the last admin of an account can be neither removed nor made a member;
 * - a removed user's sessions and the sessions of a user whose password changed end at once.
 * A user is named by id (`mbr_…`) or e-mail; another account's user is a 404.
 */
export class UserService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: AccountStore,
    private readonly accounts: AccountService,
    private readonly now: () => number = Date.now,
  ) {}

  async list(accountId: string): Promise<User[]> {
    return await this.accounts.listUsers(accountId);
  }

  /** Finds a user by id or e-mail, within `accountId` unless null (the operator). */
  async find(accountId: string | null, ref: string): Promise<User> {
    const r = ref.trim();
    const user = r.includes("@") ? await this.store.findUserByEmail(r.toLowerCase()) : await this.store.getUser(r);
    if (!user || (accountId !== null && user.account_id !== accountId)) throw notFound("USER_NOT_FOUND", `User ${r}`);
    const { password_hash: _, ...plain } = user as User & { password_hash?: string };
    return plain;
  }

  /** Invite: a new user with a one-time password (the given one, or a generated one), shown once. */
  async invite(accountId: string, input: unknown): Promise<{ user: User; one_time_password: string }> {
    const { email, role, password } = parseInput(inviteSchema, input);
    const one_time_password = password ?? oneTimePassword();
    const user = await this.accounts.createUser({
      account_id: accountId,
      email,
      password: one_time_password,
      role,
      must_change_password: true,
    });
    return { user, one_time_password };
  }

  async setRole(accountId: string | null, ref: string, input: unknown): Promise<User> {
    const { role } = parseInput(roleSchema, input);
    return await this.uow.run(async () => {
      const user = await this.find(accountId, ref);
      if (user.role === "admin" && role !== "admin") await this.assertNotLastAdmin(user, "made a member");
      await this.store.setRole(user.id, role);
      return { ...user, role: role as Role };
    });
  }

  /** Removes a user; their sessions end with them. */
  async remove(accountId: string | null, ref: string): Promise<User> {
    return await this.uow.run(async () => {
      const user = await this.find(accountId, ref);
      if (user.role === "admin") await this.assertNotLastAdmin(user, "removed");
      await this.store.deleteUser(user.id);
      return user;
    });
  }

  /**
   * Reset without e-mail: a one-time password (given or generated) the user must change at next
   * sign-in; every session of theirs ends now. `permanent` (the operator's CLI only) sets an
   * ordinary password instead.
   */
  async resetPassword(
    accountId: string | null,
    ref: string,
    input: unknown,
    opts: { permanent?: boolean } = {},
  ): Promise<{ user: User; one_time_password: string | null; sessions_ended: number }> {
    const { password } = parseInput(resetSchema, input);
    const user = await this.find(accountId, ref);
    const chosen = password ?? oneTimePassword();
    const hash = await hashPassword(chosen);
    const mustChange = !opts.permanent;
    const sessions_ended = await this.uow.run(async () => {
      await this.find(accountId, user.id); // still there after the slow hash
      await this.store.setPassword(user.id, hash, mustChange);
      return await this.store.endSessions(user.id, nowIso(this.now()));
    });
    return {
      user: { ...user, must_change_password: mustChange },
      one_time_password: mustChange ? chosen : null,
      sessions_ended,
    };
  }

  /**
   * A user's own new password (AuthService validated it and checked the current one): the one-time flag clears and
   * every other session of theirs ends; `keepSession`, the one asking, stays signed in.
   */
  async setOwnPassword(userId: string, newPassword: string, keepSession: string | null): Promise<number> {
    const hash = await hashPassword(newPassword);
    return await this.uow.run(async () => {
      if (!(await this.store.getUser(userId))) throw notFound("USER_NOT_FOUND", `User ${userId}`);
      await this.store.setPassword(userId, hash, false);
      return await this.store.endSessions(userId, nowIso(this.now()), keepSession);
    });
  }

  private async assertNotLastAdmin(user: User, what: string): Promise<void> {
    if ((await this.store.countAdmins(user.account_id)) <= 1)
      throw new AppError(
        "LAST_ADMIN",
        `${user.email} is the account's last admin and cannot be ${what}; give another user the admin role first`,
      );
  }
}
