import { buildFtsQuery } from "./fts.ts";
import type { SearchIndexes } from "./indexes.ts";
import type { Candidate } from "./moments.ts";
import type { OcrHitRow, OcrSearchStore } from "./ocr-store.ts";
import type { SearchScope } from "./store.ts";

/** Lines fetched per search. */
const OCR_K = 300;

/**
 * The `ocr` mode: on-screen text, lexical, scored like the transcript mode. FTS5/BM25 orders the
 * lines (raw_score = −bm25); the calibrated score is the share of the query's IDF weight (terms,
 * phrases, prefixes, weighted by rarity among this account's on-screen lines) that the line
 * contains, so 1.0 = every word asked for is shown. Results are memoised per account until its
 * content changes (SearchIndexes).
 */
export function ocrCandidates(
  store: OcrSearchStore,
  indexes: SearchIndexes,
  scope: SearchScope,
  text: string,
  cut: number,
  keep?: (hits: OcrHitRow[]) => OcrHitRow[],
): Candidate[] {
  const fts = buildFtsQuery(text);
  if (!fts) return [];
  const account = scope.accountId;
  const key = `${scope.collectionId ?? ""}/${scope.videoId ?? ""}\u0000${fts.match}`;
  const found = indexes.memoResult(account, `ocr\u0000${key}`, () => store.search(scope, fts.match, OCR_K));
  const hits = keep ? keep(found) : found;
  if (!hits.length) return [];
  const n = indexes.memo(account, "ocr-n", () => store.count(account));
  const idf = (df: number) => Math.log(1 + (n - Math.max(df, 1) + 0.5) / (Math.max(df, 1) + 0.5));
  const ids = found.map((h) => h.id);
  const all = new Set(ids);
  const units = fts.units.map((u) => ({
    idf: idf(indexes.memo(account, `ocr-df\u0000${u}`, () => store.docFreq(account, u))),
    matching: fts.units.length === 1 ? all : indexes.memoResult(account, `ocr-unit\u0000${key}\u0000${u}`, () => store.matching(u, ids)),
  }));
  const total = units.reduce((s, u) => s + u.idf, 0);
  const out: Candidate[] = [];
  for (const h of hits) {
    const score = total > 0 ? units.reduce((s, u) => s + (u.matching.has(h.id) ? u.idf : 0), 0) / total : 0;
    if (score < cut) continue;
    out.push({
      videoId: h.video_id,
      type: "ocr",
      mode: "ocr",
      start: h.start_secs,
      end: h.end_secs,
      score,
      raw: -h.bm25,
      thresholdKey: "ocr:default",
      text: h.text,
      shotIndex: null,
    });
  }
  return out;
}
