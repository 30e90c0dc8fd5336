/**
 * The media cache's first use scans the media root (src/videos/media-cache.ts) asynchronously:
 * timers keep running while thousands of files are listed and stat'ed, the cache takes fetches,
 * reads and deletions meanwhile, and once the scan ends it holds what a synchronous walk of the
 * disk finds, ordered by the files' age, with what was used during the scan after it. Real files
 * on a temp media root; what is on disk is measured by walking it, not taken from the cache.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { isTempName } from "../../src/videos/files.ts";
import { MediaCache } from "../../src/videos/media-cache.ts";
import { tempDir } from "../helpers/temp.ts";

const FOLDERS = 300;
const OWN_FILES = 8;
const SHOT_FILES = 2;
const BASE_S = 1_700_000_000;

/** Bytes and folder count of the cache's kind of file on disk (a folder's own files and `shots/`, no temp names). */
function onDisk(videos: string): { bytes: number; folders: number } {
  let bytes = 0;
  let folders = 0;
  for (const v of readdirSync(videos)) {
    let mine = 0;
    for (const sub of ["", "shots"]) {
      const d = join(videos, v, sub);
      if (!existsSync(d)) continue;
      for (const f of readdirSync(d)) {
        const st = statSync(join(d, f));
        if (st.isFile() && !isTempName(f)) mine += st.size;
      }
    }
    bytes += mine;
    if (mine > 0) folders++;
  }
  return { bytes, folders };
}

/** Bytes of one folder's counted files. */
function folderBytes(dir: string): number {
  let n = 0;
  for (const sub of ["", "shots"])
    for (const f of readdirSync(join(dir, sub))) {
      const st = statSync(join(dir, sub, f));
      if (st.isFile() && !isTempName(f)) n += st.size;
    }
  return n;
}

/**
 * FOLDERS video folders of OWN_FILES + SHOT_FILES files (3 000 files), plus temp names the cache
 * skips; folder `i`'s files are `age(i)` seconds after BASE_S, the ages shuffled so that the
 * listing's order is not the age order. Returns the folder ids oldest first.
 */
function fill(videos: string): string[] {
  const ages = Array.from({ length: FOLDERS }, (_, i) => i);
  for (let i = ages.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1); // a fixed shuffle
    [ages[i], ages[j]] = [ages[j]!, ages[i]!];
  }
  const byAge: string[] = new Array(FOLDERS);
  for (let i = 0; i < FOLDERS; i++) {
    const id = `vid_s${String(i).padStart(4, "0")}`;
    const dir = join(videos, id);
    mkdirSync(join(dir, "shots"), { recursive: true });
    const t = BASE_S + ages[i]! * 60;
    const files = [
      ...Array.from({ length: OWN_FILES }, (_, k) => join(dir, `f${k}.bin`)),
      ...Array.from({ length: SHOT_FILES }, (_, k) => join(dir, "shots", `${k}.jpg`)),
    ];
    files.forEach((f, k) => {
      writeFileSync(f, Buffer.alloc(100 + ((i + k) % 17)));
      utimesSync(f, t, t);
    });
    writeFileSync(join(dir, "web.mp4.tmp"), Buffer.alloc(5000)); // a running task's: neither counted nor evicted
    byAge[ages[i]!] = id;
  }
  return byAge;
}

/** Counts event-loop turns (setImmediate) until stopped: bounded by the caller's stop. */
function turns(): { count: () => number; stop: () => void } {
  let n = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    n++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { count: () => n, stop: () => (stopped = true) };
}

