import { isTempName } from "../videos/files.ts";
import { randomBytes } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import * as tar from "tar-stream";
import { AppError } from "../core/errors.ts";
import { isStorageError } from "../core/storage.ts";
import { pgDumpCommand, pgRestoreCommand } from "../store/describe.ts";
import { describeUrl } from "../store/pg/open.ts";
import { BackupStore } from "./store.ts";
import {
  BACKUP_FORMAT,
  type BackupManifest,
  DB_NAME,
  MANIFEST_NAME,
  POSTGRES_BACKUP_FORMAT,
  snapshotDir,
  sweepStaleSnapshots,
  TOP_LEVEL_FILES,
} from "./layout.ts";

export interface BackupOptions {
  dataDir: string;
  /** Where `videos/` is (the data dir unless `media_root` is set). */
  mediaRoot: string;
  /** The cluster secret's file (`<media_root>/secret.key` unless `secret_file` is set): the archive's `secret.key`. */
  secretFile: string;
  modelsDir: string;
  /** The live store (the server may be using it at the same time, from another process). */
  store: BackupStore;
  vecExtension?: string;
  /**
   * PostgreSQL mode: the rows stay in the database (pg_dump's job); the archive carries the files,
   * the secret, the config and the model registry, and says so in its manifest.
   */
  databaseUrl?: string;
  version: string;
  /**
   * The media are in this bucket (`s3_bucket`): the media root is only a node's cache, so no
   * video files go into the archive (the manifest and the result say where they are instead).
   */
  mediaInBucket?: string;
  includeModels: boolean;
  /** Where the archive goes; written as `<out>.partial` and renamed when complete. */
  out: string;
  onProgress?: (done: number, total: number, what: string) => void;
}

export interface BackupResult {
  file: string;
  bytes: number;
  videos: number;
  files: number;
  include_models: boolean;
  videos_without_files: string[];
  /** Set when the videos' files are in a bucket, not in the archive: back the bucket up with its own tools. */
  media_in_bucket: string | null;
  /** Where the rows are: in the archive (embedded), or in PostgreSQL with the pg_dump that copies them. */
  rows: { in_archive: true } | { in_archive: false; database: string; pg_dump: string; pg_restore: string };
}

/**
 * One tar archive, streamed (a video is never held in memory):
 *  1. a consistent snapshot of the database with `VACUUM INTO` — SQLite reads it in one read
 *     transaction, so it is exact even while `serve` writes (WAL: the writer is not blocked);
 *  2. the files of every video *in the snapshot* (later uploads are not in it, so neither are
 *     their files); sources never change once written, and a video deleted meanwhile is dropped
 *     from the snapshot so the archive holds no row without its files;
 *  3. the snapshot itself, `secret.key`, `config.json`, the model registry (and model folders);
 *  4. the manifest, last: an archive without it is incomplete.
 * In PostgreSQL mode there is no snapshot: the rows are pg_dump's (the result names the command),
 * step 2 archives the files of every video the database holds when the backup starts (run
 * pg_dump first: a video uploaded in between is a folder without a row after the restore, which
 * `serve` removes at start), and step 3 carries no database.
 * The archive is written to `<out>.partial` and renamed at the end, so `<out>` is either a whole
 * backup or absent (a kill -9 leaves only the `.partial`, replaced by the next backup).
 */
