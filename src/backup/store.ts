import type { Executor } from "../store/executor.ts";
import { IndexStore } from "../indexing/store.ts";
import { openPgStore } from "../store/pg/open.ts";
import { openSqliteStore } from "../store/sqlite/database.ts";
import { VideoStore } from "../videos/store.ts";

/** What SQLite says of a database, and what the data dir check compares with the files. */
export interface DatabaseHealth {
  /** `PRAGMA integrity_check`, its lines joined ("ok" when sound). */
  integrity: string;
  /** Rows `PRAGMA foreign_key_check` reports. */
  foreignKeyViolations: number;
  videos: { id: string; source_path: string }[];
  jobs: Record<string, number>;
}

/**
 * The database side of backup, restore and `vsearch check`: the live store's snapshot, and the
 * other database files they open (the snapshot being archived, a restore's staged copy). The
 * backup code above it deals in files and archives only.
 */
export class BackupStore {
  constructor(
    private readonly db: Executor,
    private readonly vecExtension?: string,
    /** This process's application_name on PostgreSQL (its own connections are not "other clients"). */
    private readonly applicationName = "",
  ) {}

  /** Opens another database file (a snapshot, a staged restore), runs `fn` on it, closes it. */
  static async withFile<T>(
    file: string,
    vecExtension: string | undefined,
    fn: (store: BackupStore) => Promise<T>,
  ): Promise<T> {
    const store = openSqliteStore(file, { vecExtension });
    try {
      return await fn(new BackupStore(store.exec, vecExtension));
    } finally {
      store.close();
    }
  }

  /**
   * The PostgreSQL database at `url` as it is, NOT migrated (a restore must not create the schema
   * pg_restore is about to bring), for `fn`; its schema version is 0 when it holds no vsearch schema.
   */
  static async withPostgres<T>(url: string, fn: (store: BackupStore, schemaVersion: number) => Promise<T>): Promise<T> {
    const self = `vsearch restore ${process.pid}`;
    const pg = await openPgStore(url, { migrate: false, max: 2, applicationName: self });
    try {
      return await fn(new BackupStore(pg.exec, undefined, self), pg.server.schemaVersion);
    } finally {
      await pg.close();
    }
  }

  /**
   * Other vsearch processes connected to this PostgreSQL database (their application_name starts
   * with "vsearch "): a restore refuses to rewrite rows under running servers and workers.
   */
  async otherVsearchClients(): Promise<string[]> {
    if (this.db.backend !== "postgres") return [];
    const rows = await this.db.all<{ who: string }>(
      `SELECT application_name || ' (pid ' || pid || coalesce(', ' || host(client_addr), '') || ')' AS who
         FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE 'vsearch %' AND application_name <> ?
        ORDER BY pid`,
      this.applicationName,
    );
    return rows.map((r) => r.who);
  }

  /**
   * A consistent copy of the whole database in `file` (`VACUUM INTO`): SQLite reads it in one
   * read transaction, so it is exact even while `serve` writes (WAL: the writer is not blocked).
   */
  async snapshotInto(file: string): Promise<void> {
    await this.db.run("VACUUM INTO ?", file);
  }

  /**
   * A restored copy does not act on the original's unfinished outbox (docs/OPERATIONS.md, "Backup
   * and restore"): the original may have sent those deliveries since the backup, and a restore
   * that re-sent them at once would repeat them to every receiver. Pending deliveries become
   * `failed` with the reason (Retry in the delivery log, or POST …/retry, sends one again);
   * events not yet fanned out to endpoints are marked dispatched without deliveries.
   */
  async holdOutbox(at: string): Promise<{ deliveries: number; events: number }> {
    return await this.db.transaction(async () => {
      const deliveries = (
        await this.db.run(
          "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, error = ? WHERE status = 'pending'",
          `held by restore ${at}: pending when the backup was made; not re-sent automatically (the original may have sent it). Retry it if it is still wanted`,
        )
      ).changes;
      const events = (await this.db.run("UPDATE events SET dispatched_at = ? WHERE dispatched_at IS NULL", at)).changes;
      return { deliveries, events };
    });
  }

  async videoIds(): Promise<string[]> {
    return await new VideoStore(this.db).allIds();
  }

  /**
   * Drops videos and their rows from this database (a snapshot whose videos' files vanished
   * before they were archived), vectors SQLite cannot cascade included, and checkpoints the WAL
   * into the file. A copy being archived, not the live content: no files, no events (the live
   * content's owner is indexing/content.ts).
   */
  async dropVideos(ids: string[]): Promise<void> {
    const videos = new VideoStore(this.db);
    const index = new IndexStore(this.db, Boolean(this.vecExtension));
    await this.db.transaction(async () => {
      // One video after another inside the one transaction (a snapshot's few vanished videos).
      for (const id of ids) {
        await index.deleteVideoVectors(id);
        await videos.delete(id);
      }
    });
    await this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  /**
   * Every file path the database stores (relative to the data dir), with the video it belongs to:
   * sources, posters, shot thumbnails, renditions. A restore checks them before the data dir is
   * replaced; `vsearch check` reports any that point elsewhere.
   */
  async storedPaths(): Promise<{ column: string; video_id: string; path: string }[]> {
    return await this.db.all<{
      column: string;
      video_id: string;
      path: string;
    }>(`SELECT 'videos.source_path' AS "column", id AS video_id, source_path AS path FROM videos
         UNION ALL SELECT 'videos.poster_path', id, poster_path FROM videos WHERE poster_path IS NOT NULL
         UNION ALL SELECT 'shots.thumbnail_path', video_id, thumbnail_path FROM shots WHERE thumbnail_path IS NOT NULL
         UNION ALL SELECT 'renditions.path', video_id, path FROM renditions WHERE path IS NOT NULL`);
  }

  async health(): Promise<DatabaseHealth> {
    // PostgreSQL has no integrity_check to run from here (its pages are the server's: WAL,
    // checksums, amcheck for the DBA) and always enforces foreign keys: the rows' checks below
    // (files, jobs) are what `vsearch check` adds there.
    const pg = this.db.backend === "postgres";
    const integrity = pg
      ? "ok"
      : (await this.db.all<{ integrity_check: string }>("PRAGMA integrity_check"))
          .map((r) => r.integrity_check)
          .join("; ");
    const foreignKeyViolations = pg ? 0 : (await this.db.all("PRAGMA foreign_key_check")).length;
    const videos = await this.db.all<{ id: string; source_path: string }>("SELECT id, source_path FROM videos");
    const jobs = Object.fromEntries(
      (await this.db.all<{ status: string; n: number }>("SELECT status, count(*) AS n FROM jobs GROUP BY status")).map(
        (r) => [r.status, r.n],
      ),
    );
    return { integrity, foreignKeyViolations, videos, jobs };
  }
}
