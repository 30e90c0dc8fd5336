import { isStorageError } from "../core/storage.ts";
import { AppError, notFound } from "../core/errors.ts";
import { constantTimeEqual, sha256Hex } from "../core/crypto.ts";
import { newId, nowIso, randomBase62 } from "../core/ids.ts";
import { parseInput } from "../core/validate.ts";
import type { AccountStore } from "../accounts/store.ts";
import { PLAN_LIMITS } from "../accounts/schema.ts";
import type { Principal } from "../auth/schema.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { ApiKeyStore } from "./store.ts";
import { API_KEY_PATTERN, API_KEY_PREFIX, type ApiKey, createApiKeyInput } from "./schema.ts";

/** `last_used_at` is written at most once a minute per key, so hot keys don't hammer the writer. */
const TOUCH_INTERVAL_MS = 60_000;

export class ApiKeyService {
  private readonly lastTouched = new Map<string, number>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly store: ApiKeyStore,
    private readonly accounts: AccountStore,
    private readonly now: () => number = Date.now,
  ) {}

  async create(accountId: string, input: unknown): Promise<ApiKey & { key: string }> {
    const { name, permissions } = parseInput(createApiKeyInput, input);
    const key = API_KEY_PREFIX + randomBase62(40);
    const record: ApiKey = {
      id: newId("key"),
      user_id: accountId,
      name,
      prefix: key.slice(0, 12),
      permissions,
      last_used_at: null,
      created_at: nowIso(this.now()),
      revoked_at: null,
    };
    // The count and the insert under the account's lock: parallel creations cannot all pass the
    // check before any of them inserts.
    await this.uow.run(async () => {
      if (!(await this.accounts.lock(accountId))) throw notFound("NOT_FOUND", `Account ${accountId}`);
      const account = (await this.accounts.getAccount(accountId))!;
      const limit = PLAN_LIMITS[account.plan].apiKeys;
      if (limit !== null && (await this.store.countActive(accountId)) >= limit) {
        throw new AppError(
          "API_KEY_LIMIT_REACHED",
          `The ${account.plan} plan allows ${limit} active API key(s); revoke one first`,
        );
      }
      await this.store.insert({ ...record, key_hash: sha256Hex(key) });
    });
    return { ...record, key };
  }

  async list(accountId: string): Promise<ApiKey[]> {
    return await this.store.list(accountId);
  }

  async revoke(accountId: string, keyId: string): Promise<ApiKey> {
    const k = await this.store.get(keyId);
    if (!k || k.user_id !== accountId) throw notFound("API_KEY_NOT_FOUND", `API key ${keyId}`);
    if (!(await this.store.revoke(keyId, nowIso(this.now())))) {
      throw new AppError("API_KEY_ALREADY_REVOKED", `API key ${keyId} was already revoked`);
    }
    this.lastTouched.delete(keyId);
    return (await this.store.get(keyId))!;
  }

  /** The CLI operator may revoke by key id alone; the account is taken from the key. */
  async revokeAsOperator(keyId: string, accountId?: string): Promise<ApiKey> {
    const k = await this.store.get(keyId);
    if (!k) throw notFound("API_KEY_NOT_FOUND", `API key ${keyId}`);
    return await this.revoke(accountId ?? k.user_id, keyId);
  }

  /** Resolves a presented key; revocation is checked on every request (no cache). */
  async authenticate(key: string): Promise<Principal> {
    // Built only when thrown: an Error captures a stack, which cost every authenticated request.
    const invalid = () => new AppError("INVALID_API_KEY", "The API key is not valid");
    if (!API_KEY_PATTERN.test(key)) throw invalid();
    const hash = sha256Hex(key);
    const row = await this.store.findByHash(hash);
    if (!row || !constantTimeEqual(row.key_hash, hash)) throw invalid();
    if (row.revoked_at) throw new AppError("INVALID_API_KEY", "The API key has been revoked");
    const t = this.now();
    if (t - (this.lastTouched.get(row.id) ?? 0) >= TOUCH_INTERVAL_MS) {
      this.lastTouched.set(row.id, t);
      // Bookkeeping only: a full disk must not turn every read into a 507.
      try {
        await this.store.touch(row.id, nowIso(t));
      } catch (e) {
        if (!isStorageError(e)) throw e;
      }
    }
    return { kind: "api_key", accountId: row.user_id, keyId: row.id, permissions: row.permissions };
  }
}
