import { dialect, type Executor } from "../store/executor.ts";

/**
 * The change history's name. On PostgreSQL the random name is written once, by the migration,
 * so a copy of the database (CREATE DATABASE … TEMPLATE, a restored dump) carries it too and
 * counts the same numbers from there: the database's own OID, which every copy gets anew, is
 * part of the name (a copy's first start reads its index from the rows instead of a snapshot).
 */
const DATABASE_ID = dialect({
  sqlite: "SELECT database_id AS id FROM vector_change_seq WHERE id = 1",
  pg: `SELECT database_id || '@' || (SELECT oid FROM pg_database WHERE datname = current_database()) AS id
         FROM vector_change_seq WHERE id = 1`,
});

/** A video whose vector rows changed, and the sequence number of its latest change. */
export interface VectorChangeRow {
  video_id: string;
  account_id: string;
  seq: number;
}

/**
 * The vector rows' change log (migration 010, written by triggers on frames / shots and their
 * vectors): what the in-memory index's snapshot is checked against at a start (index-snapshot.ts).
 * Sequence numbers only grow; a video keeps its latest one. A deleted video's row goes with it
 * (migration 010's videos_changed_ad): the loader drops a snapshot's videos the store no longer has.
 */
export class VectorChangeStore {
  constructor(private readonly db: Executor) {}

  /** The latest sequence number handed out (0 when nothing changed yet). */
  async current(): Promise<number> {
    return (await this.db.get<{ seq: number }>("SELECT seq FROM vector_change_seq WHERE id = 1"))?.seq ?? 0;
  }

  /** The random name of this database's change history (a snapshot names the one it reflects). */
  async databaseId(): Promise<string> {
    return (await this.db.get<{ id: string }>(DATABASE_ID))?.id ?? "";
  }

  /** Videos whose latest change is after `seq`, oldest change first. */
  async after(seq: number): Promise<VectorChangeRow[]> {
    return await this.db.all<VectorChangeRow>(
      "SELECT video_id, account_id, seq FROM vector_changes WHERE seq > ? ORDER BY seq",
      seq,
    );
  }

  /** A video's latest change (0: none logged). */
  async of(videoId: string): Promise<number> {
    return (await this.db.get<{ seq: number }>("SELECT seq FROM vector_changes WHERE video_id = ?", videoId))?.seq ?? 0;
  }

  /**
   * Forgets rows of deleted videos at or before `seq` (a database written before the delete
   * trigger, or a row left by a writer outside it). Returns how many went.
   */
  async prune(seq: number): Promise<number> {
    return (
      await this.db.run(
        "DELETE FROM vector_changes WHERE seq <= ? AND NOT EXISTS (SELECT 1 FROM videos v WHERE v.id = video_id)",
        seq,
      )
    ).changes;
  }
}
