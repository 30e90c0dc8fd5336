import { describe, expect, it } from "vitest";
import { parseRange } from "../../src/media-serving/range.ts";
import { calibrate, median, nullStats, scoreToZ, Z_CENTER, zToScore } from "../../src/search/calibration.ts";
import { meanNormalized, QueryEncoder } from "../../src/search/embedder.ts";
import { buildFtsQuery } from "../../src/search/fts.ts";
import { fuseModes, suppressDuplicates } from "../../src/search/fusion.ts";
import { readImageHeader } from "../../src/search/image-input.ts";
import { type Candidate, framesToMoments, temporalIou } from "../../src/search/moments.ts";
import { contentWords, coverage, stem } from "../../src/search/text-match.ts";
import { parseSearchRequest } from "../../src/search/schema.ts";
import { ValidationError } from "../../src/core/errors.ts";
import { addVideo, createCollection, createTenant, indexVideo, rng, startSearchApp, unit } from "./helpers.ts";

describe("FTS5 query sanitising", () => {
  it("re-emits every word as a quoted literal, keeps phrases and prefixes, ORs the units", () => {
    expect(buildFtsQuery("red car")).toEqual({ match: '"red" OR "car"', units: ['"red"', '"car"'] });
    expect(buildFtsQuery('say "budget review" now')?.units).toEqual(['"say"', '"budget review"', '"now"']);
    expect(buildFtsQuery("deploy* ru* a*")?.units).toEqual(['("deploy"* OR "deplo"*)', '"ru"*', '"a"']);
    expect(buildFtsQuery('"unbalanced quote')?.units).toEqual(['"unbalanced"', '"quote"']);
    expect(buildFtsQuery("NEAR(a b, 2) AND col:x ^y -z")?.units).toEqual([
      '"NEAR"',
      '"a"',
      '"b"',
      '"2"',
      '"AND"',
      '"col"',
      '"x"',
      '"y"',
      '"z"',
    ]);
    expect(buildFtsQuery("Café naïve 東京")?.units).toEqual(['"Café"', '"naïve"', '"東京"']);
    expect(buildFtsQuery('!!! *** ""')).toBeNull();
    expect(buildFtsQuery("a ".repeat(40) + "b")?.units.length).toBeLessThanOrEqual(16);
  });

  it("no input, however hostile, makes FTS5 throw", async () => {
    // Against the transcript index itself (its tokenizer, its content table), read through the store.
    const t = await startSearchApp();
    try {
      const { accountId } = await createTenant(t);
      const v = await addVideo(t, accountId, await createCollection(t, accountId, "c"));
      await indexVideo(t, v, { transcript: [{ start: 0, end: 2, text: "the quick brown fox deployed the budget" }] });
      const matches = async (m: string) => await t.stores.search.transcriptDocFreq(accountId, m);
      const r = rng(11);
      const alphabet = [
        '"',
        "*",
        "(",
        ")",
        ":",
        "^",
        "-",
        "+",
        "NEAR",
        "AND",
        "OR",
        "NOT",
        " ",
        "a",
        "fox",
        ",",
        "'",
        "{",
        "}",
        "\\",
        "\u0000",
        "é",
      ];
      for (let i = 0; i < 500; i++) {
        const q = Array.from(
          { length: 1 + Math.floor(r() * 12) },
          () => alphabet[Math.floor(r() * alphabet.length)],
        ).join("");
        const fts = buildFtsQuery(q);
        if (!fts) continue;
        expect(async () => await matches(fts.match), q).not.toThrow();
        for (const u of fts.units) expect(async () => await matches(u), q).not.toThrow();
      }
      expect(await matches(buildFtsQuery("deploying")!.match)).toBe(1);
    } finally {
      await t.close();
    }
  });
});

describe("HTTP Range", () => {
  it("parses single ranges and refuses what cannot be satisfied", () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: "full" });
    expect(parseRange("bytes=0-9", 100)).toEqual({ kind: "partial", start: 0, end: 9 });
    expect(parseRange("bytes=90-", 100)).toEqual({ kind: "partial", start: 90, end: 99 });
    expect(parseRange("bytes=-10", 100)).toEqual({ kind: "partial", start: 90, end: 99 });
    expect(parseRange("bytes=-1000", 100)).toEqual({ kind: "partial", start: 0, end: 99 });
    expect(parseRange("bytes=50-1000", 100)).toEqual({ kind: "partial", start: 50, end: 99 });
    expect(parseRange("BYTES = 1-2", 100)).toEqual({ kind: "partial", start: 1, end: 2 });
    expect(parseRange("bytes=100-", 100)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=-0", 100)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=0-", 0)).toEqual({ kind: "unsatisfiable" });
    for (const h of ["bytes=0-1,3-4", "bytes=5-1", "bytes=-", "bytes=x-1", "pages=1-2", "bytes=99999999999999999999-"])
      expect(parseRange(h, 100), h).toEqual({ kind: "full" });
  });
});

