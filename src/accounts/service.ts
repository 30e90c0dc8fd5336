import { AppError, notFound } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { AccountStore } from "./store.ts";
import { accountInputSchema, PLANS, type Account, type Plan, type User, userInputSchema } from "./schema.ts";

export class AccountService {
  constructor(private readonly store: AccountStore) {}

  createAccount(input: { name: unknown; plan?: unknown }): Account {
    const { name, plan } = parseInput(accountInputSchema, input);
    const account: Account = { id: newId("usr"), name, plan, credits_balance: null, created_at: nowIso() };
    this.store.insertAccount(account);
    return account;
  }

  listAccounts(): Account[] {
    return this.store.listAccounts();
  }

  getAccount(id: string): Account {
    const a = this.store.getAccount(id);
    if (!a) throw notFound("NOT_FOUND", `Account ${id}`);
    return a;
  }

  setPlan(id: string, plan: string): Account {
    this.getAccount(id);
    if (!PLANS.includes(plan as Plan)) throw new AppError("INVALID_PLAN", `plan must be one of ${PLANS.join(", ")}`);
    this.store.setPlan(id, plan as Plan);
    return this.getAccount(id);
  }

  async createUser(input: { account_id: unknown; email: unknown; password: unknown; role?: unknown }): Promise<User> {
    const parsed = parseInput(userInputSchema, input);
    this.getAccount(parsed.account_id);
    if (this.store.findUserByEmail(parsed.email)) {
      throw new AppError("EMAIL_TAKEN", `A user with email ${parsed.email} already exists`);
    }
    // argon2id: slow on purpose, so a stolen database does not give away passwords.
    const password_hash = await Bun.password.hash(parsed.password, { algorithm: "argon2id" });
    const user: User = {
      id: newId("mbr"),
      account_id: parsed.account_id,
      email: parsed.email,
      role: parsed.role,
      created_at: nowIso(),
    };
    this.store.insertUser({ ...user, password_hash });
    return user;
  }

  listUsers(accountId: string): User[] {
    this.getAccount(accountId);
    return this.store.listUsers(accountId);
  }
}
