import type { Database } from "bun:sqlite";

export interface CollectionRow {
  id: string;
  user_id: string;
  name: string;
  created_at: string;
}

export interface CollectionStats {
  video_count: number;
  total_duration_secs: number;
  storage_bytes: number;
}

const COLS = "id, account_id AS user_id, name, created_at";

export class CollectionStore {
  constructor(private readonly db: Database) {}

  /** Returns false when the name is taken in this account (UNIQUE constraint). */
  insert(c: CollectionRow): boolean {
    try {
      this.db
        .query("INSERT INTO collections (id, account_id, name, created_at) VALUES (?, ?, ?, ?)")
        .run(c.id, c.user_id, c.name, c.created_at);
      return true;
    } catch (e) {
      if (String((e as Error).message).includes("UNIQUE")) return false;
      throw e;
    }
  }

  get(accountId: string, id: string): CollectionRow | null {
    return this.db
      .query<CollectionRow, [string, string]>(`SELECT ${COLS} FROM collections WHERE account_id = ? AND id = ?`)
      .get(accountId, id);
  }

  findByName(accountId: string, name: string): CollectionRow | null {
    return this.db
      .query<CollectionRow, [string, string]>(`SELECT ${COLS} FROM collections WHERE account_id = ? AND name = ?`)
      .get(accountId, name);
  }

  list(accountId: string, limit: number, offset: number): CollectionRow[] {
    return this.db
      .query<CollectionRow, [string, number, number]>(
        `SELECT ${COLS} FROM collections WHERE account_id = ? ORDER BY rowid LIMIT ? OFFSET ?`,
      )
      .all(accountId, limit, offset);
  }

  count(accountId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM collections WHERE account_id = ?")
      .get(accountId)!.n;
  }

  rename(accountId: string, id: string, name: string): boolean {
    try {
      this.db.query("UPDATE collections SET name = ? WHERE account_id = ? AND id = ?").run(name, accountId, id);
      return true;
    } catch (e) {
      if (String((e as Error).message).includes("UNIQUE")) return false;
      throw e;
    }
  }

  delete(accountId: string, id: string): void {
    this.db.query("DELETE FROM collections WHERE account_id = ? AND id = ?").run(accountId, id);
  }

  stats(ids: string[]): Map<string, CollectionStats> {
    const out = new Map<string, CollectionStats>();
    if (ids.length === 0) return out;
    const rows = this.db
      .query<CollectionStats & { collection_id: string }, string[]>(
        `SELECT collection_id, count(*) AS video_count, coalesce(sum(duration_secs), 0) AS total_duration_secs,
                coalesce(sum(storage_bytes), 0) AS storage_bytes
           FROM videos WHERE collection_id IN (${ids.map(() => "?").join(",")}) GROUP BY collection_id`,
      )
      .all(...ids);
    for (const r of rows) out.set(r.collection_id, r);
    return out;
  }

  /** Poster paths of the newest ready videos, at most `perCollection` each. */
  posters(ids: string[], perCollection: number): Map<string, { video_id: string }[]> {
    const out = new Map<string, { video_id: string }[]>();
    if (ids.length === 0) return out;
    const rows = this.db
      .query<{ collection_id: string; video_id: string }, (string | number)[]>(
        `SELECT collection_id, video_id FROM (
           SELECT collection_id, id AS video_id,
                  row_number() OVER (PARTITION BY collection_id ORDER BY created_at DESC) AS rn
             FROM videos WHERE poster_path IS NOT NULL AND collection_id IN (${ids.map(() => "?").join(",")}))
          WHERE rn <= ?`,
      )
      .all(...ids, perCollection);
    for (const r of rows) out.set(r.collection_id, [...(out.get(r.collection_id) ?? []), { video_id: r.video_id }]);
    return out;
  }

  videoIds(accountId: string, collectionId: string): string[] {
    return this.db
      .query<{ id: string }, [string, string]>("SELECT id FROM videos WHERE account_id = ? AND collection_id = ?")
      .all(accountId, collectionId)
      .map((r) => r.id);
  }
}
