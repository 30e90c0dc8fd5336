/**
 * The bound on a node's media cache when the media live in a bucket (src/videos/media-cache.ts,
 * docs/SCALE-OUT.md "Reads: fetched into the cache"): through `VideoFiles` against s3rver
 * (test/helpers/s3.ts, loopback) and real files on a temp media root. What is on disk is measured
 * by walking the folder, not taken from the cache's own count.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { isTempName, VideoFiles } from "../../src/videos/files.ts";
import { type S3Server, startS3 } from "../helpers/s3.ts";
import { tempDir } from "../helpers/temp.ts";

const SOURCE_BYTES = 100_000;
const THUMB_BYTES = 2_000;
const BOUND = 250_000; // two videos' files, not three
const IDS = ["vid_c1", "vid_c2", "vid_c3", "vid_c4", "vid_c5", "vid_c6"];
const src = (id: string) => `videos/${id}/source.mp4`;
const thumb = (id: string) => `videos/${id}/shots/0.jpg`;

/** Bytes of the cache's kind of file on disk: a video folder's own files and `shots/`, no temp names. */
function diskBytes(root: string): number {
  const videos = join(root, "videos");
  let n = 0;
  if (!existsSync(videos)) return 0;
  for (const v of readdirSync(videos))
    for (const sub of ["", "shots"]) {
      const d = join(videos, v, sub);
      if (!existsSync(d)) continue;
      for (const f of readdirSync(d)) {
        const st = statSync(join(d, f));
        if (st.isFile() && !isTempName(f)) n += st.size;
      }
    }
  return n;
}

