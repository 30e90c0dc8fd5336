import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addVideo,
  background,
  concept,
  createCollection,
  createTenant,
  HandEmbedder,
  indexVideo,
  near,
  rng,
  search,
  type SearchTestApp,
  segmentsOf,
  startSearchApp,
  type Tenant,
  unit,
  urlencoded,
} from "./helpers.ts";
import { metric } from "../helpers/app.ts";

/**
 * Hand-made vectors, through app.fetch: moments, fusion, calibration, facets, paging, hiding and
 * tenant isolation. Concept 0 is "red"; concept 15 is what unknown text maps to ("nothing").
 */
const RED = 0;

describe.each(["memory", "sqlite-vec"] as const)("%s vector backend", (backend) => {
  let t: SearchTestApp;
  let a: Tenant;
  let b: Tenant;
  let trips: string;
  let home: string;
  let v1: string;
  let v2: string;
  let v3: string;

  beforeAll(async () => {
    // The default is the in-memory index; the other backend answers from sqlite-vec (vec0 even for small scopes).
    t = await startSearchApp({
      embedder: new HandEmbedder({ red: concept(RED), beach: concept(1), nothing: concept(15) }),
      vectorBackend: backend,
    });
    a = await createTenant(t, "A");
    b = await createTenant(t, "B");
    trips = await createCollection(t, a.accountId, "Trips");
    home = await createCollection(t, a.accountId, "Home");
    const r = rng(7);

    // v1: 30 s, a frame a second, three shots. Red at 5-7 and 9 (8 is not red), 15-16 (strongest), 25.
    v1 = await addVideo(t, a.accountId, trips, { filename: "beach-day.mp4", duration: 30 });
    const strength: Record<number, number> = { 5: 0.9, 6: 0.92, 7: 0.9, 9: 0.9, 15: 0.97, 16: 0.96, 25: 0.85 };
    const frames = Array.from({ length: 30 }, (_, s) => ({
      timestamp: s,
      shotIndex: s < 10 ? 0 : s < 20 ? 1 : 2,
      embedding: strength[s] ? near(RED, strength[s], r) : background(r),
    }));
    const mean = (lo: number, hi: number) =>
      unit(frames.slice(lo, hi).reduce((acc, f) => acc.map((x, i) => x + f.embedding[i]), new Float32Array(64)));
    await indexVideo(t, v1, {
      frames,
      shots: [
        { shotIndex: 0, start: 0, end: 10, labels: [{ label: "car", score: 0.6 }], embedding: mean(0, 10) },
        {
          shotIndex: 1,
          start: 10,
          end: 20,
          labels: [
            { label: "beach", score: 0.7 },
            { label: "ocean", score: 0.2 },
          ],
          caption: "waves on a sunny beach",
          embedding: mean(10, 20),
        },
        { shotIndex: 2, start: 20, end: 30, labels: [{ label: "dog", score: 0.8 }], embedding: mean(20, 30) },
      ],
      transcript: [
        { start: 4, end: 7.5, text: "the red car drives away" },
        { start: 12, end: 14, text: "waves crash on the beach" },
        { start: 20, end: 22, text: "a dog is running after the ball" },
      ],
    });

    // v2 (other collection): frames 3-5 and 8-16 were dropped as near-duplicates. Red at 2 and 6
    // (consecutive frames, 4 s apart) → one moment; red at 17 is consecutive too but 11 s on → its own.
    v2 = await addVideo(t, a.accountId, home, { filename: "garden.mp4", duration: 20 });
    await indexVideo(t, v2, {
      frames: [0, 1, 2, 6, 7, 17, 18].map((s) => ({
        timestamp: s,
        embedding: [2, 6, 17].includes(s) ? near(RED, 0.88, r) : background(r),
      })),
      shots: [{ shotIndex: 0, start: 0, end: 20, labels: [{ label: "garden", score: 0.9 }], embedding: background(r) }],
    });

    // v3: a library of unrelated footage, so the account's null sample looks like real content.
    v3 = await addVideo(t, a.accountId, trips, { filename: "library.mp4", duration: 200 });
    await indexVideo(t, v3, {
      frames: Array.from({ length: 200 }, (_, s) => ({
        timestamp: s,
        shotIndex: Math.floor(s / 10),
        embedding: background(r),
      })),
      shots: Array.from({ length: 20 }, (_, i) => ({
        shotIndex: i,
        start: i * 10,
        end: i * 10 + 10,
        embedding: background(r),
      })),
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe("moments from frames", () => {
    it("merges adjacent matching frames into clips and splits at a non-matching frame", async () => {
      const { res, body } = await search(t, a.key, { query: "red", modes: "video", video_id: v1 });
      expect(res.status).toBe(200);
      const segs = segmentsOf(body);
      const spans = segs.map((s) => [s.timestamp_start, s.timestamp_end]).sort((x, y) => x[0] - y[0]);
      // 5-7 → [5, 8]; 9 alone (8 did not match) → [9, 10]; 15-16 → [15, 17]; 25 → [25, 26]
      expect(spans).toEqual([
        [5, 8],
        [9, 10],
        [15, 17],
        [25, 26],
      ]);
      for (const s of segs) {
        expect(s.type).toBe("frame");
        expect(s.threshold_key).toBe("video:default");
        expect(s.score).toBeGreaterThanOrEqual(0.5);
        expect(s.score).toBeLessThanOrEqual(1);
        expect(s.raw_score).toBeGreaterThan(0.8);
        expect(s.video_url).toMatch(
          new RegExp(
            `/media/videos/${v1}/source\\?expires=\\d+&signature=[0-9a-f]{64}#t=${s.timestamp_start},${s.timestamp_end}$`,
          ),
        );
        expect(s.hidden).toBe(false);
      }
      // Best first: the strongest frames (15-16) lead when only one mode runs.
      expect(body.data[0].segments[0].timestamp_start).toBe(15);
    });

    it("frames on either side of a near-duplicate gap are adjacent (consecutive in the frame list)", async () => {
      const { body } = await search(t, a.key, { query: "red", modes: "video", video_id: v2 });
      const segs = segmentsOf(body);
      expect(segs.map((s) => [s.timestamp_start, s.timestamp_end]).sort((x, y) => x[0] - y[0])).toEqual([
        [2, 7],
        [17, 18],
      ]);
    });

    it("an honest empty result when nothing matches", async () => {
      const { res, body } = await search(t, a.key, { query: "nothing at all" });
      expect(res.status).toBe(200);
      expect(body.data).toEqual([]);
      expect(body.meta.total).toBe(0);
      expect(body.meta.facets).toEqual({ scene_labels: {}, types: {} });
    });
  });

  describe("fusion, grouping and meta", () => {
    it("RRF lifts a moment that is both seen and said above a stronger one only seen", async () => {
      const { body } = await search(t, a.key, { query: "red", modes: ["video", "transcript"], video_id: v1 });
      const segs = body.data[0].segments;
      const said = segs.find((s: any) => s.type === "transcript");
      expect(said).toMatchObject({
        timestamp_start: 4,
        timestamp_end: 7.5,
        text_content: "the red car drives away",
        threshold_key: "transcript:default",
      });
      const at = (start: number) => segs.findIndex((s: any) => s.timestamp_start === start);
      expect(at(5)).toBeLessThan(at(15));
      expect(at(4)).toBeLessThan(at(15));
      // rank is the position in the fused list
      expect(segs.map((s: any) => s.rank)).toEqual(
        [...segs.map((s: any) => s.rank)].sort((x: number, y: number) => x - y),
      );
      expect(segs[0].rank).toBe(1);
    });

    it("groups by video, best first; meta.total counts videos; pages over videos; facets count segments", async () => {
      const all = await search(t, a.key, { query: "red", modes: ["video", "transcript"] });
      expect(all.body.meta).toMatchObject({ total: 2, page: 1, per_page: 10, modes: ["video", "transcript"] });
      expect(all.body.data.map((v: any) => v.video_id)).toEqual([v1, v2]);
      expect(all.body.data[0]).toMatchObject({ filename: "beach-day.mp4", collection_id: trips, status: "ready" });
      const types = segmentsOf(all.body).reduce(
        (m: Record<string, number>, s: any) => ({ ...m, [s.type]: (m[s.type] ?? 0) + 1 }),
        {},
      );
      expect(all.body.meta.facets.types).toEqual(types);
      expect(all.body.meta.facets.scene_labels).toMatchObject({ car: 3, beach: 1, ocean: 1, dog: 1, garden: 2 });

      const p2 = await search(t, a.key, { query: "red", modes: ["video", "transcript"], per_page: "1", page: "2" });
      expect(p2.body.meta).toMatchObject({ total: 2, page: 2, per_page: 1 });
      expect(p2.body.data.map((v: any) => v.video_id)).toEqual([v2]);
    });

    it("collection and video scopes", async () => {
      const inHome = await search(t, a.key, { query: "red", modes: "video", collection_id: home });
      expect(inHome.body.data.map((v: any) => v.video_id)).toEqual([v2]);
      const inTrips = await search(t, a.key, { query: "red", modes: "video", collection_id: trips });
      expect(inTrips.body.data.map((v: any) => v.video_id)).toEqual([v1]);
    });

    it("the labels filter keeps only clips inside shots with those labels", async () => {
      const { body } = await search(t, a.key, {
        query: "red",
        modes: ["video", "transcript"],
        labels: ["Beach", "nothing-like-this"],
      });
      const segs = segmentsOf(body);
      expect(segs.map((s) => [s.video_id, s.timestamp_start])).toEqual([[v1, 15]]);
    });

    it("default modes: scene matches labels and captions too", async () => {
      const { res, body } = await search(t, a.key, { query: "beach" });
      expect(res.status).toBe(200);
      expect(body.meta.modes).toEqual(["video", "scene", "transcript", "ocr"]);
      expect(body.meta.skipped_modes).toEqual({});
      const segs = segmentsOf(body);
      const scene = segs.find((s) => s.type === "scene");
      expect(scene).toMatchObject({
        timestamp_start: 10,
        timestamp_end: 20,
        text_content: "waves on a sunny beach",
        video_id: v1,
      });
      expect(["scene:default", "scene:text"]).toContain(scene.threshold_key);
      expect(segs.some((s) => s.type === "transcript" && s.text_content === "waves crash on the beach")).toBe(true);
    });

    it("per-query calibration: the same cut admits strong matches of every query and nothing else", async () => {
      // "red" frames score high; backgrounds (raw ≈ 0) stay far below the cut for both queries.
      const red = segmentsOf((await search(t, a.key, { query: "red", modes: "video" })).body);
      const beach = segmentsOf((await search(t, a.key, { query: "beach", modes: "video" })).body);
      expect(red.length).toBeGreaterThan(0);
      expect(red.every((s) => s.score >= 0.5)).toBe(true);
      expect(beach).toEqual([]);
    });

    it("min_score replaces every per-mode cut: 0 returns the best matches ranked, whatever their score", async () => {
      const beach = segmentsOf((await search(t, a.key, { query: "beach", modes: "video", min_score: "0" })).body);
      // Nothing passes the default cut for "beach" frames (above); with 0 the nearest come back, ranked.
      expect(beach.length).toBeGreaterThan(0);
      expect(beach.some((s) => s.score < 0.5)).toBe(true);
      expect(beach.map((s) => s.rank)).toEqual([...beach.map((s) => s.rank)].sort((x: number, y: number) => x - y));
      const byVideo = (await search(t, a.key, { query: "beach", min_score: "0" })).body;
      expect(byVideo.meta.total).toBeGreaterThanOrEqual(2);
      const strict = segmentsOf((await search(t, a.key, { query: "red", modes: "video", min_score: "0.9" })).body);
      const normal = segmentsOf((await search(t, a.key, { query: "red", modes: "video" })).body);
      expect(strict.every((s) => s.score >= 0.9)).toBe(true);
      const zero = segmentsOf((await search(t, a.key, { query: "red", modes: "video", min_score: "0" })).body);
      expect(strict.length).toBeLessThanOrEqual(normal.length);
      // With no cut every frame passes; a moment keeps the frames near its peak (not the whole 30 s
      // of v1), and the strongest one the default cut finds (15-17 s in v1) is still ranked first.
      expect(zero[0]).toMatchObject({ video_id: v1, timestamp_start: normal[0].timestamp_start, rank: 1 });
      expect(zero[0].timestamp_end - zero[0].timestamp_start).toBeLessThan(5);
      expect(zero[0].score).toBe(Math.max(...zero.map((z) => z.score)));
      // A transcript hit with half the query's words is under the default 0.5 only when min_score says so.
      const half = segmentsOf(
        (await search(t, a.key, { query: "red ball", modes: "transcript", min_score: "0" })).body,
      );
      expect(half.map((s) => s.text_content).sort()).toEqual([
        "a dog is running after the ball",
        "the red car drives away",
      ]);
      expect(
        segmentsOf((await search(t, a.key, { query: "red ball", modes: "transcript", min_score: "1" })).body),
      ).toEqual([]);
    });
  });

  describe("feedback", () => {
    const fb = (token: string, fields: Record<string, string>) => {
      const f = urlencoded(fields);
      return t.request("POST", "/v1/search/feedback", { token, body: f.body, headers: f.headers });
    };
    const thresholds = async () => await t.app.services.search.thresholds(a.accountId);

    it("down hides the segment (also from a read_only key), include_hidden shows it, DELETE restores it", async () => {
      const q = { query: "red", modes: "video", video_id: v1 };
      const before = segmentsOf((await search(t, a.key, q)).body);
      const target = before.find((s) => s.timestamp_start === 15)!;

      const res = await fb(a.readOnlyKey, {
        video_id: v1,
        timestamp_start: String(target.timestamp_start + 0.004),
        signal: "down",
        query: "red",
        raw_score: String(target.raw_score),
        threshold_key: target.threshold_key,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ data: null, meta: { request_id: expect.any(String) } });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.52, 6);

      const after = segmentsOf((await search(t, a.key, q)).body);
      expect(after.some((s) => s.timestamp_start === 15)).toBe(false);
      expect(after.length).toBe(before.length - 1);
      expect(after.map((s) => s.rank).sort()).toEqual(after.map((_, i) => i + 1));

      const withHidden = segmentsOf((await search(t, a.key, { ...q, include_hidden: "true" })).body);
      expect(withHidden.find((s) => s.timestamp_start === 15)).toMatchObject({ hidden: true });
      expect(withHidden.filter((s) => s.hidden).length).toBe(1);

      // Sending it again replaces it: the threshold moves one step per segment, not per click.
      await fb(a.key, { video_id: v1, timestamp_start: "15", signal: "down", threshold_key: "video:default" });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.52, 6);

      const del = await t.request("DELETE", `/v1/search/feedback?video_id=${v1}&timestamp_start=15`, {
        token: a.readOnlyKey,
      });
      expect(del.status).toBe(204);
      expect(await del.text()).toBe("");
      expect((await thresholds())["video:default"]).toBeCloseTo(0.5, 6);
      const restored = segmentsOf((await search(t, a.key, q)).body);
      expect(restored.find((s) => s.timestamp_start === 15)).toMatchObject({ hidden: false });
      // Clearing again is fine.
      expect(
        (await t.request("DELETE", `/v1/search/feedback?video_id=${v1}&timestamp_start=15`, { token: a.key })).status,
      ).toBe(204);
    });

    it("takes the same fields as JSON (what the dashboard's ▼ Hide sends), with the same effect", async () => {
      const q = { query: "red", modes: "video", video_id: v1, include_hidden: "true" };
      const target = segmentsOf((await search(t, a.key, q)).body).find((s) => s.timestamp_start === 15)!;
      const res = await t.request("POST", "/v1/search/feedback", {
        token: a.key,
        json: {
          video_id: v1,
          timestamp_start: target.timestamp_start,
          signal: "down",
          query: "red",
          raw_score: target.raw_score,
          threshold_key: target.threshold_key,
        },
      });
      expect(res.status, await res.clone().text()).toBe(200);
      const after = segmentsOf((await search(t, a.key, q)).body);
      expect(after.find((s) => s.timestamp_start === 15)).toMatchObject({ hidden: true });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.52, 6);
      await t.request("DELETE", `/v1/search/feedback?video_id=${v1}&timestamp_start=15`, { token: a.key });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.5, 6);
    });

    it("up lowers the named threshold; changing the signal swaps the step; bounded", async () => {
      await fb(a.key, { video_id: v1, timestamp_start: "5", signal: "up", threshold_key: "video:default" });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.48, 6);
      await fb(a.key, { video_id: v1, timestamp_start: "5", signal: "down", threshold_key: "video:default" });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.52, 6);
      await t.request("DELETE", `/v1/search/feedback?video_id=${v1}&timestamp_start=5`, { token: a.key });
      expect((await thresholds())["video:default"]).toBeCloseTo(0.5, 6);
      // Many segments pushing one way stop at the bound (transcript: +0.05 each, max 1).
      for (let s = 0; s < 12; s++)
        await fb(a.key, {
          video_id: v3,
          timestamp_start: String(s),
          signal: "down",
          threshold_key: "transcript:default",
        });
      expect((await thresholds())["transcript:default"]).toBe(1);
      for (let s = 0; s < 12; s++)
        await t.request("DELETE", `/v1/search/feedback?video_id=${v3}&timestamp_start=${s}`, { token: a.key });
      expect((await thresholds())["transcript:default"]).toBeCloseTo(0.5, 6);
    });

    it("422s: bad signal, missing or unmatched timestamp, unknown threshold key; 404 for another account's video", async () => {
      const bad = async (fields: Record<string, string>, loc: string) => {
        const res = await fb(a.key, fields);
        expect(res.status).toBe(422);
        const body = await res.json();
        expect(body.detail.map((d: any) => d.loc.join("."))).toContain(loc);
      };
      await bad({ video_id: v1, timestamp_start: "5", signal: "sideways" }, "body.signal");
      await bad({ video_id: v1, signal: "up" }, "body.timestamp_start");
      await bad({ video_id: v1, timestamp_start: "", signal: "up" }, "body.timestamp_start");
      await bad({ video_id: v1, timestamp_start: "5.5", signal: "up" }, "body.timestamp_start");
      await bad(
        { video_id: v1, timestamp_start: "5", signal: "up", threshold_key: "video:nope" },
        "body.threshold_key",
      );
      await bad(
        { video_id: v1, timestamp_start: "5", signal: "up", threshold_key: "DROP TABLE" },
        "body.threshold_key",
      );
      expect((await fb(b.key, { video_id: v1, timestamp_start: "5", signal: "down" })).status).toBe(404);
      expect(
        (await t.request("DELETE", `/v1/search/feedback?video_id=${v1}&timestamp_start=5`, { token: b.key })).status,
      ).toBe(404);
      expect((await t.request("DELETE", `/v1/search/feedback?video_id=${v1}`, { token: a.key })).status).toBe(422);
    });
  });

  describe("validation and isolation", () => {
    it("every invalid combination is a 422 with the field's loc", async () => {
      const cases: [Record<string, string | string[]>, string][] = [
        [{}, "body.query"],
        [{ query: "" }, "body.query"],
        [{ query: "   " }, "body.query"],
        [{ query: "red", modes: "pictures" }, "body.modes.0"],
        [{ query: "red", modes: ["video", "audio"] }, "body.modes.1"],
        [{ query: "red", per_page: "0" }, "body.per_page"],
        [{ query: "red", per_page: "51" }, "body.per_page"],
        [{ query: "red", page: "0" }, "body.page"],
        [{ query: "red", include_hidden: "maybe" }, "body.include_hidden"],
        [{ query: "red", image: "not-a-file" }, "body.image"],
        [{ query: "red", limit: "5" }, "body.limit"],
        [{ image_url: "http://example.invalid/x.png", modes: "transcript" }, "body.modes"],
        [{ query: "red", min_score: "1.5" }, "body.min_score"],
        [{ query: "red", min_score: "-0.1" }, "body.min_score"],
        [{ query: "red", min_score: "high" }, "body.min_score"],
      ];
      for (const [fields, loc] of cases) {
        const { res, body } = await search(t, a.key, fields);
        expect(res.status, JSON.stringify(fields)).toBe(422);
        expect(
          body.detail.map((d: any) => d.loc.join(".")),
          JSON.stringify(fields),
        ).toContain(loc);
      }
      // image together with image_url (multipart)
      const both = await search(
        t,
        a.key,
        { image: new Blob([new Uint8Array(10)], { type: "image/png" }), image_url: "http://example.com/a.png" },
        "multipart",
      );
      expect(both.res.status).toBe(422);
      expect(both.body.detail[0].loc).toEqual(["body", "image_url"]);
      // A JSON body is the same search since issue 22 (its 422s: test/search/search-contract.test.ts).
      const json = await t.request("POST", "/v1/search", {
        token: a.key,
        body: JSON.stringify({ query: "red" }),
        headers: { "content-type": "application/json" },
      });
      expect(json.status).toBe(200);
    });

    it("multipart and urlencoded give the same answer", async () => {
      const f = { query: "red", modes: ["video", "transcript"], collection_id: trips };
      const u = await search(t, a.key, f, "urlencoded");
      const m = await search(t, a.key, f, "multipart");
      expect(m.res.status).toBe(200);
      expect(segmentsOf(m.body).map((s) => [s.timestamp_start, s.type])).toEqual(
        segmentsOf(u.body).map((s) => [s.timestamp_start, s.type]),
      );
    });

    it("another account sees none of it: its ids are 404s, its searches find nothing", async () => {
      const mine = await search(t, b.key, { query: "red" });
      expect(mine.res.status).toBe(200);
      expect(mine.body.data).toEqual([]);
      const col = await search(t, b.key, { query: "red", collection_id: trips });
      expect(col.res.status).toBe(404);
      expect(col.body.detail.code).toBe("COLLECTION_NOT_FOUND");
      const vid = await search(t, b.key, { query: "red", video_id: v1 });
      expect(vid.res.status).toBe(404);
      expect(vid.body.detail.code).toBe("VIDEO_NOT_FOUND");
      expect((await search(t, a.key, { query: "red", collection_id: "col_doesnotexist" })).res.status).toBe(404);
      expect((await t.request("GET", `/v1/videos/${v1}/moment?timestamp=1`, { token: b.key })).status).toBe(404);
    });

    it("needs a credential", async () => {
      const f = urlencoded({ query: "red" });
      const res = await t.request("POST", "/v1/search", { body: f.body, headers: f.headers });
      expect(res.status).toBe(401);
    });
  });

  describe("index hooks", () => {
    it("re-indexing and deleting a video keep the vector index in step", async () => {
      const temp = await createCollection(t, a.accountId, "Temp");
      const v4 = await addVideo(t, a.accountId, temp, { duration: 5 });
      const r = rng(99);
      const red = () => [0, 1, 2].map((s) => ({ timestamp: s, embedding: near(RED, 0.95, r) }));
      const found = async () =>
        segmentsOf((await search(t, a.key, { query: "red", modes: "video", collection_id: temp })).body).map(
          (s) => s.video_id,
        );
      const rows = () => metric(t, "vsearch_search_index_vectors");
      const before = (await rows())!;
      await indexVideo(t, v4, { frames: red() });
      expect(await found()).toEqual([v4]);
      // The memory backend holds each row once: replaced rows leave, deleted videos leave.
      const held = backend === "memory" ? 3 : 0;
      expect(await rows()).toBe(before + held);
      await indexVideo(t, v4, { frames: [0, 1, 2].map((s) => ({ timestamp: s, embedding: background(r) })) });
      expect(await found()).toEqual([]);
      expect(await rows()).toBe(before + held);
      await indexVideo(t, v4, { frames: red() });
      expect(await found()).toEqual([v4]);
      expect((await t.request("DELETE", `/v1/videos/${v4}`, { token: a.key })).status).toBe(204);
      expect(await found()).toEqual([]);
      expect(await rows()).toBe(before);
      const all = segmentsOf((await search(t, a.key, { query: "red", modes: "video" })).body);
      expect(all.some((s) => s.video_id === v4)).toBe(false);
      expect(all.length).toBeGreaterThan(0);
    });
  });
});

