/**
 * Full-text search on both backends (issue 25): FTS5 (`porter unicode61 remove_diacritics 2`) on
 * the embedded store, a generated tsvector + GIN (`vs_english`: unaccent + snowball, no stop words)
 * on PostgreSQL. The same queries — built by search/fts.ts, as search builds them — must find the
 * same rows: words in any case or accent, stems, phrases (in order, adjacent), prefixes, CJK pairs
 * in on-screen text, stop words kept, and nothing from query syntax. Only the order inside a hit
 * list may differ (BM25 against the IDF-weighted rank of store/sql.ts `pgRank`): the calibrated
 * score does not come from it, and a list cut at LEXICAL_K keeps the rows with the rare words on both.
 */
import { describe, expect, test } from "vitest";
import { IndexStore } from "../../../src/indexing/store.ts";
import { buildFtsQuery } from "../../../src/search/fts.ts";
import { OcrSearchStore } from "../../../src/search/ocr-store.ts";
import { SearchStore } from "../../../src/search/store.ts";
import { ftsToTsquery } from "../../../src/store/fts-tsquery.ts";
import { BACKENDS, type OpenedBackend } from "./backends.ts";
import { newTenant, newVideo } from "./store-fixtures.ts";

const SEGMENTS = [
  "The quarterly budget meeting starts at nine",
  "Deployment of the new café menu was postponed",
  "We are deploying to production tonight",
  "Running late: the meeting moved",
  "Budget cuts hit the research team",
  "to be or not to be",
  "Crème brûlée for dessert",
  "meeting budget review",
];
const OCR = ["EXIT 12", "预算会议 下午三点", "Quarterly budget: Q3", "Café Noir"];

/** Transcript queries and on-screen-text queries, as users type them. */
const TRANSCRIPT_QUERIES = [
  "budget",
  "BUDGET meetings",
  '"budget meeting"',
  '"meeting budget"',
  "deploy*",
  "cafe",
  "creme brulee",
  "to be",
  "run",
  "research OR NEAR(team",
  "'; DROP TABLE transcript_segments; --",
  "nothing-matches-this",
];
const OCR_QUERIES = ["exit", "预算", "会议", "预", "quarterly", "café", "noir*", "q3"];

async function seeded(b: OpenedBackend) {
  const t = await newTenant(b);
  const videoId = await newVideo(b, t, { has_audio: 1 });
  const scope = { videoId, accountId: t.account, collectionId: t.collection };
  const index = new IndexStore(b.exec, false);
  await index.replaceTranscript(
    scope,
    SEGMENTS.map((text, i) => ({ start: i, end: i + 1, text })),
    "whisper-a",
  );
  await index.replaceOcrLines(
    scope,
    OCR.map((text, i) => ({ start: i, end: i + 1, text, confidence: 0.9, box: { x: 0, y: i, w: 1, h: 1 } })),
  );
  return { scope: { accountId: t.account, collectionId: t.collection }, videoId };
}

/** Each query's hits as the texts found (ids differ between stores), sorted: the set, not the order. */
async function hitTexts(b: OpenedBackend) {
  const { scope } = await seeded(b);
  const search = new SearchStore(b.exec);
  const ocr = new OcrSearchStore(b.exec);
  const out: Record<string, { hits: string[]; docFreq: number[] }> = {};
  for (const q of TRANSCRIPT_QUERIES) {
    const fts = buildFtsQuery(q);
    if (!fts) continue;
    const hits = await search.transcriptSearch(scope, fts.match, 50);
    const docFreq = await Promise.all(fts.units.map((u) => search.transcriptDocFreq(scope.accountId, u)));
    out[`t:${q}`] = { hits: hits.map((h) => h.text).sort(), docFreq };
  }
  for (const q of OCR_QUERIES) {
    const fts = buildFtsQuery(q, { cjk: true });
    if (!fts) continue;
    const hits = await ocr.search(scope, fts.match, 50);
    const docFreq = await Promise.all(fts.units.map((u) => ocr.docFreq(scope.accountId, u)));
    out[`o:${q}`] = { hits: hits.map((h) => h.text).sort(), docFreq };
  }
  return out;
}

