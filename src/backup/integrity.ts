import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { ObjectStore } from "../media/object-store.ts";
import { VideoFiles } from "../videos/files.ts";
import { BackupStore } from "./store.ts";

export interface IntegrityReport {
  ok: boolean;
  /** What makes `ok` false, one line each. */
  problems: string[];
  sqlite_integrity: string;
  foreign_key_violations: number;
  /** Folders under videos/ without a row (a crash between file move and commit; `serve` removes them at start). */
  orphan_video_dirs: string[];
  /** Video rows whose source file (with a bucket: object) is gone. */
  videos_missing_source: string[];
  /** Where the videos' files were checked: the media root, a bucket (`s3_bucket`), or nowhere (a restore of a bucket's archive). */
  media_store: "files" | "bucket" | "not checked";
  /** With a bucket: video ids with objects under `videos/<id>/` but no row (an upload that failed or crashed before its row committed). */
  orphan_objects: string[];
  /** Stored file paths outside their video's folder (a tampered or foreign database). */
  stray_paths: { column: string; video_id: string; path: string }[];
  /** Temp uploads (in flight while a server runs; debris after a crash, removed at start). */
  temp_uploads: number;
  /**
   * Temp files of the data dir (uploads, half-written clips, renditions, thumbnails; paths
   * relative to it). With no server running they are what a crash left: a problem, removed by the
   * check (`temp_files_removed`); beside a running server they may be in flight and are left.
   */
  temp_files: string[];
  temp_files_removed: boolean;
  videos: number;
  jobs: Record<string, number>;
}

/**
 * The data dir's health after a crash, a restore or a full disk (`vsearch check`): SQLite's own
 * `integrity_check` and `foreign_key_check`, and that database and files agree both ways. Run it
 * with the server stopped for an exact answer; beside a running server an upload in flight may
 * show as an orphan folder for a moment.
 */
export async function checkDataDir(
  dataDir: string,
  opts: { vecExtension?: string; mediaElsewhere?: boolean } = {},
): Promise<IntegrityReport> {
  return await BackupStore.withFile(
    join(dataDir, "vsearch.db"),
    opts.vecExtension,
    async (store) => await checkWith(store, dataDir, { mediaElsewhere: opts.mediaElsewhere }),
  );
}

/** `videos/<id>/…`, normalized (no `.`/`..` segments, no doubled or trailing slash), relative. */
export function insideVideoDir(path: string, videoId: string): boolean {
  const parts = path.split("/");
  return (
    parts.length >= 3 &&
    parts[0] === "videos" &&
    parts[1] === videoId &&
    parts.slice(2).every((p) => p !== "" && p !== "." && p !== ".." && !p.includes("\\") && !p.includes("\0"))
  );
}

export interface CheckOptions {
  /** No server runs on the data dir: temp files are stale, reported as a problem and removed. */
  removeStaleTemp?: boolean;
  /** The media's bucket (`s3_bucket`): sources are looked for there, and its objects without a row listed. */
  bucket?: ObjectStore | null;
  /** The files are in a bucket this check cannot see (restoring an archive made with one): not checked. */
  mediaElsewhere?: boolean;
}

export async function checkWith(
  store: BackupStore,
  dataDir: string,
  opts: CheckOptions = {},
): Promise<IntegrityReport> {
  const problems: string[] = [];
  const { integrity, foreignKeyViolations: fk, videos: rows, jobs } = await store.health();
  if (integrity !== "ok") problems.push(`integrity_check: ${integrity}`);
  if (fk) problems.push(`${fk} rows point at rows that do not exist (foreign_key_check)`);

  const known = new Set(rows.map((r) => r.id));
  const videosRoot = join(dataDir, "videos");
  const dirs = existsSync(videosRoot) ? readdirSync(videosRoot) : [];
  const orphans = dirs.filter((d) => !known.has(d));
  // (With a bucket the folders are a node's cache: the objects are checked instead, below.)
  if (orphans.length && !opts.bucket)
    problems.push(`${orphans.length} video folders without a row (removed at the next serve start)`);
  // A stored path is relative and inside its own video's folder; anything else (absolute, `..`,
  // another video's folder) would make clip, frame and media routes read where they must not.
  const strays = (await store.storedPaths()).filter((p) => !insideVideoDir(p.path, p.video_id));
  if (strays.length) {
    const [first] = strays;
    problems.push(
      `${strays.length} stored file paths point outside their video's folder (e.g. ${first.column} of ${first.video_id}: ${JSON.stringify(first.path.slice(0, 200))})`,
    );
  }
  const strayIds = new Set(strays.map((p) => p.video_id));
  // With a bucket the media root is a cache: the objects are what count (one listing of videos/).
  const objects = opts.bucket ? new Set(await opts.bucket.list("videos/")) : null;
  const present = (rel: string) => (objects ? objects.has(rel) : existsSync(join(dataDir, rel)));
  const missing = opts.mediaElsewhere
    ? []
    : rows.filter((r) => !strayIds.has(r.id) && !present(r.source_path)).map((r) => r.id);
  if (missing.length)
    problems.push(`${missing.length} videos without their source ${objects ? "object in the bucket" : "file"}`);
  const orphanObjects = objects
    ? [...new Set([...objects].map((k) => k.split("/")[1]))].filter((id) => id && !known.has(id))
    : [];
  if (orphanObjects.length)
    problems.push(
      `${orphanObjects.length} videos' objects in the bucket without a row (an upload that failed before its row committed; e.g. videos/${orphanObjects[0]}/)`,
    );
  const tmp = join(dataDir, "uploads", "tmp");
  const temps = new VideoFiles(dataDir).tempFiles();
  const tempUploads = existsSync(tmp) ? readdirSync(tmp).length : 0;
  let removed = false;
  if (opts.removeStaleTemp && temps.length) {
    new VideoFiles(dataDir).removeTempFiles(temps);
    removed = true;
    problems.push(
      `${temps.length} stale temp files a crash left (removed): ${temps.slice(0, 3).join(", ")}${temps.length > 3 ? ", …" : ""}`,
    );
  }
  return {
    ok: problems.length === 0,
    problems,
    sqlite_integrity: integrity,
    foreign_key_violations: fk,
    orphan_video_dirs: orphans,
    videos_missing_source: missing,
    media_store: opts.mediaElsewhere ? "not checked" : objects ? "bucket" : "files",
    orphan_objects: orphanObjects,
    stray_paths: strays.slice(0, 20),
    temp_uploads: tempUploads,
    temp_files: temps,
    temp_files_removed: removed,
    videos: rows.length,
    jobs,
  };
}
