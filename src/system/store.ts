import type { Database } from "bun:sqlite";

export interface StoreCounts {
  accounts: number;
  videos: number;
  frames: number;
  jobs_waiting: number;
  jobs_failed: number;
}

/** Instance-wide row counts for `vsearch doctor` (across tenants: an operator's view, never HTTP). */
export class SystemStore {
  constructor(private readonly db: Database) {}

  /** Hands this connection's SQLite page cache back to the allocator; it refills from the file on use. */
  shrinkMemory(): void {
    this.db.exec("PRAGMA shrink_memory");
  }

  counts(): StoreCounts {
    const count = (sql: string) => (this.db.query(sql).get() as { n: number }).n;
    return {
      accounts: count("SELECT count(*) AS n FROM accounts"),
      videos: count("SELECT count(*) AS n FROM videos"),
      frames: count("SELECT count(*) AS n FROM frames"),
      jobs_waiting: count("SELECT count(*) AS n FROM jobs WHERE status IN ('queued','pending','processing')"),
      jobs_failed: count("SELECT count(*) AS n FROM jobs WHERE status = 'failed'"),
    };
  }

  /**
   * Which tables still hold a row naming one of `needles` (every column as text, blobs left out):
   * the retention audit after an account deletion. Only needles found are keys.
   */
  tablesMentioning(needles: string[]): Map<string, string[]> {
    const out = new Map<string, string[]>();
    const tables = this.db
      .query<{ name: string }, []>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all()
      .map((r) => r.name);
    for (const name of tables) {
      const text = JSON.stringify(this.db.query(`SELECT * FROM "${name.replace(/"/g, '""')}"`).all(), (_k, v) =>
        v instanceof Uint8Array ? null : v,
      );
      for (const n of needles) if (text.includes(n)) out.set(n, [...(out.get(n) ?? []), name]);
    }
    return out;
  }

  /** Exact vectors whose frame or shot row is gone (0 while the deletes cascade). */
  orphanVectors(): { frame_vectors: number; shot_vectors: number } {
    const count = (sql: string) => (this.db.query(sql).get() as { n: number }).n;
    return {
      frame_vectors: count("SELECT count(*) AS n FROM frame_vectors WHERE frame_id NOT IN (SELECT id FROM frames)"),
      shot_vectors: count("SELECT count(*) AS n FROM shot_vectors WHERE shot_id NOT IN (SELECT id FROM shots)"),
    };
  }

  /** Readiness: the database answers a query. */
  ping(): void {
    this.db.query("SELECT 1").get();
  }
}