describe("without an image-text model", () => {
  let t2: SearchTestApp;
  let c: Tenant;
  let vid: string;
  beforeAll(async () => {
    t2 = await startSearchApp({ embedder: new HandEmbedder({}, false) });
    c = await createTenant(t2);
    const col = await createCollection(t2, c.accountId, "Talks");
    vid = await addVideo(t2, c.accountId, col, { duration: 20 });
    await indexVideo(t2, vid, { transcript: [{ start: 1, end: 3, text: "the budget meeting starts now" }] });
  });
  afterAll(async () => t2?.close());

  it("defaulted modes are skipped with the reason in meta; transcript still answers", async () => {
    const { res, body } = await search(t2, c.key, { query: "budget" });
    expect(res.status).toBe(200);
    expect(body.meta.modes).toEqual(["transcript", "ocr"]);
    expect(Object.keys(body.meta.skipped_modes).sort()).toEqual(["scene", "video"]);
    expect(body.meta.skipped_modes.video).toMatch(/^MODEL_NOT_INSTALLED/);
    expect(segmentsOf(body).map((s) => s.text_content)).toEqual(["the budget meeting starts now"]);
  });

  it("with no speech model and no transcript, the transcript mode says which model is missing and how to install it", async () => {
    const empty = await createTenant(t2, "Empty");
    await createCollection(t2, empty.accountId, "Nothing yet");
    const { res, body } = await search(t2, empty.key, { query: "budget" });
    expect(res.status).toBe(200);
    expect(body.data).toEqual([]);
    // On-screen text needs no model: only it runs, and finds nothing here.
    expect(body.meta.modes).toEqual(["ocr"]);
    expect(body.meta.skipped_modes.transcript).toBe(
      "MODEL_NOT_INSTALLED: no speech model installed; fix: vsearch models pull whisper-tiny.en (air-gapped: vsearch models import <dir|tar> --role speech)",
    );
    expect(body.meta.skipped_modes.video).toBe(
      "MODEL_NOT_INSTALLED: no image-text model installed; fix: vsearch models pull clip-vit-base-patch32 (air-gapped: vsearch models import <dir|tar> --role image-text)",
    );
    const asked = await search(t2, empty.key, { query: "budget", modes: "transcript" });
    expect(asked.res.status).toBe(503);
    expect(asked.body.detail.code).toBe("MODEL_NOT_INSTALLED");
    expect(asked.body.detail.message).toContain("vsearch models pull whisper-tiny.en");
  });

  it("an explicitly requested mode is a 503 MODEL_NOT_INSTALLED; so is an image query", async () => {
    for (const fields of [
      { query: "budget", modes: "video" },
      { query: "budget", modes: ["transcript", "scene"] },
      { image_url: "http://example.com/x.png" },
    ]) {
      const { res, body } = await search(t2, c.key, fields);
      expect(res.status, JSON.stringify(fields)).toBe(503);
      expect(body.detail.code).toBe("MODEL_NOT_INSTALLED");
    }
  });
});
