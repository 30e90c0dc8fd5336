/**
 * The indexed content's stores on both backends (issue 25): IndexStore's writes and reads (no
 * vec0 tables: sqlite-vec is the embedded store's alone), SearchStore's reads other than
 * full-text search and vec0 KNN, FeedbackStore, VectorChangeStore and SystemStore, each giving
 * the same answers on the embedded SQLite store and on PostgreSQL. Exact vectors come back as the
 * same little-endian float32 bytes on both (blobs on SQLite, pgvector on PostgreSQL).
 */
import { describe, expect, test } from "vitest";
import { type ShotInput, IndexStore, toFloat32 } from "../../../src/indexing/store.ts";
import { AccountStore } from "../../../src/accounts/store.ts";
import { FeedbackStore } from "../../../src/search/feedback-store.ts";
import { SearchStore } from "../../../src/search/store.ts";
import { VectorChangeStore } from "../../../src/search/vector-change-store.ts";
import { SystemStore } from "../../../src/system/store.ts";
import { VideoStore } from "../../../src/videos/store.ts";
import { BACKENDS, type OpenedBackend } from "./backends.ts";
import { newTenant, newVideo, type Tenant } from "./store-fixtures.ts";

const vec = (seed: number, dim = 8) => Float32Array.from({ length: dim }, (_, i) => Math.sin(seed * 7.3 + i) / 3);
const shot = (
  i: number,
  labels: string[],
  embedding: Float32Array | null,
  caption: string | null = null,
): ShotInput => ({
  shotIndex: i,
  start: i * 2,
  end: i * 2 + 2,
  keyframe: i * 2 + 1,
  thumbnailPath: `/t/${i}.jpg`,
  labels: labels.map((label) => ({ label, score: 0.9 })),
  caption,
  embedding,
});

/** A ready video with 3 shots (two with vectors), 4 frames, 2 transcript segments, 1 OCR line. */
async function indexedVideo(b: OpenedBackend, t: Tenant, model = "clip-a") {
  const videoId = await newVideo(b, t, { has_audio: 1 });
  const scope = { videoId, accountId: t.account, collectionId: t.collection };
  const index = new IndexStore(b.exec, false);
  const frameIds = await index.replaceFrames(
    scope,
    [0, 1, 2, 3].map((i) => ({ shotIndex: i >> 1, timestamp: i * 1.5, embedding: vec(i) })),
    model,
  );
  const shotIds = await index.replaceShots(
    scope,
    [shot(0, ["Dog", "beach"], vec(10)), shot(1, ["cat"], vec(11), "a cat"), shot(2, [], null)],
    model,
  );
  await index.replaceTranscript(
    scope,
    [
      { start: 0, end: 2, text: "hello there" },
      { start: 2, end: 4, text: "general kenobi" },
    ],
    "whisper-a",
  );
  await index.replaceOcrLines(scope, [
    { start: 1, end: 3, text: "EXIT", confidence: 0.9, box: { x: 1, y: 2, w: 3, h: 4 } },
  ]);
  return { videoId, scope, frameIds, shotIds };
}

