import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";

/** A half-written file's name (`x.tmp`, `x.<pid>.tmp`, `x.tmp-<pid>-…`) or a job's scratch folder (`frames.tmp`). */
export const isTempName = (name: string) => /\.tmp(-[\w.-]+)?$/.test(name);

/**
 * Where a video's files live: `<data-dir>/videos/<video_id>/` holds the source, the poster and
 * one JPEG per shot. Deleting a video is removing one folder. Paths in the database are
 * relative to the data dir so the data dir can be moved or restored elsewhere.
 */
export class VideoFiles {
  readonly videosRoot: string;
  readonly uploadsTmp: string;

  constructor(readonly dataDir: string) {
    this.videosRoot = join(dataDir, "videos");
    this.uploadsTmp = join(dataDir, "uploads", "tmp");
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
  pruneShotThumbs(videoId: string, keep: ReadonlySet<string>): void {
    const dir = join(this.dir(videoId), "shots");
    if (!existsSync(dir)) return;
    for (const f of readdirSync(dir)) {
      const p = join(dir, f);
      if (!keep.has(this.rel(p))) rmSync(p, { recursive: true, force: true });
    }
  }

  rel(abs: string): string {
    return relative(this.dataDir, abs);
  }

  /** Resolves a stored relative path, refusing anything that escapes the data dir. */
  abs(rel: string): string {
    const p = resolve(this.dataDir, rel);
    if (!p.startsWith(resolve(this.dataDir) + sep)) throw new Error("path escapes the data dir");
    return p;
  }

  remove(videoId: string): void {
    rmSync(this.dir(videoId), { recursive: true, force: true });
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
   * Temp files in the data dir (paths relative to it): temp uploads and query images, and in each
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

  /** Removes what `tempFiles` listed (paths relative to the data dir); returns how many went. */
  removeTempFiles(rel: readonly string[]): number {
    for (const r of rel) rmSync(this.abs(r), { recursive: true, force: true });
    return rel.length;
  }

  /**
   * Start-up sweep: temp files are never resumable (`tempFiles`), and a video folder without a
   * database row is what a crash between "file moved" and "row committed" leaves behind. The
   * folders of `busyVideoIds` (a task of another node runs there now, writing its temp files)
   * keep theirs.
   */
  sweepOrphans(
    knownVideoIds: Set<string>,
    busyVideoIds: ReadonlySet<string> = new Set(),
  ): { tmp: number; videos: number } {
    const ownerOf = (rel: string) => (rel.startsWith("videos/") ? rel.split("/")[1] : null);
    const tmp = this.removeTempFiles(this.tempFiles().filter((r) => !busyVideoIds.has(ownerOf(r) ?? "")));
    let videos = 0;
    if (existsSync(this.videosRoot)) {
      for (const d of readdirSync(this.videosRoot)) {
        if (!knownVideoIds.has(d)) {
          rmSync(join(this.videosRoot, d), { recursive: true, force: true });
          videos++;
        }
      }
    }
    return { tmp, videos };
  }
}