describe("the media cache's first scan", () => {
  test("timers keep running through a scan of 3 000 files, and it finds what the disk holds, oldest first", async () => {
    const videos = join(tempDir("vsearch-cache-scan-"), "videos");
    const byAge = fill(videos);
    const disk = onDisk(videos);
    const cache = new MediaCache(videos, disk.bytes); // full: the next fetch evicts
    const t = turns();
    const state = await cache.state();
    const during = t.count();
    t.stop();
    // One listing or stat per step, each answered on a later turn of the loop: the loop turned
    // at least once per folder (a synchronous scan: not once).
    expect(during).toBeGreaterThanOrEqual(FOLDERS);
    expect(state).toMatchObject({ used_bytes: disk.bytes, videos: FOLDERS, evicted_files: 0 });

    // The order is the files' age: a fetch the size of the 40 oldest folders evicts those 40, no other.
    const room = byAge.slice(0, 40).reduce((n, id) => n + folderBytes(join(videos, id)), 0);
    mkdirSync(join(videos, "vid_fetched"), { recursive: true });
    writeFileSync(join(videos, "vid_fetched", "source.mp4"), Buffer.alloc(room));
    cache.changed("vid_fetched", join(videos, "vid_fetched", "source.mp4"));
    expect(byAge.map((id) => existsSync(join(videos, id, "f0.bin")))).toEqual(byAge.map((_, i) => i >= 40));
    expect(existsSync(join(videos, byAge[0]!, "web.mp4.tmp"))).toBe(true);
    expect(await cache.state()).toMatchObject({
      used_bytes: onDisk(videos).bytes,
      videos: FOLDERS - 40 + 1,
      evicted_files: 40 * (OWN_FILES + SHOT_FILES),
    });
  });

  test("used during its scan: fetches counted, reads and deletions kept; evicted in order once it ends", async () => {
    const videos = join(tempDir("vsearch-cache-scan-"), "videos");
    const byAge = fill(videos);
    const cache = new MediaCache(videos, Number.MAX_SAFE_INTEGER);
    const scan = cache.state(); // the first use: the scan starts
    // A fetch while it runs: counted at once (no pass evicts before the scan ends).
    mkdirSync(join(videos, "vid_fetched"), { recursive: true });
    writeFileSync(join(videos, "vid_fetched", "source.mp4"), Buffer.alloc(4000));
    cache.changed("vid_fetched");
    // A read of the oldest folder: after the scan it is used later than every folder the scan found.
    cache.touch(byAge[0]!);
    // A deletion part-way through (the scan may or may not have counted it yet: it is not counted after).
    const t = turns();
    for (let i = 0; i < 200 && t.count() < FOLDERS / 2; i++) await new Promise((r) => setImmediate(r));
    t.stop();
    const deleted = byAge[FOLDERS - 1]!;
    rmSync(join(videos, deleted), { recursive: true, force: true });
    cache.forget(deleted);
    const state = await scan;
    const disk = onDisk(videos);
    expect(state).toMatchObject({ used_bytes: disk.bytes, videos: FOLDERS, evicted_files: 0 }); // 299 found + the fetched one
    expect(disk.folders).toBe(FOLDERS);
  });

  test("eviction waits for the scan, then goes oldest first, sparing what was read or fetched meanwhile", async () => {
    const videos = join(tempDir("vsearch-cache-scan-"), "videos");
    const byAge = fill(videos);
    const before = onDisk(videos).bytes;
    // Room for all but ~10 folders, then a 4 000-byte fetch on top.
    const bound = before - 10 * 1000;
    const cache = new MediaCache(videos, bound);
    cache.touch(byAge[0]!); // the first use (a read of the oldest folder) starts the scan
    mkdirSync(join(videos, "vid_fetched"), { recursive: true });
    writeFileSync(join(videos, "vid_fetched", "source.mp4"), Buffer.alloc(4000));
    cache.changed("vid_fetched"); // over the bound now, but the scan has not ended: nothing evicted yet
    expect(existsSync(join(videos, byAge[1]!, "f0.bin"))).toBe(true);
    const state = await cache.state();
    expect(state.used_bytes).toBeLessThanOrEqual(bound);
    expect(state.used_bytes).toBe(onDisk(videos).bytes);
    const gone = byAge.filter((id) => !existsSync(join(videos, id, "f0.bin")));
    // The oldest by age, less the one read during the scan; the fetched one stays.
    expect(gone.length).toBeGreaterThan(0);
    expect(gone).toEqual(byAge.slice(1, 1 + gone.length));
    expect(existsSync(join(videos, byAge[0]!, "f0.bin"))).toBe(true);
    expect(existsSync(join(videos, "vid_fetched", "source.mp4"))).toBe(true);
  });
});