describe.each(BACKENDS)("content stores on $name", (backend) => {
  const it = test.skipIf(!backend.available());

  it("IndexStore: rows replaced, spans, frames with vectors, model coverage and stale videos", async () => {
    const b = await backend.open();
    const t = await newTenant(b);
    const { videoId, scope, frameIds } = await indexedVideo(b, t);
    const index = new IndexStore(b.exec, false);
    expect(await index.shotSpans(videoId)).toEqual([
      { index: 0, start: 0, end: 2 },
      { index: 1, start: 2, end: 4 },
      { index: 2, start: 4, end: 6 },
    ]);
    expect(await index.framesOf(videoId)).toEqual(
      frameIds.map((id, i) => ({ id, timestamp: i * 1.5, shot_index: i >> 1, model_id: "clip-a", has_vector: true })),
    );
    // Replacing drops the earlier rows (and their vectors, by cascade).
    const again = await index.replaceFrames(scope, [{ shotIndex: 0, timestamp: 0, embedding: vec(5) }], "clip-b");
    expect((await index.framesOf(videoId)).map((f) => [f.id, f.model_id])).toEqual([[again[0], "clip-b"]]);
    expect(await new VideoStore(b.exec).segmentsCount(videoId)).toBe(1 + 3 + 2 + 1);
    await index.deleteVideoVectors(videoId); // no vec0 tables: nothing to do, and no error

    const other = await newVideo(b, t, {
      has_audio: 0,
      stages: JSON.stringify({ embeddings: { model_id: "clip-b" } }),
    });
    const coverage = await index.modelCoverage({ imageText: "clip-b", speech: "whisper-b" }, t.account);
    expect(coverage).toEqual({
      "image-text": { without: [], stale: [] },
      speech: { without: [], stale: [videoId] },
    });
    const none = await index.modelCoverage({ imageText: "clip-c", speech: null }, t.account);
    expect(none["image-text"].stale).toEqual([videoId, other].sort());
    expect(await index.staleVideos({ imageText: "clip-b", speech: "whisper-b" }, t.account)).toEqual([videoId]);
    expect(await index.staleVideos({ imageText: "clip-b", speech: "whisper-b" })).toContain(videoId);
  });

  it("SearchStore: videos, vectors byte for byte, index rows in pages, counts and filters", async () => {
    const b = await backend.open();
    const t = await newTenant(b);
    const { videoId, frameIds, shotIds } = await indexedVideo(b, t);
    const s = new SearchStore(b.exec);
    const scope = { accountId: t.account };
    expect([...(await s.videos(t.account, [videoId, "vid_x"])).keys()]).toEqual([videoId]);
    expect(await s.accountOfVideo(videoId)).toBe(t.account);
    expect(await s.existingVideoIds([videoId, "vid_x"])).toEqual(new Set([videoId]));
    expect(await s.vectorIds("frames", t.account, "clip-a")).toEqual(frameIds);
    expect(await s.vectorIds("shots", t.account, "clip-a")).toEqual(shotIds.slice(0, 2));
    const vectors = await s.vectors("frames", [...frameIds].reverse());
    expect(frameIds.map((id) => Array.from(toFloat32(vectors.get(id)!)))).toEqual(
      [0, 1, 2, 3].map((i) => Array.from(vec(i))),
    );
    expect(Array.from(toFloat32((await s.vectors("shots", [shotIds[1]!])).get(shotIds[1]!)!))).toEqual(
      Array.from(vec(11)),
    );
    const inScope = await s.vectorsInScope("frames", { ...scope, videoId }, "clip-a");
    expect(inScope.map((r) => [r.id, Array.from(toFloat32(r.embedding))])).toEqual(
      frameIds.map((id, i) => [id, Array.from(vec(i))]),
    );
    const paged = [];
    for await (const r of s.rowsForIndex("frames", scope, "clip-a", 3)) paged.push(r);
    expect(paged.map((r) => [r.id, r.video_id, r.collection_id])).toEqual(
      frameIds.map((id) => [id, videoId, t.collection]),
    );
    expect(Array.from(toFloat32(paged[3]!.embedding))).toEqual(Array.from(vec(3)));
    const after = await s.indexRowsAfter("shots", shotIds[0]! - 1, 10);
    expect(after.filter((r) => r.video_id === videoId).map((r) => [r.id, r.model_id])).toEqual([
      [shotIds[0], "clip-a"],
      [shotIds[1], "clip-a"],
    ]);
    const ofVideo = await s.indexRowsOfVideo("frames", videoId);
    expect(ofVideo.map((r) => Array.from(toFloat32(r.embedding)))).toEqual([0, 1, 2, 3].map((i) => Array.from(vec(i))));
    expect(await s.lastIndexRowId("frames")).toBeGreaterThanOrEqual(frameIds[3]!);
    expect(await s.lastIndexRowIdOf("shots", t.account, "clip-a")).toBe(shotIds[1]);
    expect(await s.lastIndexRowIdOf("shots", t.account, "clip-z")).toBe(0);
    expect(await s.countInScope("frames", scope, "clip-a")).toBe(4);
    expect(await s.countInScope("shots", { ...scope, collectionId: t.collection }, "clip-a")).toBe(2);
    expect(await s.filterIds("frames", [...frameIds, 999_999], { ...scope, videoId }, "clip-a")).toEqual(
      new Set(frameIds),
    );
    expect(await s.idsInShots("frames", new Map([[videoId, new Set([1])]]))).toEqual(new Set(frameIds.slice(2)));
  });

  it("SearchStore: frames, shots, labels from JSON, vocabulary, transcript spans, segment starts", async () => {
    const b = await backend.open();
    const t = await newTenant(b);
    const { videoId, frameIds, shotIds } = await indexedVideo(b, t);
    const s = new SearchStore(b.exec);
    const scope = { accountId: t.account };
    expect((await s.frames([frameIds[1]!, frameIds[3]!])).sort((x, y) => x.id - y.id)).toEqual([
      { id: frameIds[1], video_id: videoId, timestamp: 1.5, shot_index: 0, next_timestamp: 3 },
      { id: frameIds[3], video_id: videoId, timestamp: 4.5, shot_index: 1, next_timestamp: null },
    ]);
    expect((await s.shotsById([shotIds[1]!]))[0]).toMatchObject({
      shot_index: 1,
      caption: "a cat",
      labels: '[{"label":"cat","score":0.9}]',
    });
    expect((await s.shotsOfVideos([videoId])).get(videoId)!.map((r) => r.shot_index)).toEqual([0, 1, 2]);
    expect(await s.shotsWithLabels(scope, ["DOG", "cat", "none"])).toEqual(new Map([[videoId, new Set([0, 1])]]));
    expect(await s.shotsWithLabels({ ...scope, videoId: "vid_x" }, ["dog"])).toEqual(new Map());
    const vocab = await s.sceneVocabulary(t.account);
    expect({ ...vocab, labels: vocab.labels.sort() }).toEqual({ labels: ["beach", "cat", "dog"], captions: 1 });
    expect((await s.shotAt(videoId, 2))!.shot_index).toBe(1);
    expect((await s.shotByIndex(videoId, 2))!.id).toBe(shotIds[2]);
    expect(await s.transcriptOverlapping(videoId, 1, 3)).toEqual([
      { start_secs: 0, end_secs: 2, text: "hello there" },
      { start_secs: 2, end_secs: 4, text: "general kenobi" },
    ]);
    expect(await s.segmentStartsAt(videoId, 4.5)).toBe(true); // a frame
    expect(await s.segmentStartsAt(videoId, 1.005)).toBe(true); // the OCR line
    expect(await s.segmentStartsAt(videoId, 0.7)).toBe(false);
  });

  it("FeedbackStore: nearest feedback within tolerance, hidden starts, thresholds upserted", async () => {
    const b = await backend.open();
    const t = await newTenant(b);
    const videoId = await newVideo(b, t);
    const s = new FeedbackStore(b.exec);
    expect(await s.lockAccount(t.account)).toBe(true);
    const at = new Date().toISOString();
    const row = {
      account_id: t.account,
      video_id: videoId,
      query: "q",
      raw_score: 0.3,
      threshold_key: "k",
      created_at: at,
      updated_at: at,
    };
    await s.insertFeedback({ ...row, timestamp_start: 1.5, signal: "down", threshold_delta: -0.01 });
    await s.insertFeedback({ ...row, timestamp_start: 4, signal: "up", threshold_delta: 0.01 });
    const found = (await s.findFeedback(t.account, videoId, 1.505))!;
    expect(found).toMatchObject({ timestamp_start: 1.5, signal: "down", raw_score: 0.3 });
    expect(await s.findFeedback(t.account, videoId, 1.52)).toBeNull();
    expect(await s.hiddenStarts(t.account, [videoId])).toEqual(new Map([[videoId, [1.5]]]));
    await s.updateFeedback(found.id, {
      signal: "up",
      query: null,
      raw_score: null,
      threshold_key: null,
      threshold_delta: 0,
      updated_at: at,
    });
    expect(await s.hiddenStarts(t.account, [videoId])).toEqual(new Map());
    await s.deleteFeedback(found.id);
    expect(await s.findFeedback(t.account, videoId, 1.5)).toBeNull();
    await s.upsertThreshold(t.account, "k", 0.25, 1, 0, at);
    await s.upsertThreshold(t.account, "k", 0.5, 2, 1, at);
    expect(await s.thresholds(t.account)).toEqual(new Map([["k", { key: "k", value: 0.5, ups: 2, downs: 1 }]]));
  });

  it("VectorChangeStore and SystemStore: the change log, counts, orphans, tables naming an id", async () => {
    const b = await backend.open();
    const changes = new VectorChangeStore(b.exec);
    const system = new SystemStore(b.exec);
    const before = await changes.current();
    expect(await changes.databaseId()).toMatch(/\S{8,}/);
    const t = await newTenant(b);
    const counts0 = await system.counts();
    const { videoId } = await indexedVideo(b, t);
    const seq = await changes.of(videoId);
    expect(seq).toBeGreaterThan(before);
    expect(await changes.current()).toBeGreaterThanOrEqual(seq);
    expect((await changes.after(before)).map((r) => [r.video_id, r.account_id])).toContainEqual([videoId, t.account]);
    const counts = await system.counts();
    expect(counts.videos - counts0.videos).toBe(1);
    expect(counts.frames - counts0.frames).toBe(4);
    expect(typeof counts.jobs_waiting).toBe("number");
    expect(await system.orphanVectors()).toEqual({ frame_vectors: 0, shot_vectors: 0 });
    const named = await system.tablesMentioning([videoId, "nothing-names-this"]);
    expect([...named.keys()]).toEqual([videoId]);
    expect(named.get(videoId)).toEqual(
      expect.arrayContaining(["frames", "ocr_lines", "shots", "transcript_segments", "vector_changes", "videos"]),
    );
    await system.ping();
    // A deleted video leaves nothing, the change log included (its frames and shots go by cascade,
    // whose triggers PostgreSQL fires after the video's own: pg migration 006).
    await new VideoStore(b.exec).delete(videoId);
    expect(await system.tablesMentioning([videoId])).toEqual(new Map());
    expect(await changes.prune(await changes.current())).toBeGreaterThanOrEqual(0);
    // So does a deleted account, with its videos.
    const other = await newTenant(b);
    const second = await indexedVideo(b, other);
    await new AccountStore(b.exec).deleteAccount(other.account);
    expect(await system.tablesMentioning([other.account, second.videoId])).toEqual(new Map());
  });
});

