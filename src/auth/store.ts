import type { Database } from "bun:sqlite";

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
  constructor(private readonly db: Database) {}

  insert(s: Omit<SessionRow, "ended_at" | "role" | "must_change_password">): void {
    this.db
      .query(
        "INSERT INTO sessions (id, token_hash, user_id, account_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(s.id, s.token_hash, s.user_id, s.account_id, s.created_at, s.expires_at);
  }

  findByHash(tokenHash: string): SessionRow | null {
    return this.db
      .query<SessionRow, [string]>(
        `SELECT s.id, s.token_hash, s.user_id, s.account_id, s.created_at, s.expires_at, s.ended_at, u.role, u.must_change_password
           FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`,
      )
      .get(tokenHash);
  }

  end(id: string, at: string): void {
    this.db.query("UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL").run(at, id);
  }
}
