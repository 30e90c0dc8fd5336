import { AppError } from "../core/errors.ts";
import { constantTimeEqual, sha256Hex } from "../core/crypto.ts";
import { newId, nowIso, randomBase62 } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { AccountStore } from "../accounts/store.ts";
import type { User } from "../accounts/schema.ts";
import { changePasswordSchema } from "../accounts/schema.ts";
import type { UserService } from "../accounts/users.ts";
import type { ApiKeyService } from "../api-keys/service.ts";
import { API_KEY_PREFIX } from "../api-keys/schema.ts";
import type { SessionStore } from "./store.ts";
import { type Principal, SESSION_TOKEN_PREFIX, signInSchema } from "./schema.ts";

export interface SignedIn {
  token: string;
  expires_at: string;
  must_change_password: boolean;
}

const unauthorized = (
  message = "Missing or malformed Authorization header; send `Bearer <API key or session token>`",
) => new AppError("UNAUTHORIZED", message, { "WWW-Authenticate": "Bearer" });

// A fixed argon2id hash to verify against when the e-mail is unknown, so a sign-in for an unknown
// address costs as long as one with a wrong password (no user enumeration by timing).
const DUMMY_PASSWORD = "vsearch-timing-equaliser";

export class AuthService {
  private dummyHash: Promise<string> | null = null;

  constructor(
    private readonly sessions: SessionStore,
    private readonly accounts: AccountStore,
    private readonly apiKeys: ApiKeyService,
    private readonly users: UserService,
    private readonly sessionTtlSecs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async signIn(input: unknown): Promise<SignedIn> {
    const { email, password } = parseInput(signInSchema, input);
    const user = await this.accounts.findUserByEmail(email.trim().toLowerCase());
    this.dummyHash ??= Bun.password.hash(DUMMY_PASSWORD, { algorithm: "argon2id" });
    const ok = await Bun.password.verify(password, user?.password_hash ?? (await this.dummyHash));
    if (!user || !ok) throw new AppError("UNAUTHORIZED", "Wrong e-mail or password");
    return await this.startSession(user);
  }

  /** A new session for a user whose credentials were checked (sign-in, or the first-run setup). */
  async startSession(user: Pick<User, "id" | "account_id" | "must_change_password">): Promise<SignedIn> {
    const token = SESSION_TOKEN_PREFIX + randomBase62(40);
    const expires_at = nowIso(this.now() + this.sessionTtlSecs * 1000);
    await this.sessions.insert({
      id: newId("ses"),
      token_hash: sha256Hex(token),
      user_id: user.id,
      account_id: user.account_id,
      created_at: nowIso(this.now()),
      expires_at,
    });
    return { token, expires_at, must_change_password: user.must_change_password };
  }

  /**
   * A signed-in user changes their own password: the current one is checked (so a session left
   * open on a shared screen cannot lock its owner out), the one-time flag clears, and every other
   * session of theirs ends; this one stays signed in.
   */
  async changeOwnPassword(principal: Principal, input: unknown): Promise<{ sessions_ended: number }> {
    if (principal.kind !== "session")
      throw new AppError("NOT_A_SESSION", "Changing a password needs a session token, not an API key");
    const { current_password, new_password } = parseInput(changePasswordSchema, input);
    const user = await this.accounts.getUserWithHash(principal.userId);
    if (!user || !(await Bun.password.verify(current_password, user.password_hash)))
      throw new AppError("WRONG_PASSWORD", "The current password is wrong");
    if (current_password === new_password)
      throw new AppError("PASSWORD_UNCHANGED", "Choose a password different from the current one");
    return { sessions_ended: await this.users.setOwnPassword(user.id, new_password, principal.sessionId) };
  }

  async signOut(principal: Principal): Promise<void> {
    if (principal.kind !== "session")
      throw new AppError("NOT_A_SESSION", "Sign-out needs a session token, not an API key");
    await this.sessions.end(principal.sessionId, nowIso(this.now()));
  }

  /** Resolves an `Authorization` header value to a principal, or throws 401. */
  async authenticate(header: string | undefined | null): Promise<Principal> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
    if (!m) throw unauthorized();
    const token = m[1];
    if (token.startsWith(API_KEY_PREFIX)) return await this.apiKeys.authenticate(token);
    if (!token.startsWith(SESSION_TOKEN_PREFIX)) throw new AppError("INVALID_API_KEY", "The API key is not valid");
    const hash = sha256Hex(token);
    const row = await this.sessions.findByHash(hash);
    if (!row || !constantTimeEqual(row.token_hash, hash) || row.ended_at)
      throw unauthorized("The session token is not valid");
    if (Date.parse(row.expires_at) <= this.now())
      throw new AppError("SESSION_EXPIRED", "The session has expired; sign in again");
    return {
      kind: "session",
      accountId: row.account_id,
      sessionId: row.id,
      userId: row.user_id,
      role: row.role,
      mustChangePassword: row.must_change_password === 1,
    };
  }
}
