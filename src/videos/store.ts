import type { Database } from "bun:sqlite";
import type { VideoRow, VideoStatus } from "./schema.ts";

export interface VideoFilter {
  collectionId?: string;
  statuses?: VideoStatus[];
}

export class VideoStore {
  constructor(private readonly db: Database) {}

  insert(v: VideoRow): void {
    const cols = Object.keys(v);
    this.db
      .query(`INSERT INTO videos (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`)
      .run(...(Object.values(v) as never[]));
  }

  get(accountId: string, id: string): VideoRow | null {
    return this.db
      .query<VideoRow, [string, string]>("SELECT * FROM videos WHERE account_id = ? AND id = ?")
      .get(accountId, id);
  }

  getById(id: string): VideoRow | null {
    return this.db.query<VideoRow, [string]>("SELECT * FROM videos WHERE id = ?").get(id);
  }

  private where(accountId: string, f: VideoFilter): { sql: string; args: string[] } {
    const parts = ["account_id = ?"];
    const args = [accountId];
    if (f.collectionId) {
      parts.push("collection_id = ?");
      args.push(f.collectionId);
    }
    if (f.statuses?.length) {
      parts.push(`status IN (${f.statuses.map(() => "?").join(",")})`);
      args.push(...f.statuses);
    }
    return { sql: parts.join(" AND "), args };
  }

  list(accountId: string, f: VideoFilter, limit: number, offset: number): VideoRow[] {
    const w = this.where(accountId, f);
    return this.db
      .query<VideoRow, (string | number)[]>(
        `SELECT * FROM videos WHERE ${w.sql} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      )
      .all(...w.args, limit, offset);
  }

  count(accountId: string, f: VideoFilter): number {
    const w = this.where(accountId, f);
    return this.db.query<{ n: number }, string[]>(`SELECT count(*) AS n FROM videos WHERE ${w.sql}`).get(...w.args)!.n;
  }

  update(id: string, fields: Partial<VideoRow>): void {
    const entries = Object.entries(fields);
    if (!entries.length) return;
    this.db
      .query(`UPDATE videos SET ${entries.map(([k]) => `${k} = ?`).join(", ")}, updated_at = ? WHERE id = ?`)
      .run(...(entries.map(([, v]) => v) as never[]), new Date().toISOString(), id);
  }

  delete(id: string): void {
    this.db.query("DELETE FROM videos WHERE id = ?").run(id);
  }

  segmentsCount(id: string): number {
    return this.db
      .query<{ n: number }, [string, string, string, string]>(
        `SELECT (SELECT count(*) FROM frames WHERE video_id = ?) + (SELECT count(*) FROM shots WHERE video_id = ?)
              + (SELECT count(*) FROM transcript_segments WHERE video_id = ?) + (SELECT count(*) FROM ocr_lines WHERE video_id = ?) AS n`,
      )
      .get(id, id, id, id)!.n;
  }

  /** The collection's videos of exactly this size: the only ones an upload can be a byte-for-byte copy of. */
  sameSize(accountId: string, collectionId: string, sizeBytes: number): VideoRow[] {
    return this.db
      .query<VideoRow, [string, string, number]>(
        "SELECT * FROM videos WHERE account_id = ? AND collection_id = ? AND file_size_bytes = ? ORDER BY rowid",
      )
      .all(accountId, collectionId, sizeBytes);
  }

  /** Records a source's SHA-256 computed later (an HTTP upload's, when a same-size upload needed it). */
  setContentHash(id: string, hash: string): void {
    this.db.query("UPDATE videos SET content_hash = ? WHERE id = ? AND content_hash IS NULL").run(hash, id);
  }

  findByContent(accountId: string, collectionId: string, hash: string): VideoRow | null {
    return this.db
      .query<VideoRow, [string, string, string]>(
        "SELECT * FROM videos WHERE account_id = ? AND collection_id = ? AND content_hash = ?",
      )
      .get(accountId, collectionId, hash);
  }

  allIds(accountId?: string): string[] {
    const where = accountId ? " WHERE account_id = ?" : "";
    return this.db
      .query<{ id: string }, string[]>(`SELECT id FROM videos${where}`)
      .all(...(accountId ? [accountId] : []))
      .map((r) => r.id);
  }
}
