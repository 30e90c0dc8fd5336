import { randomBytes } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import * as tar from "tar-stream";
import { AppError } from "../core/errors.ts";
import { type BackupManifest, DB_NAME, MANIFEST_NAME, NEWEST_BACKUP_FORMAT, TOP_LEVEL_FILES } from "./layout.ts";
import { checkDataDir, type IntegrityReport } from "./integrity.ts";
import { embeddedIntoPostgres, restoreWithPostgres } from "./restore-pg.ts";
import { BackupStore } from "./store.ts";

export interface RestoreOptions {
  archive: string;
  dataDir: string;
  force: boolean;
  vecExtension?: string;
  /** PostgreSQL mode (database_url): the rows come from pg_restore, the rest from the archive (restore-pg.ts). */
  databaseUrl?: string;
  /** True while a server holds the target's instance lock: restoring under it is refused. */
  serverRunning: boolean;
}

export interface RestoreResult {
  data_dir: string;
  manifest: BackupManifest;
  files: number;
  integrity: IntegrityReport;
  /** The original's pending webhook deliveries, held instead of re-sent (BackupStore.holdOutbox). */
  held: { deliveries: number; events: number };
  /** PostgreSQL mode: the database whose rows (restored by pg_restore) the files were checked against. */
  rows?: { database: string; schema_version: number };
}

/**
 * Unpacks a `vsearch backup` archive into a data dir. Everything is first extracted into a
 * staging folder inside the target (same filesystem, so the final step is renames), checked
 * (manifest present and of a known format, database passes `integrity_check`), and only then
 * moved into place: a bad or truncated archive leaves the target as it was. A non-empty target is
 * refused unless `force`, which replaces its contents.
 */
export async function restoreBackup(o: RestoreOptions): Promise<RestoreResult> {
  const target = resolve(o.dataDir);
  if (!existsSync(o.archive)) throw new AppError("BACKUP_NOT_FOUND", `${o.archive} does not exist`);
  if (o.serverRunning)
    throw new AppError("SERVER_RUNNING", `a vsearch serve is using ${target}; stop it before restoring into it`);
  mkdirSync(target, { recursive: true });
  // runtime/: native files extracted by the binary (maybe by this very process); never in a backup.
  const existing = readdirSync(target).filter((n) => !n.startsWith(".restore-") && n !== "runtime");
  if (existing.length && !o.force) {
    throw new AppError(
      "DATA_DIR_NOT_EMPTY",
      `${target} is not empty (${existing.slice(0, 3).join(", ")}${existing.length > 3 ? ", …" : ""}); restore into an empty folder, or pass --force to replace its contents`,
    );
  }
  const staging = join(target, `.restore-${randomBytes(4).toString("hex")}`);
  mkdirSync(staging);
  let stopReading = () => {};
  try {
    let files = 0;
    const extract = tar.extract();
    const source = createReadStream(o.archive);
    const done = pipeline(source, extract);
    // Refusing an entry stops reading mid-archive; the pipeline then ends with "Premature close",
    // which is the refusal's echo, not news (it used to surface as an unhandled stack trace).
    done.catch(() => {});
    stopReading = () => {
      source.destroy();
      extract.destroy();
    };
    for await (const entry of extract) {
      const name = safeName(entry.header.name);
      // Said at once, before the rest of the archive is read: its rows cannot go into PostgreSQL from here.
      if (o.databaseUrl && name === DB_NAME) throw embeddedIntoPostgres(o.databaseUrl);
      if (entry.header.type === "directory") {
        entry.resume();
        continue;
      }
      if (entry.header.type !== "file" && entry.header.type !== "contiguous-file") {
        throw new AppError("BACKUP_INVALID", `unexpected ${entry.header.type} entry ${name} in the archive`);
      }
      const dest = join(staging, name);
      mkdirSync(dirname(dest), { recursive: true });
      await pipeline(entry, createWriteStream(dest, { mode: 0o600 }));
      files++;
    }
    await done;

    const manifestFile = join(staging, MANIFEST_NAME);
    if (!existsSync(manifestFile))
      throw new AppError("BACKUP_INVALID", "the archive has no manifest: it is incomplete or not a vsearch backup");
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as BackupManifest;
    if (manifest.format > NEWEST_BACKUP_FORMAT)
      throw new AppError(
        "BACKUP_INVALID",
        `backup format ${manifest.format} is newer than this vsearch understands (${NEWEST_BACKUP_FORMAT})`,
      );
    // Swap in: remove what the target held (force), move the staged entries up.
    const swapIn = () => {
      for (const n of existing) rmSync(join(target, n), { recursive: true, force: true });
      for (const n of readdirSync(staging)) renameSync(join(staging, n), join(target, n));
    };
    if (o.databaseUrl || manifest.store === "postgres") {
      rmSync(manifestFile);
      checkRegistry(staging);
      return await restoreWithPostgres({ ...o, target, staging, manifest, files, swapIn });
    }
    if (!existsSync(join(staging, DB_NAME))) throw new AppError("BACKUP_INVALID", "the archive has no database");
    rmSync(manifestFile);
    checkRegistry(staging);

    // Integrity includes every stored file path: inside its own video's folder, or the restore is refused.
    // An archive made with the media in a bucket has no files: the bucket has them.
    const integrity = await checkDataDir(staging, {
      vecExtension: o.vecExtension,
      mediaElsewhere: Boolean(manifest.media_in_bucket),
    });
    if (!integrity.ok)
      throw new AppError("BACKUP_INVALID", `the restored data fails its checks: ${integrity.problems.join("; ")}`);

    const held = await BackupStore.withFile(
      join(staging, DB_NAME),
      o.vecExtension,
      async (s) => await s.holdOutbox(new Date().toISOString()),
    );
    swapIn();
    return { data_dir: target, manifest, files, integrity, held };
  } catch (e) {
    if (e instanceof AppError) throw e;
    if (e instanceof SyntaxError || /tar|header|Unexpected end/i.test(String((e as Error)?.message))) {
      throw new AppError("BACKUP_INVALID", `${o.archive} is not a readable vsearch backup (${(e as Error).message})`);
    }
    throw e;
  } finally {
    stopReading();
    rmSync(staging, { recursive: true, force: true });
  }
}