const results = new Map<string, Awaited<ReturnType<typeof hitTexts>>>();

describe.each(BACKENDS)("full-text search on $name", (backend) => {
  const it = test.skipIf(!backend.available());

  it("finds what a user expects: stems, accents, phrases in order, prefixes, stop words, CJK pairs", async () => {
    const b = await backend.open();
    const r = await hitTexts(b);
    results.set(backend.name, r);
    expect(r["t:budget"].hits).toEqual([SEGMENTS[4], SEGMENTS[7], SEGMENTS[0]].sort());
    expect(r["t:BUDGET meetings"].hits).toEqual([SEGMENTS[0], SEGMENTS[3], SEGMENTS[4], SEGMENTS[7]].sort());
    // A phrase: adjacent and in order.
    expect(r['t:"budget meeting"'].hits).toEqual([SEGMENTS[0]]);
    expect(r['t:"meeting budget"'].hits).toEqual([SEGMENTS[7]]);
    expect(r["t:deploy*"].hits).toEqual([SEGMENTS[1], SEGMENTS[2]].sort());
    expect(r["t:cafe"].hits).toEqual([SEGMENTS[1]]);
    expect(r["t:creme brulee"].hits).toEqual([SEGMENTS[6]]);
    // Stop words are words: "to" alone finds a row (PostgreSQL's built-in english would drop it).
    expect(r["t:to be"].hits).toEqual([SEGMENTS[2], SEGMENTS[5]].sort());
    expect(r["t:run"].hits).toEqual([SEGMENTS[3]]);
    // Query syntax is words: "OR" finds "to be or not to be".
    expect(r["t:research OR NEAR(team"].hits).toEqual([SEGMENTS[4], SEGMENTS[5]].sort());
    expect(r["t:'; DROP TABLE transcript_segments; --"].hits).toEqual([]);
    expect(r["t:nothing-matches-this"].hits).toEqual([]);
    expect(r["o:exit"].hits).toEqual(["EXIT 12"]);
    expect(r["o:预算"].hits).toEqual([OCR[1]]);
    expect(r["o:会议"].hits).toEqual([OCR[1]]);
    expect(r["o:预"].hits).toEqual([OCR[1]]);
    expect(r["o:café"].hits).toEqual([OCR[3]]);
    expect(r["o:noir*"].hits).toEqual([OCR[3]]);
    expect(r["o:q3"].hits).toEqual([OCR[2]]);
  });

  it("which rows of a list match one unit (the per-unit coverage query)", async () => {
    const b = await backend.open();
    const { scope } = await seeded(b);
    const search = new SearchStore(b.exec);
    const all = await search.transcriptSearch(scope, buildFtsQuery("budget meeting")!.match, 50);
    const ids = all.map((h) => h.id);
    const budget = await search.transcriptMatching(buildFtsQuery("budget")!.match, ids);
    expect(
      all
        .filter((h) => budget.has(h.id))
        .map((h) => h.text)
        .sort(),
    ).toEqual([SEGMENTS[4], SEGMENTS[7], SEGMENTS[0]].sort());
    // Hits come best first: a lower bm25 (FTS5) or a higher ts_rank (PostgreSQL) first.
    for (let i = 1; i < all.length; i++) expect(all[i].bm25).toBeGreaterThanOrEqual(all[i - 1].bm25);
    // Searched with its units, PostgreSQL marks on each hit which units it holds (store/sql.ts
    // pgRank): the same rows as the per-unit query, for a word, a phrase and a prefix alike.
    const fts = buildFtsQuery('research "budget meeting" deploy* zzzunknown')!;
    const ranked = await search.transcriptSearch(
      scope,
      fts.match,
      50,
      fts.units.map((match) => ({ match, weight: 1 })),
    );
    expect(ranked.length).toBeGreaterThan(0);
    const ocr = new OcrSearchStore(b.exec);
    const ocrFts = buildFtsQuery("exit café 预算", { cjk: true })!;
    const ocrRanked = await ocr.search(
      scope,
      ocrFts.match,
      50,
      ocrFts.units.map((match) => ({ match, weight: 1 })),
    );
    expect(ocrRanked.length).toBeGreaterThan(0);
    if (backend.name !== "postgres") return;
    for (const [hits, units, matching] of [
      [ranked, fts.units, (u: string, ids: number[]) => search.transcriptMatching(u, ids)],
      [ocrRanked, ocrFts.units, (u: string, ids: number[]) => ocr.matching(u, ids)],
    ] as const) {
      const ids = hits.map((h) => h.id);
      for (const [i, u] of units.entries()) {
        const want = await matching(u, ids);
        const marked = hits.filter((h) => ((h.unit_mask ?? 0) & (2 ** i)) !== 0).map((h) => h.id);
        expect(new Set(marked)).toEqual(want);
      }
      expect(hits.every((h) => typeof h.unit_mask === "number" && h.unit_mask > 0)).toBe(true);
    }
  });
});

