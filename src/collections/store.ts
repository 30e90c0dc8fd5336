import { isStoreError } from "../store/errors.ts";
import type { Executor } from "../store/executor.ts";

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
  constructor(private readonly db: Executor) {}

  /**
   * Returns false when the name is taken in this account (its unique constraint). The conflict is
   * an expected answer, so the statement skips it (`ON CONFLICT DO NOTHING`) instead of failing:
   * a failed statement would abort a PostgreSQL transaction around it.
   */
  async insert(c: CollectionRow): Promise<boolean> {
    const { changes } = await this.db.run(
      "INSERT INTO collections (id, account_id, name, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
      c.id,
      c.user_id,
      c.name,
      c.created_at,
    );
    return changes === 1;
  }

  async get(accountId: string, id: string): Promise<CollectionRow | null> {
    return await this.db.get<CollectionRow>(
      `SELECT ${COLS} FROM collections WHERE account_id = ? AND id = ?`,
      accountId,
      id,
    );
  }

  async findByName(accountId: string, name: string): Promise<CollectionRow | null> {
    return await this.db.get<CollectionRow>(
      `SELECT ${COLS} FROM collections WHERE account_id = ? AND name = ?`,
      accountId,
      name,
    );
  }

  async list(accountId: string, limit: number, offset: number): Promise<CollectionRow[]> {
    return await this.db.all<CollectionRow>(
      `SELECT ${COLS} FROM collections WHERE account_id = ? ORDER BY rowid LIMIT ? OFFSET ?`,
      accountId,
      limit,
      offset,
    );
  }

  async count(accountId: string): Promise<number> {
    return (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM collections WHERE account_id = ?", accountId))!
      .n;
  }

  async rename(accountId: string, id: string, name: string): Promise<boolean> {
    try {
      await this.db.run("UPDATE collections SET name = ? WHERE account_id = ? AND id = ?", name, accountId, id);
      return true;
    } catch (e) {
      if (isStoreError(e, "unique")) return false;
      throw e;
    }
  }

  async delete(accountId: string, id: string): Promise<void> {
    await this.db.run("DELETE FROM collections WHERE account_id = ? AND id = ?", accountId, id);
  }

  async stats(ids: string[]): Promise<Map<string, CollectionStats>> {
    const out = new Map<string, CollectionStats>();
    if (ids.length === 0) return out;
    const rows = await this.db.all<CollectionStats & { collection_id: string }>(
      `SELECT collection_id, count(*) AS video_count, coalesce(sum(duration_secs), 0) AS total_duration_secs,
                coalesce(sum(storage_bytes), 0) AS storage_bytes
           FROM videos WHERE collection_id IN (${ids.map(() => "?").join(",")}) GROUP BY collection_id`,
      ...ids,
    );
    for (const r of rows) out.set(r.collection_id, r);
    return out;
  }

  /** Poster paths of the newest ready videos, at most `perCollection` each. */
  async posters(ids: string[], perCollection: number): Promise<Map<string, { video_id: string }[]>> {
    const out = new Map<string, { video_id: string }[]>();
    if (ids.length === 0) return out;
    const rows = await this.db.all<{ collection_id: string; video_id: string }>(
      `SELECT collection_id, video_id FROM (
           SELECT collection_id, id AS video_id,
                  row_number() OVER (PARTITION BY collection_id ORDER BY created_at DESC) AS rn
             FROM videos WHERE poster_path IS NOT NULL AND collection_id IN (${ids.map(() => "?").join(",")})) AS ranked
          WHERE rn <= ?`,
      ...ids,
      perCollection,
    );
    for (const r of rows) out.set(r.collection_id, [...(out.get(r.collection_id) ?? []), { video_id: r.video_id }]);
    return out;
  }

  async videoIds(accountId: string, collectionId: string): Promise<string[]> {
    return (
      await this.db.all<{ id: string }>(
        "SELECT id FROM videos WHERE account_id = ? AND collection_id = ?",
        accountId,
        collectionId,
      )
    ).map((r) => r.id);
  }
}
