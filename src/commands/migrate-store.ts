import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";
import { holderAlive, InstanceLock } from "../cli/instance-lock.ts";
import { ProgressBar } from "../cli/progress.ts";
import { carrySecret, MigrateStoreError, migrateStore } from "../store/migrate-store.ts";
import { clusterSecretFile } from "../signing/cluster-secret.ts";
import { describeUrl } from "../store/pg/open.ts";

/** `vsearch migrate-store --to postgres://… [--from <data-dir>]` (SPEC §13; docs/POSTGRES.md "Moving an embedded install"). */
export function registerMigrateStoreCommand(program: Command, ctx: CliContext) {
  program
    .command("migrate-store")
    .description(
      "Copy an embedded install (its SQLite store) into an empty PostgreSQL database, verify the copy, and carry the master secret",
    )
    .requiredOption("--to <url>", "the PostgreSQL database: postgres://user:password@host:5432/database")
    .option(
      "--from <dir>",
      "the embedded install's data dir (default: --data-dir, the one the PostgreSQL install will run with)",
    )
    .action(async (opts: { to: string; from?: string }, cmd: Command) => {
      const json = ctx.globals(cmd).json;
      const runDir = ctx.config(cmd).dataDir;
      const fromDir = resolve(opts.from ?? runDir);
      if (!existsSync(join(fromDir, "vsearch.db"))) {
        throw new MigrateStoreError(`no embedded install in ${fromDir}: ${join(fromDir, "vsearch.db")} does not exist`);
      }
      // Rows written after the snapshot would be lost: no server on the source while it is copied.
      const lock = new InstanceLock(fromDir);
      const held = lock.acquire({});
      if (!held.ok) {
        const h = held.holder;
        if (h.pid !== process.pid && holderAlive(h)) {
          throw new MigrateStoreError(
            `vsearch serve (pid ${h.pid}) is running on ${fromDir}: stop it first, so that nothing is written after the copy`,
          );
        }
      }
      try {
        const runConfig = ctx.config(cmd);
        const secret = carrySecret(fromDir, clusterSecretFile(runConfig));
        const mediaRoot = resolve(runConfig.mediaRoot);
        const bar = new ProgressBar(ctx.stderr, !json && process.stderr.isTTY);
        const report = await migrateStore({
          fromDir,
          to: opts.to,
          onProgress: (p) => bar.update(p.allDone, p.allTotal, `${p.table} ${p.done}/${p.total} rows`),
        }).finally(() => bar.done());
        const inPlace = fromDir === mediaRoot;
        const next = [
          `next: set VSEARCH_DATABASE_URL (or database_url in ${resolve(runDir, "config.json")}) to the --to URL (${describeUrl(opts.to)}) and start vsearch serve --data-dir ${resolve(runDir)}`,
          `  ${secret.message}`,
          ...(inPlace
            ? [
                fromDir === resolve(runDir)
                  ? `  the videos, thumbnails and models stay in ${fromDir}, where the PostgreSQL install reads them`
                  : `  the videos and thumbnails stay in ${fromDir}/videos, where the PostgreSQL install reads them; move models/ into ${resolve(runDir)}`,
              ]
            : [
                `  the videos and thumbnails are files of ${fromDir}/videos: move that folder into ${mediaRoot} (the media root) and models/ into ${resolve(runDir)} before serving`,
              ]),
          `  ${fromDir}/vsearch.db is left as it was (keep it until the PostgreSQL install has served a while)`,
        ];
        ctx.print(cmd, { ...report, secret, data_dir: resolve(runDir), media_root: mediaRoot, from: fromDir }, () =>
          [
            `Copied ${report.rows} rows in ${report.tables.length} tables into ${report.target} in ${report.seconds.toFixed(1)} s (${Math.round(report.rows / Math.max(report.seconds, 0.001))} rows/s)`,
            ...report.tables.filter((t) => t.rows > 0).map((t) => `  ${t.table.padEnd(22)} ${t.rows}`),
            `verified: row counts of every table equal; ${report.verified.vectors_compared} vectors equal byte for byte; ` +
              (report.verified.searches
                .map((s) => `"${s.query}" finds ${s.postgres_hits}/${s.sqlite_hits} ${s.table}`)
                .join(", ") || "no text to search"),
            ...report.notes.map((n) => `note: ${n}`),
            `not copied: full-text indexes (PostgreSQL computes its tsvector columns) and sqlite-vec tables (vectors are in frame_vectors / shot_vectors)`,
            ...next,
          ].join("\n"),
        );
      } finally {
        lock.release();
      }
    });
}
