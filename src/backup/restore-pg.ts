/**
 * `vsearch restore` in PostgreSQL mode (database_url). A PostgreSQL-mode backup holds the files,
 * `secret.key`, `config.json` and the model registry; the rows are in the pg_dump made beside it
 * (docs/POSTGRES.md "Backup and restore"). The operator restores the rows first with pg_restore,
 * then runs `vsearch restore`, which checks the archive's files against those rows (every stored
 * path inside its video's folder), moves the files into the data dir and holds the outbox the
 * dump carried (as an embedded restore does: the original may have sent those deliveries).
 *
 * Refused, each with what to do instead: an embedded backup (its rows are a SQLite file: restore
 * it into an embedded data dir and copy that with `vsearch migrate-store`), a PostgreSQL backup
 * into an embedded install, a database with no vsearch rows yet (pg_restore first: migrating it
 * here would make the dump's tables collide), and a database other vsearch processes are using.
 */
import { AppError } from "../core/errors.ts";
import { PG_SCHEMA_VERSION, pgRestoreCommand } from "../store/describe.ts";
import { describeUrl } from "../store/pg/open.ts";
import { checkWith } from "./integrity.ts";
import type { BackupManifest } from "./layout.ts";
import type { RestoreResult } from "./restore.ts";
import { BackupStore } from "./store.ts";

export function embeddedIntoPostgres(databaseUrl: string): AppError {
  return new AppError(
    "BACKUP_WRONG_STORE",
    `this backup holds an embedded (SQLite) store, and this install uses PostgreSQL (${describeUrl(databaseUrl)}): ` +
      "restore it into a data dir without database_url (unset VSEARCH_DATABASE_URL; vsearch restore <file> --data-dir <dir>), " +
      `then copy that install into PostgreSQL with vsearch migrate-store --to postgres://… --from <dir>`,
  );
}

/** The dump a backup suggested making beside `archive` (backup.ts: `<archive minus .tar>.pgdump`). */
const dumpBeside = (archive: string) => `${archive.replace(/\.tar$/, "")}.pgdump`;

export async function restoreWithPostgres(a: {
  archive: string;
  databaseUrl?: string;
  target: string;
  staging: string;
  manifest: BackupManifest;
  files: number;
  /** Moves the staged files into the data dir (restore.ts). */
  swapIn: () => void;
}): Promise<RestoreResult> {
  if (!a.databaseUrl)
    throw new AppError(
      "BACKUP_WRONG_STORE",
      `this backup was made on PostgreSQL (${a.manifest.database ?? "database unknown"}): its rows are not in the archive but in the pg_dump made beside it. ` +
        "Restore them with pg_restore into a database with pgvector, set VSEARCH_DATABASE_URL (database_url) to that database, and run vsearch restore again",
    );
  if (a.manifest.store !== "postgres") throw embeddedIntoPostgres(a.databaseUrl);
  const url = a.databaseUrl;
  const where = describeUrl(url);
  return await BackupStore.withPostgres(url, async (store, schemaVersion) => {
    if (schemaVersion === 0)
      throw new AppError(
        "BACKUP_ROWS_MISSING",
        `database ${where} holds no vsearch rows yet: restore them first from the dump made with this backup (pg_restore into this empty database; pgvector enabled), e.g. ` +
          `${pgRestoreCommand(url, dumpBeside(a.archive))} — then run vsearch restore again`,
      );
    if (schemaVersion > PG_SCHEMA_VERSION)
      throw new AppError(
        "BACKUP_INVALID",
        `database ${where} is at schema version ${schemaVersion}, newer than this vsearch knows (${PG_SCHEMA_VERSION}): restore with the vsearch that made the backup (${a.manifest.vsearch_version}) or newer`,
      );
    const others = await store.otherVsearchClients();
    if (others.length)
      throw new AppError(
        "SERVER_RUNNING",
        `vsearch processes are connected to ${where} (${others.slice(0, 3).join(", ")}${others.length > 3 ? ", …" : ""}): stop every serve and worker on this database before restoring`,
      );
    // The archive's files against the restored rows. A stored path outside its video's folder is
    // refused, as in an embedded restore; rows without files (a video deleted between pg_dump and
    // the backup) and folders without rows (uploaded in between: serve removes them) are reported.
    const integrity = await checkWith(store, a.staging, { mediaElsewhere: Boolean(a.manifest.media_in_bucket) });
    if (integrity.stray_paths.length)
      throw new AppError(
        "BACKUP_INVALID",
        `the restored rows and files fail their checks: ${integrity.problems.join("; ")}`,
      );
    a.swapIn();
    const held = await store.holdOutbox(new Date().toISOString());
    return {
      data_dir: a.target,
      manifest: a.manifest,
      files: a.files,
      integrity,
      held,
      rows: { database: where, schema_version: schemaVersion },
    };
  });
}
