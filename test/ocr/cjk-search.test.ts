/**
 * On-screen text in scripts written without spaces is searchable (issue 28): the OCR index holds
 * Chinese, Japanese and Korean runs as character pairs (src/indexing/fts-text.ts, migration 012), so
 * a word is found inside a line. Latin lines are indexed as before: the same queries rank them
 * exactly as the transcript index (the tokenizer the OCR index had) ranks the same text.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFtsQuery } from "../../src/search/fts.ts";
import { ftsText } from "../../src/indexing/fts-text.ts";
import {
  addVideo,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  search,
  type SearchTestApp,
  segmentsOf,
  startSearchApp,
  type Tenant,
} from "../search/helpers.ts";

const box = { x: 0.1, y: 0.8, w: 0.5, h: 0.05 };
const line = (start: number, text: string) => ({ start, end: start + 2, text, confidence: 95, box });

const LATIN = [
  "Quarterly budget meeting",
  "Budget review: marketing doubled",
  "The runners were running through the park",
  "Deploying to production tomorrow",
  "Deployment pipeline is green",
  "Harbour lighthouse tour",
];

let t: SearchTestApp;
let a: Tenant;
let cjk: string;
/** A second app: BM25's statistics are the whole table's, so the Latin comparison has an index of its own. */
let latin: SearchTestApp;
let b: Tenant;

const shownIn = async (app: SearchTestApp, who: Tenant, query: string, modes: string) => {
  const { res, body } = await search(app, who.key, { query, modes, min_score: "0" });
  expect(res.status, query).toBe(200);
  return segmentsOf(body);
};
const shown = (query: string) => shownIn(t, a, query, "ocr");
const texts = async (query: string) => (await shown(query)).map((s) => s.text_content);

beforeAll(async () => {
  t = await startSearchApp({ embedder: new HandEmbedder({}) });
  a = await createTenant(t);
  const col = await createCollection(t, a.accountId, "Signs");
  cjk = await addVideo(t, a.accountId, col, { filename: "meeting.mp4", duration: 60 });
  await indexVideo(t, cjk, {
    ocr: [
      line(0, "季度预算会议"),
      line(4, "東京タワー展望台"),
      line(8, "서울 지하철 노선도"),
      line(12, "ABC公司 2024年报告"),
      line(16, "预订会议室"),
    ],
  });
  // The same Latin text as on-screen lines in one video and as what was said in another.
  latin = await startSearchApp({ embedder: new HandEmbedder({}) });
  b = await createTenant(latin);
  const lc = await createCollection(latin, b.accountId, "Talks");
  const said = await addVideo(latin, b.accountId, lc, { filename: "said.mp4", duration: 60 });
  const shownLatin = await addVideo(latin, b.accountId, lc, { filename: "shown.mp4", duration: 60 });
  await indexVideo(latin, said, { transcript: LATIN.map((text, i) => ({ start: i * 3, end: i * 3 + 2, text })) });
  await indexVideo(latin, shownLatin, { ocr: LATIN.map((text, i) => line(i * 3, text)) });
});
afterAll(async () => {
  await t?.close();
  await latin?.close();
});

describe("what the index holds and what a query becomes", () => {
  it("CJK runs become overlapping pairs and the run's last character; other text is unchanged", () => {
    expect(ftsText("季度预算会议")).toBe("季度 度预 预算 算会 会议 议");
    expect(ftsText("ABC公司 2024年报告")).toBe("ABC 公司 司 2024 年报 报告 告");
    expect(ftsText("東京タワー")).toBe("東京 京タ タワ ワー ー");
    for (const s of LATIN) expect(ftsText(s)).toBe(s);
  });

  it("a CJK word is the phrase of its pairs, one character a prefix; Latin queries are built as before", () => {
    expect(buildFtsQuery("预算", { cjk: true })?.match).toBe('"预算"');
    expect(buildFtsQuery("预算会议", { cjk: true })?.match).toBe('"预算 算会 会议"');
    expect(buildFtsQuery("预", { cjk: true })?.match).toBe('"预"*');
    for (const q of ["budget review", '"budget review"', "deploy*", "NEAR(x y) AND -z", "running"])
      expect(buildFtsQuery(q, { cjk: true }), q).toEqual(buildFtsQuery(q));
  });
});

describe("CJK on-screen text is searchable", () => {
  it("a word inside a line without spaces finds it (预算 in 季度预算会议), as an ocr segment", async () => {
    const segs = await shown("预算");
    expect(segs.map((s) => s.text_content)).toEqual(["季度预算会议"]);
    expect(segs[0]).toMatchObject({ type: "ocr", video_id: cjk, timestamp_start: 0, timestamp_end: 2 });
  });

  it("longer words, words at either end, one character, Japanese and Korean", async () => {
    expect(await texts("预算会议")).toEqual(["季度预算会议"]);
    expect(await texts("季度")).toEqual(["季度预算会议"]);
    expect((await texts("会议")).sort()).toEqual(["季度预算会议", "预订会议室"]);
    expect((await texts("预")).sort()).toEqual(["季度预算会议", "预订会议室"]);
    expect(await texts("议")).toContain("季度预算会议");
    expect(await texts("タワー")).toEqual(["東京タワー展望台"]);
    expect(await texts("展望台")).toEqual(["東京タワー展望台"]);
    expect(await texts("지하철")).toEqual(["서울 지하철 노선도"]);
  });

  it("Latin next to CJK is a word of its own; characters not in that order find nothing", async () => {
    expect(await texts("ABC")).toEqual(["ABC公司 2024年报告"]);
    expect(await texts("公司")).toEqual(["ABC公司 2024年报告"]);
    expect(await texts("年报告")).toEqual(["ABC公司 2024年报告"]);
    expect(await texts("算预")).toEqual([]);
    expect(await texts("会议预算")).toEqual([]);
  });
});

describe("Latin on-screen text keeps its behaviour and ranking", () => {
  for (const q of ["budget", "meetings", "running", "deploy*", '"budget review"', "harbour tour", "pipeline green"]) {
    it(`"${q}": the same lines, in the same order, with the same BM25 score as the transcript index gives`, async () => {
      const ocr = await shownIn(latin, b, q, "ocr");
      const said = await shownIn(latin, b, q, "transcript");
      expect(ocr.length, q).toBeGreaterThan(0);
      expect(ocr.map((s) => s.text_content)).toEqual(said.map((s) => s.text_content));
      ocr.forEach((s, i) => expect(s.raw_score).toBeCloseTo(said[i].raw_score, 9));
      expect(ocr.map((s) => s.score)).toEqual(said.map((s) => s.score));
    });
  }
});
