import { resolve } from "node:path";
import type { Command } from "commander";
import { restoreBackup } from "../backup/restore.ts";
import type { CliContext } from "../cli/context.ts";
import { holderAlive, InstanceLock } from "../cli/instance-lock.ts";
import { ConfigError } from "../config/config.ts";

/** `vsearch restore <file> --data-dir DIR [--force]` (SPEC §11). */
export function registerRestoreCommand(program: Command, ctx: CliContext) {
  program
    .command("restore <file>")
    .description("Unpack a backup into the data dir (--data-dir); refuses a non-empty one unless --force")
    .option("--force", "replace what the data dir holds")
    .action(async (file: string, opts: { force?: boolean }, cmd: Command) => {
      const config = ctx.config(cmd);
      // The archive unpacks into one folder; a separate media root (or secret file) is not where it lands.
      if (resolve(config.mediaRoot) !== resolve(config.dataDir) || config.secretFile)
        throw new ConfigError(
          `restore unpacks videos/ and secret.key into the data dir; with media_root or secret_file set they would not be where the servers read them. Restore with VSEARCH_MEDIA_ROOT and VSEARCH_SECRET_FILE unset, then move ${resolve(config.dataDir, "videos")} and secret.key onto the media root (docs/SCALE-OUT.md "Backup and restore")`,
        );
      const holder = new InstanceLock(config.dataDir).read();
      const serverRunning = Boolean(holder && holder.pid !== process.pid && holderAlive(holder));
      const runtime = await ctx.runtime(config);
      const r = await restoreBackup({
        archive: file,
        dataDir: config.dataDir,
        force: Boolean(opts.force),
        vecExtension: runtime.vecExtension,
        databaseUrl: config.databaseUrl,
        serverRunning,
      });
      ctx.print(
        cmd,
        {
          data_dir: r.data_dir,
          files: r.files,
          videos: r.integrity.videos,
          jobs: r.integrity.jobs,
          webhook_deliveries_held: r.held.deliveries,
          backup: r.manifest,
          rows: r.rows ?? null,
          warnings: r.rows ? r.integrity.problems : [],
        },
        [
          `Restored ${r.integrity.videos} videos (${r.files} files) from ${file} into ${r.data_dir}`,
          ...(r.rows
            ? [
                `rows: PostgreSQL ${r.rows.database} (schema version ${r.rows.schema_version}, restored by pg_restore); the archive's files checked against them`,
                ...r.integrity.problems.map((p) => `warning: ${p}`),
              ]
            : []),
          `backup made ${r.manifest.created_at} by vsearch ${r.manifest.vsearch_version}`,
          ...(r.manifest.media_in_bucket
            ? [
                `the videos' files were not in the backup but in the bucket ${r.manifest.media_in_bucket}: set s3_bucket and its settings to it (vsearch doctor checks it, vsearch check looks for every source there)`,
              ]
            : []),
          r.manifest.include_models
            ? "model weights restored"
            : "model weights were not in the backup: import the same models again (vsearch models import …) before searching",
          "unfinished jobs run again when serve starts",
          ...(r.held.deliveries
            ? [
                `${r.held.deliveries} webhook deliveries pending at backup time are held (status failed), not re-sent: retry them from the delivery log if still wanted`,
              ]
            : []),
        ].join("\n"),
      );
    });
}
