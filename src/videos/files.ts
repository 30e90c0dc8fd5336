import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { AppError } from "../core/errors.ts";
import type { ObjectStore } from "../media/object-store.ts";
import { type CacheState, defaultCacheBoundBytes, MediaCache } from "./media-cache.ts";

/** A half-written file's name (`x.tmp`, `x.<pid>.tmp`, `x.tmp-<pid>-…`) or a job's scratch folder (`frames.tmp`). */
export const isTempName = (name: string) => /\.tmp(-[\w.-]+)?$/.test(name);

/**
 * How long another node's temp file must have been left untouched before a starting node removes
 * it from a media root other nodes share (one database: PostgreSQL). Whoever writes one touches it
 * all the time (an upload's body arrives at least every 255 s, Bun's idle timeout; ffmpeg writes
 * as it goes), so an hour without a write is a crashed writer, never a slow one.
 */
export const SHARED_ROOT_GRACE_MS = 60 * 60_000;

/**
 * Where a video's files live: `<media-root>/videos/<video_id>/` holds the source, the poster and
 * one JPEG per shot; `<media-root>/uploads/tmp/` the uploads being received. The media root is the
 * data dir unless `media_root` says otherwise (a folder every node mounts: docs/SCALE-OUT.md).
 * Deleting a video is removing one folder. Paths in the database are relative to the media root so
 * it can be moved, mounted elsewhere or restored.
 */
export class VideoFiles {
  readonly videosRoot: string;
  readonly uploadsTmp: string;

  /** Fetches from the bucket in flight, by key: a second reader of the same object waits for the first. */
  private readonly fetching = new Map<string, Promise<void>>();
  /** The bound on this node's copies (media-cache.ts); only with a bucket, never on the only copy. */
  private readonly cache: MediaCache | null;

  /**
   * `node`: this node's id; the temp uploads it names (`tempPath`) carry it, so a start sweeps its own at once.
   * `bucket`: the media's durable copy (`s3_bucket`; docs/SCALE-OUT.md "Object storage"). Then the
   * media root is this node's cache: what a node writes is `publish`ed to the bucket before a row
   * names it, what it reads is fetched from there first (`local`), and a video's removal removes
   * its objects too. Null (the default): the media root is the only copy, as without object storage.
   * `cacheBoundBytes`: with a bucket, the most this node's cache keeps (`media_cache_mb`; default
   * half the media root's disk); ignored without one.
   */
  constructor(
    readonly root: string,
    private readonly node?: string,
    readonly bucket: ObjectStore | null = null,
    cacheBoundBytes?: number,
  ) {
    this.videosRoot = join(root, "videos");
    this.uploadsTmp = join(root, "uploads", "tmp");
    this.cache = bucket ? new MediaCache(this.videosRoot, cacheBoundBytes ?? defaultCacheBoundBytes(root)) : null;
  }

  /** The video folder of a stored path the cache counts (null without a cache: nothing to count or hold). */
  private cachedVideo(rel: string): string | null {
    return this.cache ? videoOf(rel) : null;
  }

  /** With a bucket, what the cache holds against its bound; null without one (nothing is evicted). */
  async cacheState(): Promise<CacheState | null> {
    return (await this.cache?.state()) ?? null;
  }

  /**
   * Holds the video folder of a stored path against eviction from this node's cache until the
   * returned function is called (in a `finally`; calling it twice is harmless): for a task that
   * reads the file (`local`) and writes beside it. Nothing to hold without a bucket.
   */
  hold(rel: string): () => void {
    const videoId = this.cachedVideo(rel);
    return videoId ? this.holdVideo(videoId) : () => {};
  }

  /** `hold` by video id: the whole folder, whichever of its files the caller reads. */
  holdVideo(videoId: string): () => void {
    return this.cache ? this.cache.pin(videoId) : () => {};
  }

  /** `local(rel)` held (`hold`) while `use` runs: the file stays on this node until `use` settles. */
  async withLocal<T>(rel: string, use: (abs: string) => Promise<T>): Promise<T> {
    const release = this.hold(rel);
    try {
      return await use(await this.local(rel));
    } finally {
      release();
    }
  }

