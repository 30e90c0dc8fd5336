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

  /** Readiness: the database answers a query. */
  ping(): void {
    this.db.query("SELECT 1").get();
  }
}