/** A restored model registry names folders inside the models folder only (relative, no `..`). */
function checkRegistry(staging: string): void {
  const file = join(staging, "models", "registry.json");
  if (!existsSync(file)) return;
  let reg: { models?: Record<string, { dir?: unknown }> };
  try {
    reg = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    throw new AppError("BACKUP_INVALID", "the archive's models/registry.json is not JSON");
  }
  for (const [name, m] of Object.entries(reg.models ?? {})) {
    const dir = typeof m?.dir === "string" ? m.dir : "";
    const parts = dir.split(/[\\/]/);
    if (!dir || isAbsolute(dir) || parts.some((p) => p === ".." || p === "") || dir.includes("\0"))
      throw new AppError(
        "BACKUP_INVALID",
        `the archive's model registry points model ${JSON.stringify(name)} outside the models folder (${JSON.stringify(dir.slice(0, 200))})`,
      );
  }
}

/** What a backup may hold at its top level (see layout.ts); anything else (e.g. `runtime/` with native libraries) is refused. */
const ALLOWED_TOP = new Set<string>([MANIFEST_NAME, DB_NAME, ...TOP_LEVEL_FILES, "videos", "models"]);

/** An archive member's path, refused if it could land outside the staging folder or outside what a backup holds. */
function safeName(name: string): string {
  const clean = name.replace(/^\.\//, "").replace(/\/+$/, "");
  const parts = clean.split("/");
  const unsafe =
    !clean ||
    name.startsWith("/") ||
    clean.includes("\\") ||
    clean.includes("\0") ||
    parts.some((p) => p === "" || p === "." || p === "..");
  if (unsafe || !ALLOWED_TOP.has(parts[0]) || (parts.length > 1 && parts[0] !== "videos" && parts[0] !== "models")) {
    throw new AppError("BACKUP_INVALID", `unexpected path in the archive: ${JSON.stringify(name)}`);
  }
  return parts.join(sep);
}
