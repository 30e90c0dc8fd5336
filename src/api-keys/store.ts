import type { Executor } from "../store/executor.ts";
import type { ApiKey } from "./schema.ts";

export interface ApiKeyRow extends ApiKey {
  key_hash: string;
}

const COLUMNS = "id, account_id AS user_id, name, prefix, permissions, last_used_at, created_at, revoked_at";

export class ApiKeyStore {
  constructor(private readonly db: Executor) {}

  async insert(k: ApiKeyRow): Promise<void> {
    await this.db.run(
      "INSERT INTO api_keys (id, account_id, name, prefix, key_hash, permissions, last_used_at, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      k.id,
      k.user_id,
      k.name,
      k.prefix,
      k.key_hash,
      k.permissions,
      k.last_used_at,
      k.created_at,
      k.revoked_at,
    );
  }

  async countActive(accountId: string): Promise<number> {
    return (await this.db.get<{ n: number }>(
      "SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL",
      accountId,
    ))!.n;
  }

  async list(accountId: string): Promise<ApiKey[]> {
    return await this.db.all<ApiKey>(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY rowid`, accountId);
  }

  async get(id: string): Promise<ApiKey | null> {
    return await this.db.get<ApiKey>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`, id);
  }

  async findByHash(hash: string): Promise<ApiKeyRow | null> {
    return await this.db.get<ApiKeyRow>(`SELECT ${COLUMNS}, key_hash FROM api_keys WHERE key_hash = ?`, hash);
  }

  /** Returns false when the key was already revoked (a second revoke is a 409). */
  async revoke(id: string, at: string): Promise<boolean> {
    return (
      (await this.db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id)).changes ===
      1
    );
  }

  async touch(id: string, at: string): Promise<void> {
    await this.db.run("UPDATE api_keys SET last_used_at = ? WHERE id = ?", at, id);
  }
}
