import { isStoreError } from "../store/errors.ts";
import { AppError, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { AccountStore } from "./store.ts";
import { hashPassword } from "./users.ts";
import { accountInputSchema, PLANS, type Account, type Plan, type User, userInputSchema } from "./schema.ts";

export class AccountService {
  constructor(private readonly store: AccountStore) {}

  async createAccount(input: { name: unknown; plan?: unknown }): Promise<Account> {
    const { name, plan } = parseInput(accountInputSchema, input);
    const account: Account = { id: newId("usr"), name, plan, credits_balance: null, created_at: nowIso() };
    await this.store.insertAccount(account);
    return account;
  }

  async listAccounts(): Promise<Account[]> {
    return await this.store.listAccounts();
  }

  async getAccount(id: string): Promise<Account> {
    const a = await this.store.getAccount(id);
    if (!a) throw notFound("NOT_FOUND", `Account ${id}`);
    return a;
  }

  /**
   * The account an operator named (SPEC §10): its id (`usr_…`) or its name; with no name at all,
   * the only account when there is exactly one. Anything else is an error that says what to type.
   */
  async resolve(ref?: string | null): Promise<Account> {
    const r = ref?.trim();
    if (!r) {
      const all = await this.store.listAccounts();
      if (all.length === 1) return all[0];
      if (all.length === 0)
        throw new AppError(
          "NOT_FOUND",
          "There is no account yet: create one with `vsearch accounts create --name NAME` (or open the setup link `vsearch serve` prints)",
        );
      throw new AppError(
        "ACCOUNT_REQUIRED",
        `There are ${all.length} accounts; name one with --account (${all
          .slice(0, 5)
          .map((a) => `"${a.name}"`)
          .join(", ")}${all.length > 5 ? ", …" : ""}) or give its id`,
      );
    }
    const byId = await this.store.getAccount(r);
    if (byId) return byId;
    const named = await this.store.findAccountsByName(r);
    if (named.length === 1) return named[0];
    if (named.length > 1)
      throw new AppError(
        "ACCOUNT_AMBIGUOUS",
        `${named.length} accounts are named "${r}"; give the id instead (${named.map((a) => a.id).join(", ")})`,
      );
    throw new AppError("NOT_FOUND", `No account has the id or name "${r}" (\`vsearch accounts list\` lists them)`);
  }

  async setPlan(id: string, plan: string): Promise<Account> {
    await this.getAccount(id);
    if (!PLANS.includes(plan as Plan)) throw new AppError("INVALID_PLAN", `plan must be one of ${PLANS.join(", ")}`);
    await this.store.setPlan(id, plan as Plan);
    return await this.getAccount(id);
  }

  async createUser(input: {
    account_id: unknown;
    email: unknown;
    password: unknown;
    role?: unknown;
    must_change_password?: boolean;
  }): Promise<User> {
    const parsed = parseInput(userInputSchema, input);
    await this.getAccount(parsed.account_id);
    if (await this.store.findUserByEmail(parsed.email)) {
      throw new AppError("EMAIL_TAKEN", `A user with email ${parsed.email} already exists`);
    }
    const password_hash = await hashPassword(parsed.password);
    const user: User = {
      id: newId("mbr"),
      account_id: parsed.account_id,
      email: parsed.email,
      role: parsed.role,
      must_change_password: parsed.must_change_password,
      created_at: nowIso(),
    };
    // A parallel create of the same e-mail passed the check above too (the hash awaits): the
    // unique constraint decides, and its violation is the same 409, not a 500. Not called inside a
    // unit of work (a failed statement would abort a PostgreSQL transaction).
    try {
      await this.store.insertUser({ ...user, password_hash });
    } catch (e) {
      if (isStoreError(e, "unique"))
        throw new AppError("EMAIL_TAKEN", `A user with email ${parsed.email} already exists`);
      throw e;
    }
    return user;
  }

  async listUsers(accountId: string): Promise<User[]> {
    await this.getAccount(accountId);
    return await this.store.listUsers(accountId);
  }
}