describe("the vector change log on PostgreSQL", () => {
  const pg = BACKENDS.find((x) => x.name === "postgres")!;

  test.skipIf(!pg.available())(
    "a video's frames written in one statement advance the log once per statement, not once per row (pg migration 010)",
    async () => {
      const b = await pg.open();
      const changes = new VectorChangeStore(b.exec);
      const index = new IndexStore(b.exec, false);
      const t = await newTenant(b);
      const videoId = await newVideo(b, t);
      const scope = { videoId, accountId: t.account, collectionId: t.collection };
      const frames = (model: number) =>
        Array.from({ length: 2000 }, (_, i) => ({ shotIndex: i >> 4, timestamp: i, embedding: vec(i + model) }));
      const before = await changes.current();
      await index.replaceFrames(scope, frames(0), "clip-a");
      // Row triggers bumped the one counter row 2 000 times in the transaction, and each bump of a
      // row it had already updated walked all its earlier versions: a cost that grew with N².
      // Now: one number per insert statement (insertMany sends 1 000 rows a statement).
      const written = await changes.current();
      expect(written - before).toBe(2);
      expect(await changes.of(videoId)).toBe(written);
      expect((await changes.after(before)).map((r) => [r.video_id, r.account_id])).toEqual([[videoId, t.account]]);
      // Re-indexed: the delete of the old frames (one statement) and the new vectors (two).
      await index.replaceFrames(scope, frames(1), "clip-b");
      expect((await changes.current()) - written).toBe(3);
      expect(await changes.of(videoId)).toBe(await changes.current());
      // Statements that write no row take no number.
      const now = await changes.current();
      await index.replaceShots(scope, [], null);
      expect(await changes.current()).toBe(now);
    },
  );
});