  /**
   * A stored path as a local file, fetched from the bucket into this node's cache first when it
   * is not there (ffmpeg, ffprobe and the OCR engine read local files). The fetch writes a temp
   * name and renames it, so a reader never sees half an object; one fetch per object at a time.
   * An object the bucket does not have either leaves the path missing, as a lost file would.
   * A fetch may evict least recently used files of other videos (media-cache.ts), never this one
   * at once; a caller that keeps using the file while it awaits something else `hold`s it.
   */
  async local(rel: string): Promise<string> {
    const abs = this.abs(rel);
    const bucket = this.bucket;
    const videoId = this.cachedVideo(rel);
    if (!bucket) return abs;
    if (existsSync(abs)) {
      if (videoId) this.cache?.touch(videoId);
      return abs;
    }
    let pending = this.fetching.get(rel);
    if (!pending) {
      pending = (async () => {
        const tmp = `${abs}.tmp-fetch-${process.pid}-${randomBytes(4).toString("hex")}`;
        mkdirSync(dirname(abs), { recursive: true });
        try {
          if (await storeCall(bucket, "read", () => bucket.fetchTo(rel, tmp))) renameSync(tmp, abs);
        } finally {
          rmSync(tmp, { force: true });
        }
        if (videoId) this.cache?.changed(videoId, abs);
      })().finally(() => this.fetching.delete(rel));
      this.fetching.set(rel, pending);
    }
    await pending;
    return abs;
  }

  /**
   * Copies files this node wrote (stored paths) to the bucket; nothing without one. Called before
   * the rows that name them commit, so no row ever names an object the bucket lacks.
   */
  async publish(rels: readonly (string | null)[]): Promise<void> {
    const bucket = this.bucket;
    if (!bucket) return;
    for (const rel of rels) if (rel) await storeCall(bucket, "write", () => bucket.put(rel, this.abs(rel)));
    // Counted once they are in the bucket (before, the cache's copy is the only one): may evict.
    for (const videoId of new Set(rels.map((r) => (r ? videoOf(r) : null)))) if (videoId) this.cache?.changed(videoId);
  }

  /** Removes one stored file here and, with a bucket, its object (a pruned thumbnail, an evicted clip). */
  async removeFile(rel: string): Promise<void> {
    rmSync(this.abs(rel), { force: true });
    const bucket = this.bucket;
    if (bucket) await storeCall(bucket, "write", () => bucket.delete(rel));
    const videoId = this.cachedVideo(rel);
    if (videoId) this.cache?.changed(videoId);
  }

  /** Removes this node's copy of a video's files, and only that (another node deleted the video and its objects). */
  dropCached(videoId: string): void {
    rmSync(this.dir(videoId), { recursive: true, force: true });
    this.cache?.forget(videoId);
  }

  /** Whether the bucket (or, without one, the media root) holds this stored path. */
  async has(rel: string): Promise<boolean> {
    const bucket = this.bucket;
    if (!bucket) return existsSync(this.abs(rel));
    return (await storeCall(bucket, "read", () => bucket.stat(rel))) !== null;
  }

  dir(videoId: string): string {
    if (!/^vid_[0-9A-Za-z]+$/.test(videoId)) throw new Error(`bad video id ${videoId}`);
    return join(this.videosRoot, videoId);
  }

  ensureDir(videoId: string): string {
    const d = this.dir(videoId);
    mkdirSync(join(d, "shots"), { recursive: true });
    return d;
  }

  ensureTmp(): string {
    mkdirSync(this.uploadsTmp, { recursive: true });
    return this.uploadsTmp;
  }

  /** A new temp upload's path: `uploads/tmp/<node-id>.<ms>-<random>.<ext>` (the node id: see sweepOrphans). */
  tempPath(ext: string): string {
    const owner = this.node ? `${this.node}.` : "";
    return join(this.ensureTmp(), `${owner}${Date.now()}-${randomBytes(8).toString("hex")}.${ext}`);
  }

  sourceFile(videoId: string, ext: string): string {
    return join(this.dir(videoId), `source.${ext}`);
  }

  posterFile(videoId: string): string {
    return join(this.dir(videoId), "poster.jpg");
  }

  /**
   * Thumbnails of every sampled frame while a video is being indexed; the shots' ones are moved
   * out, the folder is removed when the job ends. Returned empty: a resumed job starts clean.
   */
  freshPassJpegsDir(videoId: string): string {
    this.ensureDir(videoId);
    const d = this.passJpegsDir(videoId);
    rmSync(d, { recursive: true, force: true });
    mkdirSync(d);
    return d;
  }

  removePassJpegsDir(videoId: string): void {
    rmSync(this.passJpegsDir(videoId), { recursive: true, force: true });
  }

  private passJpegsDir(videoId: string): string {
    return join(this.dir(videoId), "frames.tmp");
  }

