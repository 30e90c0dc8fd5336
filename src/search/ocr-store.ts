import type { Executor } from "../store/executor.ts";
import { ftsToTsquery } from "../store/fts-tsquery.ts";
import { ftsMatching, pgDocFreq, pgRank, type WeightedUnit } from "../store/sql.ts";
import type { SearchScope } from "./store.ts";

export interface OcrHitRow {
  id: number;
  video_id: string;
  start_secs: number;
  end_secs: number;
  text: string;
  confidence: number;
  bm25: number;
  /** As SearchStore's TranscriptHitRow: which units the row matches (PostgreSQL, searched with units). */
  unit_mask?: number | null;
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
  constructor(private readonly db: Executor) {}

  /** BM25-ranked lines in scope matching an (already sanitized) FTS5 expression (`units`: see SearchStore.transcriptSearch). */
  async search(scope: SearchScope, match: string, limit: number, units?: WeightedUnit[]): Promise<OcrHitRow[]> {
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
    if (this.db.backend === "postgres") {
      const q = ftsToTsquery(match);
      if (!q) return [];
      const rank = pgRank("o.tsv", units);
      return await this.db.all<OcrHitRow>(
        `SELECT o.id, o.video_id, o.start_secs, o.end_secs, o.text, o.confidence, ${rank.sql} AS bm25, ${rank.mask ?? "NULL"} AS unit_mask
           FROM ocr_lines o CROSS JOIN to_tsquery('vs_english', ?) AS q (q) ${rank.from}
           WHERE o.tsv @@ q.q AND ${parts.join(" AND ")} ORDER BY bm25, o.id LIMIT ?`,
        ...rank.args,
        q,
        ...rank.fromArgs,
        ...args.slice(1),
        limit,
      );
    }
    return await this.db.allAside<OcrHitRow>(
      `SELECT o.id, o.video_id, o.start_secs, o.end_secs, o.text, o.confidence, bm25(ocr_fts) AS bm25
         FROM ocr_fts JOIN ocr_lines o ON o.id = ocr_fts.rowid
         WHERE ocr_fts MATCH ? AND ${parts.join(" AND ")} ORDER BY bm25 LIMIT ?`,
      ...args,
      limit,
    );
  }

  /** Which of `ids` match `match` (store/sql.ts `ftsMatching`). */
  async matching(match: string, ids: number[]): Promise<Set<number>> {
    return await ftsMatching(this.db, "ocr_fts", match, ids);
  }

  async docFreq(accountId: string, match: string): Promise<number> {
    if (this.db.backend === "postgres") return await pgDocFreq(this.db, "ocr_fts", accountId, match);
    return (
      await this.db.allAside<{ n: number }>(
        "SELECT count(*) AS n FROM ocr_fts JOIN ocr_lines o ON o.id = ocr_fts.rowid WHERE ocr_fts MATCH ? AND o.account_id = ?",
        match,
        accountId,
      )
    )[0].n;
  }

  async count(accountId: string): Promise<number> {
    return (
      await this.db.allAside<{ n: number }>("SELECT count(*) AS n FROM ocr_lines WHERE account_id = ?", accountId)
    )[0].n;
  }

  /** Lines on screen during [start, end), top to bottom. */
  async overlapping(videoId: string, start: number, end: number): Promise<OcrLineRow[]> {
    return await this.db.all<OcrLineRow>(
      `SELECT start_secs, end_secs, text, confidence, box_x, box_y, box_w, box_h FROM ocr_lines
         WHERE video_id = ? AND start_secs < ? AND end_secs > ? ORDER BY start_secs, box_y`,
      videoId,
      end,
      start,
    );
  }
}