describe("image headers", () => {
  it("reads PNG and JPEG sizes; anything else is null", () => {
    const png = new Uint8Array(33);
    png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
    new DataView(png.buffer).setUint32(16, 640);
    new DataView(png.buffer).setUint32(20, 480);
    png.set([8, 2], 24); // 8-bit RGB
    expect(readImageHeader(png)).toEqual({ format: "png", width: 640, height: 480, bytesPerPixel: 3 });
    png.set([16, 6], 24); // 16-bit RGBA: 8 bytes a pixel once decoded
    expect(readImageHeader(png)?.bytesPerPixel).toBe(8);
    png.set([8, 5], 24); // no such colour type
    expect(readImageHeader(png)).toBeNull();
    // SOI, APP0 (len 16), SOF2 progressive: len 17, precision 8, height 0x0100, width 0x0200
    const jpg = Uint8Array.from([
      0xff,
      0xd8,
      0xff,
      0xe0,
      0,
      16,
      ...new Array(14).fill(0),
      0xff,
      0xc2,
      0,
      17,
      8,
      1,
      0,
      2,
      0,
      3,
    ]);
    expect(readImageHeader(jpg)).toEqual({ format: "jpeg", width: 512, height: 256, bytesPerPixel: 3 });
    expect(readImageHeader(Uint8Array.from([0xff, 0xd8, 0xff, 0xda, 0, 2]))).toBeNull();
    expect(readImageHeader(new TextEncoder().encode("GIF89a......"))).toBeNull();
    expect(readImageHeader(new Uint8Array(0))).toBeNull();
  });
});

describe("calibration", () => {
  it("the median selected in place is the middle of a sorted copy (odd, even, ties, NaN)", () => {
    const r = rng(27);
    const sorted = (xs: Float64Array) => {
      const s = Float64Array.from(xs).sort();
      const m = s.length >> 1;
      return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
    };
    for (let t = 0; t < 2000; t++) {
      const n = 1 + Math.floor(r() * 80);
      // Many ties (a few small integers) mixed with spread values.
      const xs = Float64Array.from({ length: n }, () => (r() < 0.4 ? Math.floor(r() * 4) : r() * 2 - 1));
      expect(median(Float64Array.from(xs))).toBe(sorted(xs));
    }
    expect(median(Float64Array.from([3, Number.NaN, 1, 2]))).toBe(sorted(Float64Array.from([3, Number.NaN, 1, 2])));
  });

  /** n vectors whose cosine with q is drawn around `mean` with spread `sd`. */
  function sampleAround(q: Float32Array, n: number, mean: number, sd: number, seed: number): Float32Array {
    const r = rng(seed);
    const d = q.length;
    const out = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      const c = Math.max(-0.99, Math.min(0.99, mean + sd * (r() + r() + r() - 1.5) * 2));
      const noise = unit(Float32Array.from({ length: d }, (_, k) => (k === 0 ? 0 : r() - 0.5)));
      for (let k = 0; k < d; k++) out[i * d + k] = q[k] * c + noise[k] * Math.sqrt(1 - c * c);
    }
    return out;
  }
  const q = unit(Float32Array.from({ length: 128 }, (_, k) => (k === 0 ? 1 : 0)));

  it("the same cut means the same across queries with different raw scales", () => {
    // Query A: unrelated content sits at cos 0.20; query B (a text close to everything) at 0.50.
    const a = nullStats(q, sampleAround(q, 1024, 0.2, 0.02, 1));
    const b = nullStats(q, sampleAround(q, 1024, 0.5, 0.05, 2));
    // A clear match for A (0.32) passes; B's typical content (0.55) does not, despite the larger raw score.
    expect(calibrate(0.32, a)).toBeGreaterThan(0.9);
    expect(calibrate(0.55, b)).toBeLessThan(0.2);
    // Equal z, equal score.
    expect(calibrate(a.mean + 4 * a.std, a)).toBeCloseTo(calibrate(b.mean + 4 * b.std, b), 10);
  });

  it("is robust to the matches inside the sample and falls back to the prior when there is none", () => {
    const clean = nullStats(q, sampleAround(q, 1000, 0.2, 0.02, 3));
    const mixed = new Float32Array(1000 * 128);
    mixed.set(sampleAround(q, 950, 0.2, 0.02, 3).subarray(0, 950 * 128));
    mixed.set(sampleAround(q, 50, 0.9, 0.01, 4), 950 * 128);
    const contaminated = nullStats(q, mixed);
    expect(Math.abs(contaminated.mean - clean.mean)).toBeLessThan(0.01);
    expect(contaminated.std).toBeLessThan(clean.std * 1.5);
    const empty = nullStats(q, new Float32Array(0));
    expect(empty).toMatchObject({ mean: 0, n: 0 });
    expect(empty.std).toBeCloseTo(Math.sqrt(1 / 128), 6);
  });

  it("maps z to (0, 1) monotonically with 0.5 at Z_CENTER", () => {
    expect(zToScore(Z_CENTER)).toBeCloseTo(0.5, 12);
    expect(zToScore(0)).toBeLessThan(0.02);
    expect(zToScore(6)).toBeGreaterThan(0.98);
    expect(scoreToZ(zToScore(4.2))).toBeCloseTo(4.2, 9);
  });
});

