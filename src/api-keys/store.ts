import type { Database } from "bun:sqlite";
import type { ApiKey } from "./schema.ts";

export interface ApiKeyRow extends ApiKey {
  key_hash: string;
}

const COLUMNS = "id, account_id AS user_id, name, prefix, permissions, last_used_at, created_at, revoked_at";

export class ApiKeyStore {
  constructor(private readonly db: Database) {}

  insert(k: ApiKeyRow): void {
    this.db
      .query(
        "INSERT INTO api_keys (id, account_id, name, prefix, key_hash, permissions, last_used_at, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(k.id, k.user_id, k.name, k.prefix, k.key_hash, k.permissions, k.last_used_at, k.created_at, k.revoked_at);
  }

  countActive(accountId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL")
      .get(accountId)!.n;
  }

  list(accountId: string): ApiKey[] {
    return this.db
      .query<ApiKey, [string]>(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY rowid`)
      .all(accountId);
  }

  get(id: string): ApiKey | null {
    return this.db.query<ApiKey, [string]>(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`).get(id);
  }

  findByHash(hash: string): ApiKeyRow | null {
    return this.db.query<ApiKeyRow, [string]>(`SELECT ${COLUMNS}, key_hash FROM api_keys WHERE key_hash = ?`).get(hash);
  }

  /** Returns false when the key was already revoked (a second revoke is a 409). */
  revoke(id: string, at: string): boolean {
    return (
      this.db.query("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(at, id).changes === 1
    );
  }

  touch(id: string, at: string): void {
    this.db.query("UPDATE api_keys SET last_used_at = ? WHERE id = ?").run(at, id);
  }
}
