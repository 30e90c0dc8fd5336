import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive } from "../core/process.ts";

/** Archive format version, in `vsearch-backup.json`; restore refuses newer formats. */
export const BACKUP_FORMAT = 1;
/**
 * A PostgreSQL-mode archive (no database in it: the rows are in a pg_dump). Its own number, so a
 * vsearch from before PostgreSQL says "newer than this vsearch understands" instead of "no database".
 */
export const POSTGRES_BACKUP_FORMAT = 2;
/** The newest format restore understands. */
export const NEWEST_BACKUP_FORMAT = POSTGRES_BACKUP_FORMAT;
export const MANIFEST_NAME = "vsearch-backup.json";
export const DB_NAME = "vsearch.db";

/**
 * What a data dir holds and which of it a backup carries. Carried: the database (as a snapshot),
 * `secret.key` (signs media URLs and encrypts webhook secrets: without it restored webhooks
 * cannot sign), `config.json`, `videos/<id>/` of every video in the snapshot (source, poster,
 * shot thumbnails, renditions and clips), the model registry, and model folders with
 * `--include-models`. Not carried: `runtime/` (extracted again on first run), temp uploads,
 * `serve.lock`, `node-id` (a restored copy is another node: jobs/node-id.ts), the WAL files (the
 * snapshot has their content) and our own temp folder.
 */
export const TOP_LEVEL_FILES = ["secret.key", "config.json"] as const;

/** Where a running backup puts its database snapshot (in the data dir: same disk, no /tmp limits). */
export const snapshotDir = (dataDir: string) => join(dataDir, "backup.tmp");

export interface BackupManifest {
  format: number;
  /** "postgres": the rows are not in the archive (pg_dump); absent: the embedded store's snapshot is. */
  store?: "postgres";
  /** PostgreSQL mode: host:port/database the backup was made from (no credentials). */
  database?: string;
  vsearch_version: string;
  created_at: string;
  include_models: boolean;
  videos: number;
  /** Videos deleted between the snapshot and the copy of their files (their rows are dropped on restore). */
  videos_without_files: string[];
  /** The media were in this bucket (`s3_bucket`) and are not in the archive: back it up with the bucket's own tools. */
  media_in_bucket?: string;
}

/** Snapshot files are named by the pid of the backup that made them; a dead pid's file is debris. */
export function sweepStaleSnapshots(dataDir: string): number {
  const dir = snapshotDir(dataDir);
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const f of readdirSync(dir)) {
    const pid = Number(/^snapshot-(\d+)-/.exec(f)?.[1]);
    if (pid === process.pid || (pid && isProcessAlive(pid))) continue; // ours, or a backup still running
    rmSync(join(dir, f), { force: true });
    n++;
  }
  return n;
}
