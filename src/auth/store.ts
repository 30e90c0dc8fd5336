import type { Executor } from "../store/executor.ts";

export interface SessionRow {
  id: string;
  token_hash: string;
  user_id: string;
  account_id: string;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  role: "admin" | "member";
  must_change_password: number;
}

export class SessionStore {
  constructor(private readonly db: Executor) {}

  async insert(s: Omit<SessionRow, "ended_at" | "role" | "must_change_password">): Promise<void> {
    await this.db.run(
      "INSERT INTO sessions (id, token_hash, user_id, account_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      s.id,
      s.token_hash,
      s.user_id,
      s.account_id,
      s.created_at,
      s.expires_at,
    );
  }

  async findByHash(tokenHash: string): Promise<SessionRow | null> {
    return await this.db.get<SessionRow>(
      `SELECT s.id, s.token_hash, s.user_id, s.account_id, s.created_at, s.expires_at, s.ended_at, u.role, u.must_change_password
           FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`,
      tokenHash,
    );
  }

  async end(id: string, at: string): Promise<void> {
    await this.db.run("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL", at, id);
  }
}
