/**
 * The one owner of a video's derived content (indexing/content.ts), on a real store file with
 * sqlite-vec loaded and real video folders: stage writes replace, thumbnails follow the rows,
 * deletion takes rows, vectors and files together, and the events come after the commit.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { AccountStore } from "../../src/accounts/store.ts";
import { CollectionStore } from "../../src/collections/store.ts";
import { EventBus, type DomainEvent } from "../../src/events/bus.ts";
import { EventStore } from "../../src/events/store.ts";
import { VideoContent } from "../../src/indexing/content.ts";
import { IndexStore, type ShotInput } from "../../src/indexing/store.ts";
import { JobStore } from "../../src/jobs/store.ts";
import { LeaseQueue } from "../../src/jobs/lease-queue.ts";
import { TaskStore } from "../../src/jobs/task-store.ts";
import { createLogger } from "../../src/core/logger.ts";
import { prepareRuntime } from "../../src/runtime/index.ts";
import { OcrSearchStore } from "../../src/search/ocr-store.ts";
import { SearchStore } from "../../src/search/store.ts";
import { VideoFiles } from "../../src/videos/files.ts";
import { VideoService } from "../../src/videos/service.ts";
import { VideoStore } from "../../src/videos/store.ts";
import { ownStoreFiles } from "../helpers/stores.ts";

const storeFiles = ownStoreFiles("vsearch-content-");
let vecExtension: string | undefined;
beforeAll(async () => {
  vecExtension = (await prepareRuntime({ dataDir: storeFiles.dir(), version: "0.0.0" })).vecExtension;
});

const at = new Date(0).toISOString();
const vec = (x: number) => Float32Array.from([x, 1 - x, 0, 0]);

function setup() {
  const dataDir = storeFiles.dir();
  const store = storeFiles.open(dataDir, { vecExtension });
  const { exec: db, uow } = store;
  const accounts = new AccountStore(db);
  const collections = new CollectionStore(db);
  const videoStore = new VideoStore(db);
  const files = new VideoFiles(dataDir);
  const seen: { event: DomainEvent; inTransaction: boolean }[] = [];
  const bus = new EventBus(uow);
  bus.subscribe("video.content_changed", (e) => {
    seen.push({ event: e, inTransaction: uow.inTransaction });
  });
  bus.subscribe("videos.deleted", (e) => {
    seen.push({ event: e, inTransaction: uow.inTransaction });
  });
  const index = new IndexStore(db, true);
  const content = new VideoContent(uow, index, files, bus);
  const outbox = new EventStore(db);
  const videos = new VideoService(
    uow,
    videoStore,
    new JobStore(db),
    outbox,
    index,
    files,
    { posterUrl: () => "", playbackUrl: async () => "" },
    content,
    // Never started here: these tests delete videos, they do not index them.
    new LeaseQueue(new TaskStore(db), uow, { node: "node_content_test", lanes: [], logger: createLogger("silent") }),
  );

  /** An account, a collection and a ready video with a source file and `shots` thumbnails on disk. */
  const addVideo = async (accountId: string, id: string, shots: number) => {
    if (!(await accounts.getAccount(accountId))) {
      await accounts.insertAccount({
        id: accountId,
        name: accountId,
        plan: "free",
        credits_balance: null,
        created_at: at,
      });
      await collections.insert({ id: `col_${accountId}`, user_id: accountId, name: "c", created_at: at });
    }
    files.ensureDir(id);
    writeFileSync(files.sourceFile(id, "mp4"), "source");
    for (let i = 0; i < shots; i++) writeFileSync(files.shotThumbFile(id, i), `thumb ${i}`);
    await videoStore.insert({
      id,
      account_id: accountId,
      collection_id: `col_${accountId}`,
      filename: "a.mp4",
      status: "ready",
      progress_pct: 100,
      container: "mp4",
      mime_type: "video/mp4",
      duration_secs: 30,
      width: 64,
      height: 48,
      fps: 25,
      codec: "h264",
      audio_codec: null,
      has_audio: 0,
      file_size_bytes: 6,
      storage_bytes: 6,
      source_path: files.rel(files.sourceFile(id, "mp4")),
      poster_path: null,
      stages: "{}",
      error_code: null,
      error_message: null,
      created_at: at,
      updated_at: at,
    });
    return { videoId: id, accountId, collectionId: `col_${accountId}` };
  };
  const shotRows = (scope: { videoId: string }, n: number, offset = 0): ShotInput[] =>
    Array.from({ length: n }, (_, i) => ({
      shotIndex: i,
      start: i * 10,
      end: i * 10 + 10,
      keyframe: i * 10 + 1,
      labels: [],
      caption: null,
      thumbnailPath: files.rel(files.shotThumbFile(scope.videoId, i)),
      embedding: vec(offset + i / 10),
    }));
  const fill = async (scope: Awaited<ReturnType<typeof addVideo>>, shots: number) => {
    await content.replaceFrames(
      scope,
      [0, 1, 2].map((i) => ({ shotIndex: 0, timestamp: i, embedding: vec(i / 10) })),
      "m",
    );
    await content.replaceTranscript(scope, [{ start: 0, end: 2, text: "hello there" }], "w");
    await content.replaceOcrLines(scope, [
      { start: 0, end: 2, text: "EXIT", confidence: 90, box: { x: 0, y: 0, w: 1, h: 1 } },
    ]);
    await content.commitStage(
      scope.videoId,
      async () => await content.replaceShots(scope, shotRows(scope, shots), "m"),
    );
  };
  return {
    files,
    content,
    videos,
    videoStore,
    outbox,
    search: new SearchStore(db),
    ocr: new OcrSearchStore(db),
    seen,
    addVideo,
    shotRows,
    fill,
  };
}

