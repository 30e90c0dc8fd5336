import { readdirSync, rmSync, statfsSync, statSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { isTempName } from "./files.ts";

/** A pass looks at this many video folders at most: its work is bounded, the next fetch goes on. */
const FOLDERS_PER_PASS = 64;
/** Without statfs (or a disk it cannot size): a fixed bound. */
const FALLBACK_BOUND_BYTES = 10 * 1024 ** 3;

/**
 * The default bound when `media_cache_mb` is unset: half the size of the file system the media
 * root is on. Worker disks differ by orders of magnitude, so a fixed figure would be too small on
 * one (sources fetched again and again) and fill another; the other half is left to what the
 * cache does not bound: uploads being received, a job's frame scratch, clips (`clip_cache_mb`),
 * models and the data dir.
 */
export function defaultCacheBoundBytes(mediaRoot: string): number {
  try {
    const s = statfsSync(mediaRoot);
    const size = Number(s.blocks) * Number(s.bsize);
    return size > 0 ? Math.floor(size / 2) : FALLBACK_BOUND_BYTES;
  } catch {
    return FALLBACK_BOUND_BYTES;
  }
}

export interface CacheState {
  used_bytes: number;
  bound_bytes: number;
  /** Video folders holding cached files. */
  videos: number;
  /** Files evicted since this process started. */
  evicted_files: number;
}

/**
 * The bound on a node's media cache when the media live in a bucket (docs/SCALE-OUT.md "Reads:
 * fetched into the cache"). Never made without a bucket: then the media root is the only copy.
 *
 * Least recently used **by video folder**: a video's files are used together (a task reads its
 * source and writes its thumbnails, a search result shows its thumbnails, a clip reads its
 * source), one entry per video keeps the index small next to one per shot thumbnail, and a pass's
 * work is one folder listing per folder it empties. Evicting a folder deletes its files, never
 * the folder itself (a running rendition takes a missing folder for a deleted video), and an
 * evicted file is fetched again when next needed (`VideoFiles.local`).
 *
 * Counted and evicted: the files in a video folder and its `shots/`. Not: temp names and scratch
 * (`*.tmp`, `frames.tmp`, `ocr-frames.tmp`: a running job's), `clips/` (bounded, in the cache and
 * the bucket together, by `clip_cache_mb`: evicting one here would hide its object from that
 * bound), `uploads/`. A folder some task holds (`pin`) is skipped whole, so what that task writes
 * there before publishing it is safe too.
 *
 * The order lives in memory (a Map's insertion order: touching a folder moves it to the end);
 * the first use starts a scan of the media root that orders the folders it finds by their files'
 * newest mtime. The scan is asynchronous, one folder listing or stat per step, so a large cache
 * does not stall the event loop (a synchronous scan of thousands of files held every request of
 * the node for its duration). Meanwhile the cache is used as usual — fetched folders are counted,
 * reads and deletions noted — and no eviction runs (it cannot tell the oldest folders yet: the
 * bound may be passed by what is fetched during the scan); once the scan ends, its folders go
 * before everything used meanwhile, and one pass evicts down to the bound.
 */
export class MediaCache {
  /** videoId → bytes of its evictable files; first = least recently used (during the scan: only those used since it began). */
  private folders = new Map<string, number>();
  private total = 0;
  private readonly pins = new Map<string, number>();
  private evicted = 0;
  /** The media root's scan: null until the first use, settled once its folders are merged in. */
  private scan: Promise<void> | null = null;
  private scanning = false;
  /** While scanning: folders read but not (yet) counted, in the order of their last read. */
  private readonly touchedInScan = new Set<string>();
  /** While scanning: folders that went (what the scan found of them is stale). */
  private readonly forgottenInScan = new Set<string>();

  private readonly videosRoot: string;

  constructor(
    videosRoot: string,
    readonly boundBytes: number,
  ) {
    this.videosRoot = resolve(videosRoot); // absolute, as the `keep` paths VideoFiles.abs gives
  }

  /** Holds `videoId`'s folder against eviction until the returned function is called (once or more). */
  pin(videoId: string): () => void {
    this.pins.set(videoId, (this.pins.get(videoId) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (this.pins.get(videoId) ?? 1) - 1;
      if (n > 0) this.pins.set(videoId, n);
      else this.pins.delete(videoId);
    };
  }

  /** A read of the folder's file: it becomes the most recently used. */
  touch(videoId: string): void {
    this.startScan();
    const folders = this.folders;
    const bytes = folders.get(videoId);
    if (bytes === undefined) {
      if (this.scanning) {
        this.touchedInScan.delete(videoId);
        this.touchedInScan.add(videoId);
      }
      return;
    }
    folders.delete(videoId);
    folders.set(videoId, bytes);
  }

  /**
   * Files were added to (or removed from) the folder: it is counted again, becomes the most
   * recently used, and a pass evicts down to the bound, sparing `keep` (an absolute path: the
   * file just fetched for a reader that may hold no pin).
   */
  changed(videoId: string, keep?: string): void {
    this.startScan();
    const folders = this.folders;
    this.total -= folders.get(videoId) ?? 0;
    folders.delete(videoId);
    const bytes = evictableFiles(join(this.videosRoot, videoId)).reduce((n, f) => n + f.size, 0);
    if (bytes > 0) folders.set(videoId, bytes);
    this.total += bytes;
    this.evict(keep);
  }

  /** The folder went (the video was deleted, or its copy dropped). */
  forget(videoId: string): void {
    if (!this.scan) return; // not scanned yet: the scan will not find it
    if (this.scanning) this.forgottenInScan.add(videoId);
    this.total -= this.folders.get(videoId) ?? 0;
    this.folders.delete(videoId);
  }

  /** What the cache holds, once the media root's scan has ended (started here if it had not). */
  async state(): Promise<CacheState> {
    await this.scanned();
    return {
      used_bytes: this.total,
      bound_bytes: this.boundBytes,
      videos: this.folders.size,
      evicted_files: this.evicted,
    };
  }

  /** Resolves once the media root's scan has ended and its folders are counted (starts it on first use). */
  async scanned(): Promise<void> {
    this.startScan();
    await this.scan;
  }

  /** Evicts least recently used, unpinned folders while over the bound; at most FOLDERS_PER_PASS looked at. */
  private evict(keep?: string): void {
    const folders = this.folders;
    if (this.scanning || this.total <= this.boundBytes) return; // during the scan: once it ends
    const oldest: string[] = [];
    for (const videoId of folders.keys()) {
      if (oldest.length >= FOLDERS_PER_PASS) break;
      oldest.push(videoId);
    }
    for (const videoId of oldest) {
      if (this.total <= this.boundBytes) break;
      if (this.pins.has(videoId)) {
        this.touch(videoId); // in use, so recently used: the next pass does not look at it first again
        continue;
      }
      const dir = join(this.videosRoot, videoId);
      let left = 0;
      for (const f of evictableFiles(dir)) {
        if (f.path === keep) {
          left += f.size;
          continue;
        }
        rmSync(f.path, { force: true });
        this.evicted++;
      }
      this.total -= folders.get(videoId) ?? 0;
      folders.delete(videoId);
      if (left > 0) {
        folders.set(videoId, left); // only the kept file: now the most recently used
        this.total += left;
      }
    }
  }

  private startScan(): void {
    if (this.scan) return;
    this.scanning = true;
    this.scan = this.scanRoot().then((found) => this.merge(found));
  }

  /** Each folder of the media root with its evictable bytes and newest mtime, oldest first; one await per listing or stat. */
  private async scanRoot(): Promise<{ videoId: string; bytes: number; newest: number }[]> {
    const found: { videoId: string; bytes: number; newest: number }[] = [];
    let names: string[];
    try {
      names = await readdir(this.videosRoot);
    } catch {
      return found; // no media root yet: nothing cached
    }
    for (const videoId of names) {
      const files = await evictableFilesAsync(join(this.videosRoot, videoId));
      if (files.length === 0) continue;
      found.push({
        videoId,
        bytes: files.reduce((n, f) => n + f.size, 0),
        newest: files.reduce((m, f) => Math.max(m, f.mtimeMs), 0),
      });
    }
    return found.sort((a, b) => a.newest - b.newest);
  }

  /**
   * The scan's folders before those used meanwhile: a folder counted since the scan began (or
   * gone since) keeps what was seen of it then; one only read since moves after the scan's
   * others, in the order it was read. Then the pass eviction waited for.
   */
  private merge(found: { videoId: string; bytes: number }[]): void {
    const merged = new Map<string, number>();
    for (const f of found)
      if (!this.folders.has(f.videoId) && !this.forgottenInScan.has(f.videoId)) merged.set(f.videoId, f.bytes);
    for (const videoId of this.touchedInScan) {
      const bytes = merged.get(videoId);
      if (bytes === undefined) continue;
      merged.delete(videoId);
      merged.set(videoId, bytes);
    }
    for (const [videoId, bytes] of this.folders) merged.set(videoId, bytes);
    this.folders = merged;
    this.total = [...merged.values()].reduce((n, b) => n + b, 0);
    this.touchedInScan.clear();
    this.forgottenInScan.clear();
    this.scanning = false;
    try {
      this.evict();
    } catch {
      // A file that cannot be removed now: the next fetch's pass tries again.
    }
  }
}

/** The files of a video folder the cache counts and may evict: its own and `shots/`'s, no temp names. */
function evictableFiles(dir: string): { path: string; size: number; mtimeMs: number }[] {
  const out: { path: string; size: number; mtimeMs: number }[] = [];
  for (const sub of ["", "shots"]) {
    const d = join(dir, sub);
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      continue; // not there (yet, or any more)
    }
    for (const name of names) {
      if (isTempName(name)) continue;
      const path = join(d, name);
      try {
        const st = statSync(path);
        if (st.isFile()) out.push({ path, size: st.size, mtimeMs: st.mtimeMs });
      } catch {} // gone meanwhile
    }
  }
  return out;
}

/** `evictableFiles` with one await per listing and stat: the first use's scan of the whole root. */
async function evictableFilesAsync(dir: string): Promise<{ path: string; size: number; mtimeMs: number }[]> {
  const out: { path: string; size: number; mtimeMs: number }[] = [];
  for (const sub of ["", "shots"]) {
    const d = join(dir, sub);
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      continue; // not there (yet, or any more), or a file where a folder was looked for
    }
    for (const name of names) {
      if (isTempName(name)) continue;
      const path = join(d, name);
      try {
        const st = await stat(path);
        if (st.isFile()) out.push({ path, size: st.size, mtimeMs: st.mtimeMs });
      } catch {} // gone meanwhile
    }
  }
  return out;
}