describe("the node's media cache with a bucket (s3rver)", () => {
  let s3: S3Server;
  const originals = new Map<string, Buffer>();
  let prefix = 0;

  beforeAll(async () => {
    s3 = await startS3("vsearch-cache");
  }, 60_000);
  afterAll(async () => {
    await s3?.stop();
  });

  /** A bucket (its own prefix) holding every video's source and one thumbnail, and an empty cache over it. */
  async function seeded(bound = BOUND): Promise<{ files: VideoFiles; root: string }> {
    const bucket = s3.objects(`cache-${++prefix}`);
    const scratch = tempDir("vsearch-cache-seed-");
    for (const id of IDS) {
      for (const [key, size] of [
        [src(id), SOURCE_BYTES],
        [thumb(id), THUMB_BYTES],
      ] as const) {
        const bytes = randomBytes(size);
        originals.set(`${prefix}/${key}`, bytes);
        const f = join(scratch, `${id}-${size}`);
        writeFileSync(f, bytes);
        await bucket.put(key, f);
      }
    }
    const root = tempDir("vsearch-cache-root-");
    const files = new VideoFiles(root, "node-a", bucket, bound);
    // The first use's scan of the (empty) root, ended: no pass waits for it (media-cache-scan.test.ts).
    await files.cacheState();
    return { files, root };
  }
  const original = (key: string) => originals.get(`${prefix}/${key}`)!;

  test("fetches stay under the bound: the least recently used video's files go first, a read counts as use", async () => {
    const { files, root } = await seeded();
    for (const id of IDS.slice(0, 4)) {
      await files.local(src(id));
      // Never over the bound after a fetch: nothing here is in use once local() returned.
      expect(diskBytes(root)).toBeLessThanOrEqual(BOUND);
      expect((await files.cacheState())!.used_bytes).toBe(diskBytes(root));
      expect(existsSync(files.abs(src(id)))).toBe(true); // the file just fetched is there
    }
    // c1 and c2 went, oldest first; c3 and c4 stay.
    expect(IDS.slice(0, 4).map((id) => existsSync(files.abs(src(id))))).toEqual([false, false, true, true]);
    // A read of c3 makes c4 the least recently used: the next fetch evicts c4, not c3.
    await files.local(src(IDS[2]!));
    await files.local(src(IDS[4]!));
    expect(existsSync(files.abs(src(IDS[2]!)))).toBe(true);
    expect(existsSync(files.abs(src(IDS[3]!)))).toBe(false);
    expect(diskBytes(root)).toBeLessThanOrEqual(BOUND);
    // The folder goes as a whole: a cached thumbnail of an evicted video goes with its source.
    await files.local(thumb(IDS[2]!));
    await files.local(src(IDS[5]!)); // c5 is now the oldest (c3 was read twice since)
    expect(existsSync(files.abs(src(IDS[4]!)))).toBe(false);
    expect(await files.cacheState()).toMatchObject({ bound_bytes: BOUND, videos: 2, used_bytes: diskBytes(root) });
    expect((await files.cacheState())!.evicted_files).toBe(4);
  });

  test("a bound below one file: the file a fetch brought stays for its reader, the next fetch evicts it", async () => {
    const { files, root } = await seeded(SOURCE_BYTES / 2);
    const [a, b] = [src(IDS[0]!), src(IDS[1]!)];
    const readA = readFileSync(await files.local(a));
    expect(readA.equals(original(a))).toBe(true);
    expect(diskBytes(root)).toBe(SOURCE_BYTES); // over the bound by the one file in use, no more
    await files.local(b);
    expect(existsSync(files.abs(a))).toBe(false);
    expect(existsSync(files.abs(b))).toBe(true);
    expect(diskBytes(root)).toBe(SOURCE_BYTES);
  });

  test("an evicted file is fetched again and reads as the object", async () => {
    const { files } = await seeded();
    const first = src(IDS[0]!);
    await files.local(first);
    for (const id of IDS.slice(1, 4)) await files.local(src(id));
    expect(existsSync(files.abs(first))).toBe(false);
    const again = await files.local(first);
    expect(readFileSync(again).equals(original(first))).toBe(true);
  });

  test("a held video is not evicted while held, whatever its age; released, it goes in turn", async () => {
    const { files, root } = await seeded();
    const held = src(IDS[0]!);
    let release = () => {};
    const reading = files.withLocal(held, async (abs) => {
      // The oldest video, held by a "task": fetch three more around it.
      await new Promise<void>((done) => {
        release = done;
      });
      return readFileSync(abs);
    });
    for (let i = 0; i < 50 && !existsSync(files.abs(held)); i++) await Bun.sleep(20);
    expect(existsSync(files.abs(held))).toBe(true);
    // Writes beside it while held (a stage's thumbnail before its publish) are spared too.
    files.ensureDir(IDS[0]!);
    writeFileSync(files.abs(thumb(IDS[0]!)), "written by the task");
    for (const id of IDS.slice(1, 4)) {
      await files.local(src(id));
      expect(existsSync(files.abs(held))).toBe(true);
      expect(existsSync(files.abs(thumb(IDS[0]!)))).toBe(true);
      // Over the bound by at most what is held.
      expect(diskBytes(root)).toBeLessThanOrEqual(BOUND + SOURCE_BYTES + "written by the task".length);
    }
    release();
    expect((await reading).equals(original(held))).toBe(true);
    // No longer held: the next fetches evict it like any other.
    await files.local(src(IDS[4]!));
    await files.local(src(IDS[5]!));
    expect(existsSync(files.abs(held))).toBe(false);
    expect(diskBytes(root)).toBeLessThanOrEqual(BOUND);
  });

  test("temp files, a job's scratch and clips are never evicted nor counted", async () => {
    const { files, root } = await seeded();
    const oldest = IDS[0]!;
    await files.local(src(oldest));
    const dir = files.dir(oldest);
    mkdirSync(join(dir, "frames.tmp"), { recursive: true });
    writeFileSync(join(dir, "frames.tmp", "0001.jpg"), randomBytes(50_000));
    mkdirSync(join(dir, "ocr-frames.tmp"), { recursive: true });
    writeFileSync(join(dir, "ocr-frames.tmp", "0001.gray"), randomBytes(50_000));
    writeFileSync(join(dir, "web.mp4.tmp"), randomBytes(50_000));
    mkdirSync(join(dir, "clips"), { recursive: true });
    writeFileSync(join(dir, "clips", "1000-2000.mp4"), randomBytes(50_000));
    for (const id of IDS.slice(1, 4)) await files.local(src(id));
    expect(existsSync(files.abs(src(oldest)))).toBe(false); // its source went
    for (const kept of ["frames.tmp/0001.jpg", "ocr-frames.tmp/0001.gray", "web.mp4.tmp", "clips/1000-2000.mp4"])
      expect(existsSync(join(dir, kept))).toBe(true);
    expect(existsSync(dir)).toBe(true); // the folder stays (a running rendition reads a gone folder as a deletion)
    expect((await files.cacheState())!.used_bytes).toBe(diskBytes(root));
  });

  test("what the node publishes counts and may evict others; it is in the bucket first", async () => {
    const { files, root } = await seeded();
    for (const id of IDS.slice(0, 2)) await files.local(src(id));
    const mine = "vid_mine";
    const poster = `videos/${mine}/poster.jpg`;
    files.ensureDir(mine);
    writeFileSync(files.abs(poster), randomBytes(SOURCE_BYTES));
    await files.publish([poster]);
    expect(existsSync(files.abs(src(IDS[0]!)))).toBe(false);
    expect(existsSync(files.abs(poster))).toBe(true);
    expect(diskBytes(root)).toBeLessThanOrEqual(BOUND);
    expect(await files.has(poster)).toBe(true);
  });

  test("a restarted node orders what it finds by the files' age", async () => {
    const { files, root } = await seeded();
    for (const id of IDS.slice(0, 2)) await files.local(src(id));
    // c2's files older than c1's: a new process (new VideoFiles over the same root) evicts c2 first.
    const old = Date.now() / 1000 - 3600;
    utimesSync(files.abs(src(IDS[1]!)), old, old);
    const restarted = new VideoFiles(root, "node-a", files.bucket, BOUND);
    expect(await restarted.cacheState()).toMatchObject({ used_bytes: 2 * SOURCE_BYTES, videos: 2 });
    await restarted.local(src(IDS[2]!));
    expect(existsSync(files.abs(src(IDS[1]!)))).toBe(false);
    expect(existsSync(files.abs(src(IDS[0]!)))).toBe(true);
  });
});

describe("without a bucket the media root is the only copy", () => {
  test("nothing is ever evicted, whatever the bound", async () => {
    const root = tempDir("vsearch-cache-nobucket-");
    const files = new VideoFiles(root, "node-a", null, 1);
    for (const id of IDS) {
      files.ensureDir(id);
      writeFileSync(files.abs(src(id)), randomBytes(SOURCE_BYTES));
      await files.publish([src(id)]);
      expect(await files.local(src(id))).toBe(files.abs(src(id)));
    }
    expect(await files.cacheState()).toBeNull();
    expect(IDS.every((id) => existsSync(files.abs(src(id))))).toBe(true);
    expect(diskBytes(root)).toBe(IDS.length * SOURCE_BYTES);
  });
});