describe("VideoContent", () => {
  test("a stage replaces the rows of an earlier run, removes the thumbnails it no longer has, and announces after the commit", async () => {
    const { files, content, search, seen, addVideo, shotRows, fill } = setup();
    const v = await addVideo("acc_a", "vid_a", 3);
    await fill(v, 3);
    expect(seen).toEqual([{ event: { type: "video.content_changed", videoId: "vid_a" }, inTransaction: false }]);
    expect(await search.countInScope("frames", v, "m")).toBe(3);

    // A re-run finds two shots: the third's row and its thumbnail go, the other two stay.
    await content.replaceFrames(v, [{ shotIndex: 0, timestamp: 0, embedding: vec(0) }], "m");
    await content.commitStage(v.videoId, async () => await content.replaceShots(v, shotRows(v, 2), "m"));
    expect(await search.countInScope("frames", v, "m")).toBe(1);
    expect((await search.shotsOfVideos([v.videoId])).get(v.videoId)!.map((s) => s.shot_index)).toEqual([0, 1]);
    expect(readdirSync(join(files.dir(v.videoId), "shots")).sort()).toEqual(["0.jpg", "1.jpg"]);
    expect(seen.map((s) => s.event.type)).toEqual(["video.content_changed", "video.content_changed"]);
  });

  test("a stage whose transaction fails keeps the earlier rows and thumbnails and announces nothing", async () => {
    const { files, content, search, seen, addVideo, shotRows, fill } = setup();
    const v = await addVideo("acc_a", "vid_b", 3);
    await fill(v, 3);
    seen.length = 0;
    await expect(
      content.commitStage(v.videoId, async () => {
        await content.replaceShots(v, shotRows(v, 1), "m");
        throw new Error("the video row could not be updated");
      }),
    ).rejects.toThrow("could not be updated");
    expect((await search.shotsOfVideos([v.videoId])).get(v.videoId)!.length).toBe(3);
    expect(readdirSync(join(files.dir(v.videoId), "shots")).length).toBe(3);
    expect(seen).toEqual([]);
  });

  test("deleting videos (VideoService.purgeVideos) takes rows, vectors and files together; another account's video is untouched", async () => {
    const { files, videos, videoStore, outbox, search, ocr, seen, addVideo, fill } = setup();
    const mine = await addVideo("acc_a", "vid_c", 2);
    const theirs = await addVideo("acc_b", "vid_d", 2);
    await fill(mine, 2);
    await fill(theirs, 2);
    const nearest = async (accountId: string) => (await search.vecNearest("frames", 4, accountId, vec(0), 10)).length;
    expect(await nearest("acc_a")).toBe(3);
    seen.length = 0;

    // acc_a asks for both: only its own goes.
    await videos.purgeVideos("acc_a", [mine.videoId, theirs.videoId]);
    expect(await videoStore.getById(mine.videoId)).toBeNull();
    expect(existsSync(files.dir(mine.videoId))).toBe(false);
    expect(await search.countInScope("frames", mine, "m")).toBe(0);
    expect((await search.shotsOfVideos([mine.videoId])).get(mine.videoId) ?? []).toEqual([]);
    expect(await search.transcriptCount("acc_a")).toBe(0);
    expect(await ocr.count("acc_a")).toBe(0);
    expect(await nearest("acc_a")).toBe(0); // the vec0 rows SQLite cannot cascade
    expect((await outbox.undispatched(10)).map((e) => [e.type, JSON.parse(e.payload).video_id])).toEqual([
      ["video.deleted", mine.videoId],
    ]);
    expect(seen).toEqual([{ event: { type: "videos.deleted", videoIds: [mine.videoId] }, inTransaction: false }]);

    expect(await videoStore.getById(theirs.videoId)).not.toBeNull();
    expect(existsSync(files.sourceFile(theirs.videoId, "mp4"))).toBe(true);
    expect(await search.countInScope("frames", theirs, "m")).toBe(3);
    expect(await nearest("acc_b")).toBe(3);
  });

  test("a deletion that fails keeps the video's rows and files and announces nothing", async () => {
    const { files, content, videoStore, search, seen, addVideo, fill } = setup();
    const v = await addVideo("acc_a", "vid_e", 1);
    await fill(v, 1);
    seen.length = 0;
    await expect(
      content.deleteVideos([v.videoId], {
        has: async () => true,
        remove: async () => {
          throw new Error("disk full");
        },
      }),
    ).rejects.toThrow("disk full");
    expect(await videoStore.getById(v.videoId)).not.toBeNull();
    expect((await search.vecNearest("frames", 4, "acc_a", vec(0), 10)).length).toBe(3);
    expect(existsSync(files.sourceFile(v.videoId, "mp4"))).toBe(true);
    expect(seen).toEqual([]);
  });
});
