import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
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
  /** Video rows whose source file is gone. */
  videos_missing_source: string[];
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
export async function checkDataDir(dataDir: string, opts: { vecExtension?: string } = {}): Promise<IntegrityReport> {
  return await BackupStore.withFile(
    join(dataDir, "vsearch.db"),
    opts.vecExtension,
    async (store) => await checkWith(store, dataDir),
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
  if (orphans.length) problems.push(`${orphans.length} video folders without a row (removed at the next serve start)`);
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
  const missing = rows.filter((r) => !strayIds.has(r.id) && !existsSync(join(dataDir, r.source_path))).map((r) => r.id);
  if (missing.length) problems.push(`${missing.length} videos without their source file`);
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
    stray_paths: strays.slice(0, 20),
    temp_uploads: tempUploads,
    temp_files: temps,
    temp_files_removed: removed,
    videos: rows.length,
    jobs,
  };
}