describe("moments and fusion", () => {
  const c = (o: Partial<Candidate>): Candidate => ({
    videoId: "v",
    type: "frame",
    mode: "video",
    start: 0,
    end: 1,
    score: 0.6,
    raw: 0.3,
    thresholdKey: "video:default",
    text: null,
    shotIndex: 0,
    ...o,
  });

  it("clip ends stop at the next sampled frame and at the end of the video", () => {
    const hits = [
      { videoId: "v", timestamp: 0, nextTimestamp: 0.4, shotIndex: 0, raw: 0.3, score: 0.7 },
      { videoId: "v", timestamp: 9.5, nextTimestamp: null, shotIndex: 1, raw: 0.4, score: 0.9 },
    ];
    const m = framesToMoments(hits, { intervalSecs: 1, durationOf: () => 9.8, thresholdKey: "video:default" });
    expect(m.map((x) => [x.start, x.end, x.score, x.shotIndex])).toEqual([
      [0, 0.4, 0.7, 0],
      [9.5, 9.8, 0.9, 1],
    ]);
  });

  it("a band (min_score) keeps each run's frames near its best and splits where the score dips", () => {
    // Ten adjacent frames, all passing a cut of 0: two peaks (at 2 and 7) with a dip between.
    const scores = [0.1, 0.35, 0.4, 0.33, 0.12, 0.1, 0.31, 0.38, 0.2, 0.05];
    const hits = scores.map((score, t) => ({
      videoId: "v",
      timestamp: t,
      nextTimestamp: t + 1,
      shotIndex: 0,
      raw: score,
      score,
    }));
    const whole = framesToMoments(hits, { intervalSecs: 1, durationOf: () => 10, thresholdKey: "video:default" });
    expect(whole.map((x) => [x.start, x.end, x.score])).toEqual([[0, 10, 0.4]]);
    const banded = framesToMoments(hits, {
      intervalSecs: 1,
      durationOf: () => 10,
      thresholdKey: "video:default",
      band: 0.1,
    });
    expect(banded.map((x) => [x.start, x.end, x.score])).toEqual([
      [1, 4, 0.4],
      [6, 8, 0.38],
    ]);
  });

  it("RRF: k = 60; overlap across lists counts as the same moment", () => {
    const lists = new Map<string, Candidate[]>([
      ["video", [c({ start: 10, end: 12, score: 0.9 }), c({ start: 30, end: 31, score: 0.8 })]],
      ["transcript", [c({ mode: "transcript", type: "transcript", start: 11, end: 14, score: 0.7 })]],
    ]);
    const fused = fuseModes(lists);
    const f = (start: number) => fused.find((x) => x.start === start)!.fused;
    expect(f(10)).toBeCloseTo(1 / 61 + 1 / 61, 12);
    expect(f(11)).toBeCloseTo(1 / 61 + 1 / 61, 12);
    expect(f(30)).toBeCloseTo(1 / 62, 12);
    expect(fused[fused.length - 1].start).toBe(30);
  });

  it("near-duplicates (same start, or IoU ≥ 0.7) of a better clip are dropped", () => {
    const kept = suppressDuplicates([
      { ...c({ start: 10, end: 20 }), fused: 3 },
      { ...c({ start: 10.005, end: 12, type: "transcript" }), fused: 2 },
      { ...c({ start: 11, end: 20 }), fused: 1.5 },
      { ...c({ start: 15, end: 25 }), fused: 1 },
      { ...c({ videoId: "w", start: 10, end: 20 }), fused: 0.5 },
    ]);
    expect(kept.map((k) => [k.videoId, k.start])).toEqual([
      ["v", 10],
      ["v", 15],
      ["w", 10],
    ]);
    expect(temporalIou({ start: 0, end: 10 }, { start: 5, end: 15 })).toBeCloseTo(1 / 3, 12);
  });
});

