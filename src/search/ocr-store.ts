import type { Database } from "bun:sqlite";
import { ftsMatching } from "../store/sql.ts";
import type { SearchScope } from "./store.ts";

export interface OcrHitRow {
  id: number;
  video_id: string;
  start_secs: number;
  end_secs: number;
  text: string;
  confidence: number;
  bm25: number;
}

export interface OcrLineRow {
  start_secs: number;
  end_secs: number;
  text: string;
  confidence: number;
  box_x: number;
  box_y: number;
  box_w: number;
  box_h: number;
}

/** SQL of on-screen text (ocr_lines + ocr_fts, migration 006) for search and the moment endpoint. */
export class OcrSearchStore {
  constructor(private readonly db: Database) {}

  /** BM25-ranked lines in scope matching an (already sanitized) FTS5 expression. */
  search(scope: SearchScope, match: string, limit: number): OcrHitRow[] {
    const parts = ["o.account_id = ?"];
    const args: (string | number)[] = [match, scope.accountId];
    if (scope.collectionId) {
      parts.push("o.collection_id = ?");
      args.push(scope.collectionId);
    }
    if (scope.videoId) {
      parts.push("o.video_id = ?");
      args.push(scope.videoId);
    }
    return this.db
      .query<OcrHitRow, (string | number)[]>(
        `SELECT o.id, o.video_id, o.start_secs, o.end_secs, o.text, o.confidence, bm25(ocr_fts) AS bm25
         FROM ocr_fts JOIN ocr_lines o ON o.id = ocr_fts.rowid
         WHERE ocr_fts MATCH ? AND ${parts.join(" AND ")} ORDER BY bm25 LIMIT ?`,
      )
      .all(...args, limit);
  }

  /** Which of `ids` match `match` (store/sql.ts `ftsMatching`). */
  matching(match: string, ids: number[]): Set<number> {
    return ftsMatching(this.db, "ocr_fts", match, ids);
  }

  docFreq(accountId: string, match: string): number {
    return this.db
      .query<{ n: number }, [string, string]>(
        "SELECT count(*) AS n FROM ocr_fts JOIN ocr_lines o ON o.id = ocr_fts.rowid WHERE ocr_fts MATCH ? AND o.account_id = ?",
      )
      .get(match, accountId)!.n;
  }

  count(accountId: string): number {
    return this.db
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM ocr_lines WHERE account_id = ?")
      .get(accountId)!.n;
  }

  /** Lines on screen during [start, end), top to bottom. */
  overlapping(videoId: string, start: number, end: number): OcrLineRow[] {
    return this.db
      .query<OcrLineRow, [string, number, number]>(
        `SELECT start_secs, end_secs, text, confidence, box_x, box_y, box_w, box_h FROM ocr_lines
         WHERE video_id = ? AND start_secs < ? AND end_secs > ? ORDER BY start_secs, box_y`,
      )
      .all(videoId, end, start);
  }
}