  /**
   * Gray frames the frame decode leaves for the OCR stage (src/pipeline/stage-ocr.ts), kept until
   * that stage has read them (it may run later than the frame decode, after a restart too).
   * Returned empty: a new run starts clean.
   */
  freshTextFramesDir(videoId: string): string {
    this.ensureDir(videoId);
    const d = this.textFramesDir(videoId);
    rmSync(d, { recursive: true, force: true });
    mkdirSync(d);
    return d;
  }

  textFramesDir(videoId: string): string {
    return join(this.dir(videoId), "ocr-frames.tmp");
  }

  removeTextFramesDir(videoId: string): void {
    rmSync(this.textFramesDir(videoId), { recursive: true, force: true });
  }

  shotThumbFile(videoId: string, shotIndex: number): string {
    return join(this.dir(videoId), "shots", `${shotIndex}.jpg`);
  }

  /**
   * Removes shot thumbnails not in `keep` (paths relative to the data dir): a re-run that found
   * fewer shots leaves none of the earlier run's behind. Called by the content owner
   * (indexing/content.ts) once the new shot rows are committed.
   */
  async pruneShotThumbs(videoId: string, keep: ReadonlySet<string>): Promise<void> {
    const dir = join(this.dir(videoId), "shots");
    if (existsSync(dir))
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (!keep.has(this.rel(p))) rmSync(p, { recursive: true, force: true });
      }
    if (this.cache && existsSync(dir)) this.cache.changed(videoId);
    const bucket = this.bucket;
    if (!bucket) return;
    const prefix = `videos/${videoId}/shots/`;
    for (const key of await storeCall(bucket, "read", () => bucket.list(prefix)))
      if (!keep.has(key)) await storeCall(bucket, "write", () => bucket.delete(key));
  }

  rel(abs: string): string {
    return relative(this.root, abs);
  }

  /** Resolves a stored relative path, refusing anything that escapes the media root. */
  abs(rel: string): string {
    const p = resolve(this.root, rel);
    if (!p.startsWith(resolve(this.root) + sep)) throw new Error("path escapes the media root");
    return p;
  }

  /** Removes the video's folder and, with a bucket, every object under `videos/<video_id>/`. */
  async remove(videoId: string): Promise<void> {
    rmSync(this.dir(videoId), { recursive: true, force: true });
    this.cache?.forget(videoId);
    const bucket = this.bucket;
    if (bucket) await storeCall(bucket, "write", () => bucket.deletePrefix(`videos/${videoId}/`));
  }

  bytesOf(videoId: string): number {
    const walk = (d: string): number =>
      !existsSync(d)
        ? 0
        : readdirSync(d, { withFileTypes: true }).reduce(
            (n, e) => n + (e.isDirectory() ? walk(join(d, e.name)) : statSync(join(d, e.name)).size),
            0,
          );
    return walk(this.dir(videoId));
  }

  /**
   * Temp files on the media root (paths relative to it): temp uploads and query images, and in each
   * video folder a half-written clip (`clips/<span>.mp4.<pid>.tmp`), rendition (`web.mp4.tmp`),
   * thumbnail (`*.tmp-…`) or a job's frame scratch folder (`frames.tmp`). With no server running
   * every one of them is what a crash left (nothing resumes from them).
   */
  tempFiles(): string[] {
    const out: string[] = [];
    if (existsSync(this.uploadsTmp)) for (const f of readdirSync(this.uploadsTmp)) out.push(join("uploads", "tmp", f));
    if (!existsSync(this.videosRoot)) return out;
    for (const v of readdirSync(this.videosRoot)) {
      const dir = join(this.videosRoot, v);
      for (const sub of ["", "clips", "shots"]) {
        const d = join(dir, sub);
        if (!existsSync(d) || !statSync(d).isDirectory()) continue;
        for (const f of readdirSync(d)) if (isTempName(f)) out.push(this.rel(join(d, f)));
      }
    }
    return out;
  }

  /** Removes what `tempFiles` listed (paths relative to the media root); returns how many went. */
  removeTempFiles(rel: readonly string[]): number {
    for (const r of rel) rmSync(this.abs(r), { recursive: true, force: true });
    return rel.length;
  }

  /**
   * Claims `videoId`'s folder for an upload being moved into it, before the folder is made: a
   * starting node's sweep leaves a folder without a row alone while it is claimed (the row is
   * about to commit). The claim is a temp file, `uploads/tmp/<node-id>.incoming.<video_id>.tmp`:
   * one a crash left is swept like any temp upload. Returns it, for `release`.
   */
  claimIncoming(videoId: string): string {
    this.dir(videoId); // checks the id
    const claim = join(this.ensureTmp(), `${this.node ? `${this.node}.` : ""}incoming.${videoId}.tmp`);
    writeFileSync(claim, "");
    return claim;
  }

  /** Ends a claim once the row committed (or the folder was removed). */
  releaseIncoming(claim: string): void {
    rmSync(claim, { force: true });
  }

  private claimed(videoId: string): boolean {
    if (!existsSync(this.uploadsTmp)) return false;
    const tail = `incoming.${videoId}.tmp`;
    return readdirSync(this.uploadsTmp).some((n) => n === tail || n.endsWith(`.${tail}`));
  }

  /**
   * Start-up sweep: temp files are never resumable (`tempFiles`), and a video folder without a
   * database row is what a crash between "file moved" and "row committed" leaves behind, or a
   * delete that stopped before its files went. The folders of `busyVideoIds` (a task of another
   * node runs there now, writing its temp files) keep theirs.
   *
   * A folder without a row is removed only if no upload claims it (`claimIncoming`) and `hasRow`
   * still says no: its row may have committed since `knownVideoIds` was read (an upload is claimed
   * before its folder is made and released after its row committed, so one of the two is seen).
   *
   * `sharedGraceMs` > 0: other nodes may write on this media root now (one PostgreSQL database,
   * docs/SCALE-OUT.md). Then of the temp files only the certainly dead go: this node's own (their
   * name carries its node id; the instance lock says its previous process is gone), and any other
   * — another node's upload being received, a clip being encoded — once nothing in it was written
   * for `sharedGraceMs`.
   */
  async sweepOrphans(
    knownVideoIds: Set<string>,
    busyVideoIds: ReadonlySet<string> = new Set(),
    opts: { sharedGraceMs?: number; now?: number; hasRow?: (videoId: string) => Promise<boolean> } = {},
  ): Promise<{ tmp: number; videos: number; left_to_owners: number }> {
    const grace = opts.sharedGraceMs ?? 0;
    const cutoff = (opts.now ?? Date.now()) - grace;
    const dead = (abs: string) => grace === 0 || newestWriteMs(abs) < cutoff;
    const own = (rel: string) => this.node !== undefined && rel.startsWith(`uploads/tmp/${this.node}.`);
    const ownerOf = (rel: string) => (rel.startsWith("videos/") ? rel.split("/")[1] : null);
    let leftToOwners = 0;
    const gone = this.tempFiles().filter((r) => {
      if (busyVideoIds.has(ownerOf(r) ?? "")) return false;
      const remove = own(r) || dead(this.abs(r));
      if (!remove) leftToOwners++;
      return remove;
    });
    const tmp = this.removeTempFiles(gone);
    let videos = 0;
    if (existsSync(this.videosRoot)) {
      for (const d of readdirSync(this.videosRoot)) {
        if (knownVideoIds.has(d)) continue;
        if (this.claimed(d) || (opts.hasRow && (await opts.hasRow(d)))) {
          leftToOwners++;
          continue;
        }
        rmSync(join(this.videosRoot, d), { recursive: true, force: true });
        videos++;
      }
    }
    return { tmp, videos, left_to_owners: leftToOwners };
  }
}

