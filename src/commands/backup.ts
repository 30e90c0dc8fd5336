import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";
import { holderAlive, InstanceLock } from "../cli/instance-lock.ts";
import { ProgressBar } from "../cli/progress.ts";

/** `vsearch backup <file>` (SPEC §11) and `vsearch check` (the data dir's health). */
export function registerBackupCommands(program: Command, ctx: CliContext) {
  program
    .command("backup <file>")
    .description(
      "Write one archive of the data dir (database snapshot, videos, thumbnails, model registry); safe while serve runs. On PostgreSQL: the files and registry, and the pg_dump command for the rows",
    )
    .option("--include-models", "also carry the model folders (weights); default: only the registry")
    .action(async (file: string, opts: { includeModels?: boolean }, cmd: Command) => {
      const json = ctx.globals(cmd).json;
      const bar = new ProgressBar(ctx.stderr, !json && process.stderr.isTTY);
      const r = await ctx.withApp(cmd, (app) =>
        app.services.backup.create({
          includeModels: Boolean(opts.includeModels),
          out: file,
          onProgress: (done, total, what) => bar.update(done, total, `copying ${what}`),
        }),
      );
      bar.done();
      const rows = r.rows;
      ctx.print(
        cmd,
        r,
        `Backup written to ${r.file} (${(r.bytes / 1048576).toFixed(1)} MiB, ${r.videos} videos, ${r.files} files${r.include_models ? ", with model weights" : ", model registry only"})` +
          (r.media_in_bucket
            ? `\nThe videos' files are NOT in it: they are in the bucket ${r.media_in_bucket}. Back the bucket up with its own tools (versioning, replication, rclone sync, mc mirror); restore puts the rows back, the bucket must hold the objects.`
            : "") +
          (rows.in_archive
            ? r.videos_without_files.length
              ? `\n${r.videos_without_files.length} videos deleted during the backup were left out`
              : ""
            : [
                "",
                `It holds the videos' files, secret.key, config.json and the model registry${r.include_models ? " and weights" : ""} — NOT the rows: they are in PostgreSQL (${rows.database}).`,
                "Copy them with pg_dump (password from PGPASSWORD or ~/.pgpass), before this command when both run beside a serving install (a video uploaded in between is only a folder, which serve removes):",
                `  ${rows.pg_dump}`,
                "Restore: pg_restore into an empty database with pgvector, then vsearch restore with VSEARCH_DATABASE_URL set to it:",
                `  ${rows.pg_restore}`,
                ...(r.videos_without_files.length
                  ? [`${r.videos_without_files.length} videos had no files to copy (deleted during the backup)`]
                  : []),
              ].join("\n")),
      );
    });

  program
    .command("check")
    .description(
      "Check the data dir: SQLite integrity, and that rows and files agree (run with serve stopped for an exact answer)",
    )
    .action(async (_o: unknown, cmd: Command) => {
      // Beside a running server temp files may be in flight; without one they are a crash's debris.
      // On PostgreSQL other nodes may be writing on a shared media root: left to the start-up sweep.
      const config = ctx.config(cmd);
      const holder = new InstanceLock(config.dataDir).read();
      const serverRunning = Boolean(holder && holder.pid !== process.pid && holderAlive(holder));
      const r = await ctx.withApp(
        cmd,
        async (app) => await app.services.backup.check({ removeStaleTemp: !serverRunning && !config.databaseUrl }),
      );
      ctx.print(cmd, r, () =>
        [
          r.ok ? "data dir ok" : "PROBLEMS FOUND",
          `database   ${r.sqlite_integrity}; ${r.foreign_key_violations} foreign key violations`,
          `videos     ${r.videos}; ${r.videos_missing_source.length} without a source; ${r.orphan_video_dirs.length} folders without a row`,
          `jobs       ${
            Object.entries(r.jobs)
              .map(([k, v]) => `${v} ${k}`)
              .join(", ") || "none"
          }`,
          `temp       ${r.temp_files.length} temp files${r.temp_files_removed ? " (stale: removed)" : serverRunning && r.temp_files.length ? " (a server runs: may be in flight, left)" : ""}`,
          ...r.problems.map((p) => `problem    ${p}`),
        ].join("\n"),
      );
      if (!r.ok) process.exitCode = 1;
    });
}
