import { buildFtsQuery } from "./fts.ts";
import type { SearchIndexes } from "./indexes.ts";
import type { Candidate } from "./moments.ts";
import type { SearchScope, TranscriptHitRow } from "./store.ts";

/** Rows fetched per search and lexical mode. */
export const LEXICAL_K = 300;

/** A full-text hit: a transcript segment, or an on-screen text line (which adds its confidence). */
export type LexicalHit = TranscriptHitRow;

/** What a lexical mode searches: its FTS5 table, reached through its store. */
export interface LexicalSource<H extends LexicalHit> {
  mode: "transcript" | "ocr";
  /** Memo key prefix: the per-account caches of the two modes must not collide. */
  memo: string;
  /** The index stores CJK runs as character pairs (indexing/fts-text.ts): queries are built to match. */
  cjkPairs?: boolean;
  /** Hits best first; `units` (the query's units and their IDF) order them where the index has no IDF of its own (PostgreSQL). */
  search(scope: SearchScope, match: string, limit: number, units: { match: string; weight: number }[]): Promise<H[]>;
  /** Which of `ids` match one unit of the query. */
  matching(match: string, ids: number[]): Promise<Set<number>>;
  docFreq(accountId: string, match: string): Promise<number>;
  count(accountId: string): Promise<number>;
}

/**
 * A lexical mode (`transcript`, `ocr`): FTS5/BM25 orders the hits (raw_score = −bm25, higher is
 * better); the calibrated score is the share of the query's IDF weight (its terms, phrases and
 * prefixes, weighted by rarity among this account's rows of that mode) that the hit contains, so
 * 1.0 = everything asked for was said (or shown). Results are memoised per account until its
 * content changes (SearchIndexes). `keep` narrows the hits (a label filter) without changing how
 * the query's units are weighed.
 */
export async function lexicalCandidates<H extends LexicalHit>(
  source: LexicalSource<H>,
  indexes: SearchIndexes,
  scope: SearchScope,
  text: string,
  cut: number,
  keep?: (hits: H[]) => Promise<H[]>,
): Promise<Candidate[]> {
  const fts = buildFtsQuery(text, { cjk: source.cjkPairs });
  if (!fts) return [];
  const account = scope.accountId;
  const m = source.memo;
  const key = `${scope.collectionId ?? ""}/${scope.videoId ?? ""}\u0000${fts.match}`;
  const n = await indexes.memo(account, `${m}-n`, async () => await source.count(account));
  // A unit never seen in this account weighs like the rarest one that was (df = 1): a missing
  // rare word sinks a hit, a misspelt extra word next to a rare one does not sink it alone.
  const idf = (df: number) => Math.log(1 + (n - Math.max(df, 1) + 0.5) / (Math.max(df, 1) + 0.5));
  // The units' weights are memoized per account: after the first query they answer at once.
  const weights = await Promise.all(
    fts.units.map(async (u) =>
      idf(await indexes.memo(account, `${m}-df\u0000${u}`, async () => await source.docFreq(account, u))),
    ),
  );
  const found = await indexes.memoResult(
    account,
    `${m}\u0000${key}`,
    async () =>
      await source.search(
        scope,
        fts.match,
        LEXICAL_K,
        fts.units.length > 1 ? fts.units.map((u, i) => ({ match: u, weight: weights[i] })) : [],
      ),
  );
  const hits = keep ? await keep(found) : found;
  if (!hits.length) return [];
  // Which hits carry each unit, over all the query's matches (a label filter only narrows them).
  const ids = found.map((h) => h.id);
  const all = new Set(ids);
  // PostgreSQL says with each hit which units it matched (store/sql.ts `pgRank`): no statement per unit.
  const masked = found.every((h) => typeof h.unit_mask === "number");
  const units = await Promise.all(
    fts.units.map(async (u, i) => ({
      idf: weights[i],
      // One unit: every hit matched it.
      matching:
        fts.units.length === 1
          ? all
          : masked
            ? new Set(found.filter((h) => (h.unit_mask! & (2 ** i)) !== 0).map((h) => h.id))
            : await indexes.memoResult(
                account,
                `${m}-unit\u0000${key}\u0000${u}`,
                async () => await source.matching(u, ids),
              ),
    })),
  );
  const total = units.reduce((s, u) => s + u.idf, 0);
  const out: Candidate[] = [];
  for (const h of hits) {
    const score = total > 0 ? units.reduce((s, u) => s + (u.matching.has(h.id) ? u.idf : 0), 0) / total : 0;
    if (score < cut) continue;
    out.push({
      videoId: h.video_id,
      type: source.mode,
      mode: source.mode,
      start: h.start_secs,
      end: h.end_secs,
      score,
      raw: -h.bm25,
      thresholdKey: `${source.mode}:default`,
      text: h.text,
      shotIndex: null,
    });
  }
  return out;
}