/** The video a stored path belongs to (`videos/<video_id>/…`), or null. */
function videoOf(rel: string): string | null {
  const m = /^videos\/(vid_[0-9A-Za-z]+)\//.exec(rel);
  return m ? m[1]! : null;
}

/** The latest modification time in `path` and, for a folder, in what it holds (two levels: a video folder's `shots/`, `clips/`). */
function newestWriteMs(path: string, depth = 2): number {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    return 0; // gone meanwhile
  }
  let newest = st.mtimeMs;
  if (st.isDirectory() && depth > 0) {
    let names: string[] = [];
    try {
      names = readdirSync(path);
    } catch {}
    for (const n of names) newest = Math.max(newest, newestWriteMs(join(path, n), depth - 1));
  }
  return newest;
}

/**
 * A call to the bucket; a failure (unreachable, refused, no such bucket) is MEDIA_STORE_UNAVAILABLE
 * (503) with what the bucket said, never a stack trace or the keys.
 */
async function storeCall<T>(bucket: ObjectStore, what: "read" | "write", call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof AppError) throw e;
    const said = e instanceof Error ? (e as { code?: string }).code || e.message : String(e);
    throw new AppError(
      "MEDIA_STORE_UNAVAILABLE",
      `The media store (the ${bucket.kind} bucket) failed to ${what} (${said.slice(0, 200)}); retry later`,
      { "Retry-After": "30" },
    );
  }
}
