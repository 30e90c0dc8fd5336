import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
} from "./helpers.ts";

/** Transcript mode on known text: BM25 with phrases, porter stems and prefixes; hostile FTS syntax is just text. */
let t: SearchTestApp;
let a: Tenant;
let v1: string;
let v2: string;

const said = async (query: string, extra: Record<string, string> = {}) => {
  const { res, body } = await search(t, a.key, { query, modes: "transcript", ...extra });
  expect(res.status, query).toBe(200);
  return segmentsOf(body);
};
const texts = async (query: string) => (await said(query)).map((s) => s.text_content);

beforeAll(async () => {
  t = await startSearchApp({ embedder: new HandEmbedder({}) });
  a = await createTenant(t);
  const col = await createCollection(t, a.accountId, "Talks");
  v1 = await addVideo(t, a.accountId, col, { filename: "keynote.mp4", duration: 60 });
  v2 = await addVideo(t, a.accountId, col, { filename: "standup.mp4", duration: 60 });
  await indexVideo(t, v1, {
    transcript: [
      { start: 0, end: 4, text: "Welcome everyone to the quarterly budget review." },
      { start: 4, end: 9, text: "The runners were running through the park all morning." },
      { start: 9, end: 12, text: "Our budget for marketing doubled this year." },
      { start: 12, end: 15, text: "Marketing review follows after lunch." },
      { start: 15, end: 18, text: "He said NEAR the river AND the bridge." },
    ],
  });
  await indexVideo(t, v2, {
    transcript: [
      { start: 1, end: 3, text: "Quick status: the deployment pipeline is green." },
      { start: 3, end: 6, text: "Deploying to production tomorrow morning." },
    ],
  });
});

afterAll(async () => t?.close());

describe("transcript search", () => {
  it("finds a word, returns the segment's span and text, typed transcript", async () => {
    const segs = await said("quarterly");
    expect(segs).toHaveLength(1);
    expect(segs[0]).toMatchObject({
      type: "transcript",
      timestamp_start: 0,
      timestamp_end: 4,
      video_id: v1,
      threshold_key: "transcript:default",
      score: 1,
    });
    expect(segs[0].raw_score).toBeGreaterThan(0);
  });

  it("stems: 'run' finds running and runners", async () => {
    expect(await texts("run")).toEqual(["The runners were running through the park all morning."]);
    expect(await texts("reviews")).toEqual(
      expect.arrayContaining([
        "Welcome everyone to the quarterly budget review.",
        "Marketing review follows after lunch.",
      ]),
    );
  });

  it("quoted phrases match the words in order only", async () => {
    expect(await texts('"budget review"')).toEqual(["Welcome everyone to the quarterly budget review."]);
    expect(await texts('"review budget"')).toEqual([]);
  });

  it("prefix queries: deploy* finds deployment and deploying", async () => {
    const segs = await said("deploy*");
    expect(segs.map((s) => s.timestamp_start).sort()).toEqual([1, 3]);
    expect(new Set(segs.map((s) => s.video_id))).toEqual(new Set([v2]));
  });

  it("several words: segments with more of the query's weight score higher; ones with too little are cut", async () => {
    const segs = await said("marketing budget");
    const byText = Object.fromEntries(segs.map((s) => [s.text_content, s.score]));
    expect(byText["Our budget for marketing doubled this year."]).toBe(1);
    // Each of the others holds about half of the query's IDF weight (at or under the 0.5 cut).
    for (const s of segs)
      if (s.text_content !== "Our budget for marketing doubled this year.") expect(s.score).toBeGreaterThanOrEqual(0.5);
    expect(segs[0].text_content).toBe("Our budget for marketing doubled this year.");
  });

  it("no match is an empty result", async () => {
    expect(await said("zebra")).toEqual([]);
    expect(await said("!!! ???")).toEqual([]);
  });

  it("hostile FTS5 syntax never errors: it is searched as plain words", async () => {
    for (const q of [
      '"unbalanced',
      "NEAR(",
      "NEAR(river bridge, 2)",
      "river AND",
      "OR",
      "text:river",
      "^river",
      "-river",
      "river*)",
      '"" AND ""',
      "*",
      "(((",
      "col:* NOT",
      "'; DROP TABLE transcript_fts; --",
      "\u0000river",
    ]) {
      await said(q);
    }
    expect(await texts("NEAR(river")).toEqual(["He said NEAR the river AND the bridge."]);
    expect(await texts('"river bridge')).toEqual(["He said NEAR the river AND the bridge."]);
    expect(await texts("AND")).toEqual(["He said NEAR the river AND the bridge."]);
  });

  it("scoped to a video", async () => {
    expect((await said("morning", { video_id: v2 })).map((s) => s.timestamp_start)).toEqual([3]);
  });
});
