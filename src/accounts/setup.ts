import { AppError } from "../core/errors.ts";
import { sha256Hex } from "../core/crypto.ts";
import { newId, nowIso, randomBase62 } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import { type Account, setupSchema, type User } from "./schema.ts";
import type { AccountStore } from "./store.ts";
import { hashPassword } from "./users.ts";

/** Setup tokens are long enough that guessing one is hopeless (~238 bits). */
const TOKEN_CHARS = 40;

/**
 * First run in the browser (SPEC §10). While no account exists, `vsearch serve` asks for a setup
 * token at every start and prints a link that carries it; the dashboard's page behind the link
 * creates the first account and its admin in one transaction. Only the token's SHA-256 is stored;
 * every printed link stays valid until one is used, and none works once any account exists (the
 * first setup deletes them all). Afterwards the page and the route are gone (404).
 */
export class SetupService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: AccountStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the appliance still has no account (the only thing the public status route tells). */
  async required(): Promise<boolean> {
    return (await this.store.countAccounts()) === 0;
  }

  /** A new setup token while no account exists (serve prints its link), else null. */
  async issueToken(): Promise<string | null> {
    if (!(await this.required())) return null;
    const token = randomBase62(TOKEN_CHARS);
    await this.store.insertSetupToken(sha256Hex(token), nowIso(this.now()));
    return token;
  }

  /** Creates the first account and its admin with a valid token; the caller signs the admin in. */
  async complete(input: unknown): Promise<{ account: Account; user: User }> {
    const { token, account_name, email, password } = parseInput(setupSchema, input);
    await this.assertOpen();
    const hash = sha256Hex(token);
    // A lookup by the token's hash: its timing tells nothing about the token.
    if (!(await this.store.hasSetupToken(hash))) throw invalidToken();
    const password_hash = await hashPassword(password);
    return await this.uow.run(async () => {
      // Checked again inside the write transaction: two browsers racing with the same link get
      // one account, and the other a 404 (setup is done). The tokens are taken first: on
      // PostgreSQL (read committed) both would otherwise see no account yet; the second waits on
      // the first's delete and then finds no token, and an account. A refusal rolls the delete back.
      const tokens = await this.store.takeSetupTokens();
      await this.assertOpen();
      if (!tokens.includes(hash)) throw invalidToken();
      const created_at = nowIso(this.now());
      const account: Account = {
        id: newId("usr"),
        name: account_name,
        plan: "enterprise",
        credits_balance: null,
        created_at,
      };
      const user: User = {
        id: newId("mbr"),
        account_id: account.id,
        email,
        role: "admin",
        must_change_password: false,
        created_at,
      };
      await this.store.insertAccount(account);
      await this.store.insertUser({ ...user, password_hash });
      return { account, user };
    });
  }

  private async assertOpen(): Promise<void> {
    if (!(await this.required())) {
      await this.store.clearSetupTokens();
      throw new AppError("NOT_FOUND", "Setup is done: this appliance has an account; sign in instead");
    }
  }
}

const invalidToken = () =>
  new AppError(
    "FORBIDDEN",
    "The setup link is not valid; use the link `vsearch serve` printed (each start prints a new one)",
  );
