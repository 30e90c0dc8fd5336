import { dialect, type Executor } from "../store/executor.ts";

/** The store's own tables, by name (the retention audit walks them all). */
const TABLES = dialect({
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
  pg: `SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
});

export interface StoreCounts {
  accounts: number;
  videos: number;
  frames: number;
  jobs_waiting: number;
  jobs_failed: number;
}

/** Instance-wide row counts for `vsearch doctor` (across tenants: an operator's view, never HTTP). */
export class SystemStore {
  constructor(private readonly db: Executor) {}

  /**
   * Hands SQLite's page caches back to the allocator (the writer's through `exec`, the reader's —
   * the big one — through a read); they refill from the file on use. Nothing to do on PostgreSQL.
   */
  async shrinkMemory(): Promise<void> {
    if (this.db.backend !== "sqlite") return;
    await this.db.exec("PRAGMA shrink_memory");
    await this.db.all("PRAGMA shrink_memory");
  }

  async counts(): Promise<StoreCounts> {
    const row = await this.db.get<StoreCounts>(
      `SELECT (SELECT count(*) FROM accounts) AS accounts, (SELECT count(*) FROM videos) AS videos,
              (SELECT count(*) FROM frames) AS frames,
              (SELECT count(*) FROM jobs WHERE status IN ('queued','pending','processing')) AS jobs_waiting,
              (SELECT count(*) FROM jobs WHERE status = 'failed') AS jobs_failed`,
    );
    return row!;
  }

  /**
   * Which tables still hold a row naming one of `needles` (every column as text, blobs left out):
   * the retention audit after an account deletion. Only needles found are keys.
   */
  async tablesMentioning(needles: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    const tables = (await this.db.all<{ name: string }>(TABLES)).map((r) => r.name);
    // Every table once (the retention audit after an account deletion, a few dozen tables).
    for (const name of tables) {
      const text = JSON.stringify(await this.db.all(`SELECT * FROM "${name.replace(/"/g, '""')}"`), (_k, v) =>
        v instanceof Uint8Array ? null : v,
      );
      for (const n of needles) if (text.includes(n)) out.set(n, [...(out.get(n) ?? []), name]);
    }
    return out;
  }

  /** Exact vectors whose frame or shot row is gone (0 while the deletes cascade). */
  async orphanVectors(): Promise<{ frame_vectors: number; shot_vectors: number }> {
    const row = await this.db.get<{ frame_vectors: number; shot_vectors: number }>(
      `SELECT (SELECT count(*) FROM frame_vectors WHERE frame_id NOT IN (SELECT id FROM frames)) AS frame_vectors,
              (SELECT count(*) FROM shot_vectors WHERE shot_id NOT IN (SELECT id FROM shots)) AS shot_vectors`,
    );
    return row!;
  }

  /** Readiness: the database answers a query. */
  async ping(): Promise<void> {
    await this.db.get("SELECT 1");
  }
}