export async function createBackup(o: BackupOptions): Promise<BackupResult> {
  const out = resolve(o.out);
  if (isInside(out, resolve(o.dataDir)))
    throw new AppError("BAD_BACKUP_PATH", "write the backup outside the data dir (it would contain itself)");
  mkdirSync(dirname(out), { recursive: true });
  sweepStaleSnapshots(o.dataDir);
  mkdirSync(snapshotDir(o.dataDir), { recursive: true });
  const pg = o.databaseUrl;
  const snapshot = join(snapshotDir(o.dataDir), `snapshot-${process.pid}-${randomBytes(4).toString("hex")}.db`);
  const partial = `${out}.partial`;
  try {
    if (!pg) {
      try {
        await o.store.snapshotInto(snapshot);
      } catch (e) {
        if (isStorageError(e))
          throw new AppError("INSUFFICIENT_STORAGE", "Not enough disk space in the data dir for the database snapshot");
        throw e;
      }
    }
    const videoIds = pg
      ? await o.store.videoIds()
      : await BackupStore.withFile(snapshot, o.vecExtension, async (snap) => await snap.videoIds());

    const pack = tar.pack();
    // 0600: the archive holds secret.key (URL signing, webhook secrets) and every video.
    const sink = createWriteStream(partial, { mode: 0o600 });
    const written = pipeline(pack, sink);
    // If writing fails (disk full at the destination), stop feeding the pack.
    let writeError: unknown = null;
    written.catch((e) => (writeError = e));
    let files = 0;
    const addFile = async (abs: string, name: string) => {
      if (writeError) throw writeError;
      const st = statSync(abs);
      const entry = pack.entry({ name, size: st.size, mode: 0o600, mtime: st.mtime, type: "file" });
      await pipeline(createReadStream(abs), entry);
      files++;
    };
    const addTree = async (absDir: string, prefix: string, skip: (rel: string) => boolean = () => false) => {
      for (const rel of walkFiles(absDir)) {
        if (skip(rel)) continue;
        await addFile(join(absDir, rel), `${prefix}/${rel.split(sep).join("/")}`);
      }
    };

    const missing: string[] = [];
    for (const [i, id] of videoIds.entries()) {
      if (o.mediaInBucket) break; // the bucket holds them; the cache here may hold any part of them
      o.onProgress?.(i, videoIds.length, id);
      const dir = join(o.mediaRoot, "videos", id);
      if (!existsSync(dir)) {
        missing.push(id);
        continue;
      }
      // frames.tmp, ocr-frames.tmp: a job's scratch; the restored job starts clean anyway (OCR decodes
      // on its own). Half-written clips, renditions and thumbnails (`*.tmp`) are not files of the video either.
      await addTree(dir, `videos/${id}`, (rel) => rel.split(sep).some(isTempName));
    }
    if (!pg) {
      o.onProgress?.(videoIds.length, videoIds.length, "database");
      // Videos whose files vanished after the snapshot (deleted meanwhile) leave the snapshot too.
      if (missing.length)
        await BackupStore.withFile(snapshot, o.vecExtension, async (snap) => await snap.dropVideos(missing));
      await addFile(snapshot, DB_NAME);
    }
    // secret.key: the cluster secret, wherever it is kept; config.json: the data dir's.
    for (const f of TOP_LEVEL_FILES) {
      const from = f === "secret.key" ? o.secretFile : join(o.dataDir, f);
      if (existsSync(from)) await addFile(from, f);
    }
    const models = resolve(o.modelsDir);
    if (existsSync(join(models, "registry.json"))) {
      if (o.includeModels) await addTree(models, "models", (rel) => rel.split(sep)[0].startsWith("."));
      else await addFile(join(models, "registry.json"), "models/registry.json");
    }
    const dump = pg ? `${out.replace(/\.tar$/, "")}.pgdump` : "";
    const manifest: BackupManifest = {
      format: pg ? POSTGRES_BACKUP_FORMAT : BACKUP_FORMAT,
      ...(pg ? { store: "postgres" as const, database: describeUrl(pg) } : {}),
      vsearch_version: o.version,
      created_at: new Date().toISOString(),
      include_models: o.includeModels,
      videos: videoIds.length - missing.length,
      videos_without_files: missing,
      ...(o.mediaInBucket ? { media_in_bucket: o.mediaInBucket } : {}),
    };
    pack.entry({ name: MANIFEST_NAME, mode: 0o600 }, JSON.stringify(manifest, null, 2));
    pack.finalize();
    await written;
    renameSync(partial, out);
    return {
      file: out,
      bytes: statSync(out).size,
      videos: manifest.videos,
      files,
      include_models: o.includeModels,
      videos_without_files: missing,
      media_in_bucket: o.mediaInBucket ?? null,
      rows: pg
        ? {
            in_archive: false,
            database: describeUrl(pg),
            pg_dump: pgDumpCommand(pg, dump),
            pg_restore: pgRestoreCommand(pg, dump),
          }
        : { in_archive: true },
    };
  } catch (e) {
    rmSync(partial, { force: true });
    if (isStorageError(e) && !(e instanceof AppError))
      throw new AppError("INSUFFICIENT_STORAGE", `Not enough disk space to write ${out}`);
    throw e;
  } finally {
    rmSync(snapshot, { force: true });
  }
}

/** Regular files under a folder, relative paths, sorted; symlinks are not followed. */
export function walkFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else if (st?.isFile()) out.push(relative(root, p));
    }
  };
  if (existsSync(root)) walk(root);
  return out;
}

function isInside(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir + sep);
}