describe("query text", () => {
  it("stems and covers words for label/caption matching", () => {
    expect(["dogs", "running", "cities", "boxes", "walked"].map(stem)).toEqual(["dog", "run", "city", "box", "walk"]);
    expect(contentWords("A photo of the dogs running on a beach")).toEqual(["dog", "run", "beach"]);
    expect(coverage(["dog", "beach"], ["dog", "a dog on the sand"])).toBe(0.5);
    expect(coverage(["dog", "beach"], ["beach", "two dogs"])).toBe(1);
  });

  it("short queries go through the caption templates; vectors are averaged and normalised", () => {
    expect(QueryEncoder.prompts("red car")).toEqual([
      "red car",
      "a photo of red car.",
      "a video frame showing red car.",
    ]);
    expect(QueryEncoder.prompts("one two three four five six seven")).toEqual(["one two three four five six seven"]);
    const m = meanNormalized([Float32Array.from([1, 0]), Float32Array.from([0, 2])]);
    expect(m[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(m[1]).toBeCloseTo(Math.SQRT1_2, 6);
  });

  it("the query cache (lru-cache) evicts the least recently used text", async () => {
    const calls: string[] = [];
    const embedder = {
      available: () => true,
      modelId: () => "m",
      embedText: async (texts: string[]) => (calls.push(texts[0]), texts.map(() => Float32Array.from([1, 0]))),
      embedImageRgb: async () => Float32Array.from([1, 0]),
    };
    const q = new QueryEncoder(embedder, 2);
    await q.text("alpha beta gamma delta epsilon zeta eta");
    await q.text("b b b b b b b");
    await q.text("alpha beta gamma delta epsilon zeta eta");
    await q.text("c c c c c c c");
    expect([
      q.cached("alpha beta gamma delta epsilon zeta eta"),
      q.cached("b b b b b b b"),
      q.cached("c c c c c c c"),
    ]).toEqual([true, false, true]);
    expect(calls).toHaveLength(3);
  });
});

describe("the search request is validated once, by one schema (HTTP form and CLI options)", () => {
  const issues = (input: Record<string, unknown>) => {
    try {
      parseSearchRequest(input);
      return [];
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      return (e as ValidationError).issues.map((i) => `${i.loc.join(".")}:${i.type}`);
    }
  };
  it("field rules come from searchFormSchema; the rules across fields are the service's (search.test.ts)", () => {
    expect(issues({ query: "  " })).toEqual(["body.query:string_too_short"]);
    expect(issues({ query: "red", per_page: "51" })).toEqual(["body.per_page:less_than_equal"]);
    expect(issues({ query: "red", min_score: "2" })).toEqual(["body.min_score:less_than_equal"]);
    expect(issues({ query: "red", image: "not a file" })).toEqual(["body.image:value_error"]);
    expect(issues({})).toEqual([]); // "one of query, image or image_url" is checked once, by SearchService
  });
  it("a valid form becomes the service's request, defaults filled", () => {
    expect(parseSearchRequest({ query: " red ", modes: "video", page: "2" })).toEqual({
      query: "red",
      image: undefined,
      imageUrl: undefined,
      collectionId: undefined,
      videoId: undefined,
      modes: ["video"],
      labels: undefined,
      page: 2,
      perPage: 10,
      minScore: undefined,
      includeHidden: false,
      includeThumbnailBase64: false,
      exact: false,
    });
    expect(parseSearchRequest({ query: "red", exact: "yes" }).exact).toBe(true);
    expect(() => parseSearchRequest({ query: "red", exact: "maybe" })).toThrow(ValidationError);
  });
});