describe.each(BACKENDS)("a cut hit list on $name", (backend) => {
  test.skipIf(!backend.available())(
    "keeps the rows with the rare word: an OR query with a common word is ranked by the words' rarity",
    async () => {
      const b = await backend.open();
      const t = await newTenant(b);
      const videoId = await newVideo(b, t, { has_audio: 1 });
      const scope = { videoId, accountId: t.account, collectionId: t.collection };
      const texts = [
        ...Array.from({ length: 40 }, (_, i) => `weather ${i}`),
        // Long, and without the common word: ts_rank alone ranks it below every short "weather" row.
        "later that day a large silver zeppelin drifted slowly over the old harbour town",
      ];
      await new IndexStore(b.exec, false).replaceTranscript(
        scope,
        texts.map((text, i) => ({ start: i, end: i + 1, text })),
        "whisper-a",
      );
      const search = new SearchStore(b.exec);
      const fts = buildFtsQuery("weather zeppelin")!;
      const n = await search.transcriptCount(t.account);
      // As search/lexical-mode.ts weighs the units.
      const idf = (df: number) => Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const units = await Promise.all(
        fts.units.map(async (u) => ({ match: u, weight: idf(await search.transcriptDocFreq(t.account, u)) })),
      );
      const top = await search.transcriptSearch({ accountId: t.account }, fts.match, 5, units);
      expect(top).toHaveLength(5);
      expect(top[0].text).toContain("zeppelin");
    },
  );
});

test.skipIf(!BACKENDS.every((b) => b.available()))("both backends find the same rows for every query", () => {
  const sqlite = results.get("sqlite");
  const pg = results.get("postgres");
  expect(sqlite && pg).toBeTruthy();
  expect(pg).toEqual(sqlite);
});

describe("FTS5 expressions as tsquery text", () => {
  test("words, phrases, prefixes and alternatives; quotes and syntax never leak", () => {
    expect(ftsToTsquery(buildFtsQuery("budget meeting")!.match)).toBe("'budget' | 'meeting'");
    expect(ftsToTsquery(buildFtsQuery('"budget meeting" notes')!.match)).toBe("('budget' <-> 'meeting') | 'notes'");
    expect(ftsToTsquery(buildFtsQuery("deploy*")!.match)).toBe("'deploy':* | 'deplo':*");
    expect(ftsToTsquery(buildFtsQuery("预算", { cjk: true })!.match)).toBe("'预算'");
    expect(ftsToTsquery('"it""s"')).toBe("('it' <-> 's')");
    expect(ftsToTsquery(buildFtsQuery("a:b & !c | d")!.match)).toBe("'a' | 'b' | 'c' | 'd'");
    expect(ftsToTsquery('"" OR ""')).toBeNull();
  });
});
