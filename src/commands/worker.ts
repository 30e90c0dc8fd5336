import { mkdirSync } from "node:fs";
import type { Command } from "commander";
import { createApp } from "../app.ts";
import { ConfigError } from "../config/config.ts";
import { createLogger } from "../core/logger.ts";
import type { CliContext } from "../cli/context.ts";
import { InstanceLock } from "../cli/instance-lock.ts";
import { TASK_KINDS, type TaskKind } from "../jobs/task-store.ts";

/** `--kinds ingest,ocr`: known kinds only, at least one. */
function parseKinds(v: string): TaskKind[] {
  const kinds = [...new Set(v.split(",").map((k) => k.trim()))].filter(Boolean);
  const bad = kinds.filter((k) => !(TASK_KINDS as readonly string[]).includes(k));
  if (bad.length || !kinds.length)
    throw new ConfigError(`--kinds must list one or more of ${TASK_KINDS.join(", ")}, got "${v}"`);
  return kinds as TaskKind[];
}

function parseConcurrency(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new ConfigError(`--concurrency must be a positive integer, got "${v}"`);
  return n;
}

/**
 * `vsearch worker` (SPEC §13, issue 26): a process that only claims and runs tasks (ingest, OCR,
 * web renditions) from the shared PostgreSQL database — no HTTP, no search index, no webhook
 * delivery. It registers in the node registry (`vsearch nodes`) and claims nothing while its
 * models differ from the servers'. SIGTERM hands its running tasks back; a killed worker's tasks
 * are claimed again by any node once their leases run out.
 */
export function registerWorkerCommand(program: Command, ctx: CliContext) {
  program
    .command("worker")
    .description("Claim and run ingest, OCR and rendition jobs from a shared PostgreSQL database (no HTTP)")
    .option("--database-url <url>", "the shared PostgreSQL database (env VSEARCH_DATABASE_URL)")
    .option("--media-root <dir>", "the media every node mounts (env VSEARCH_MEDIA_ROOT; default: the data dir)")
    .option(
      "--kinds <kinds>",
      `which tasks to claim, comma-separated (default all: ${TASK_KINDS.join(",")})`,
      parseKinds,
    )
    .option("--concurrency <n>", "ingest and OCR tasks run at once (env VSEARCH_JOB_CONCURRENCY)", parseConcurrency)
    .action(
      async (
        opts: { databaseUrl?: string; mediaRoot?: string; kinds?: TaskKind[]; concurrency?: number },
        cmd: Command,
      ) => {
        const config = ctx.config(cmd, {
          databaseUrl: opts.databaseUrl,
          mediaRoot: opts.mediaRoot,
          jobConcurrency: opts.concurrency,
        });
        if (!config.databaseUrl)
          throw new ConfigError(
            "vsearch worker needs database_url (--database-url or VSEARCH_DATABASE_URL): workers share a PostgreSQL database with the servers; the embedded store runs its jobs inside `vsearch serve`",
          );
        mkdirSync(config.dataDir, { recursive: true });
        // One process per data dir: the node id (and the leases it takes back at start) is the data dir's.
        const lock = new InstanceLock(config.dataDir);
        const got = lock.acquire({});
        if (!got.ok)
          throw new Error(
            `another vsearch process (pid ${got.holder.pid}${got.holder.url ? `, ${got.holder.url}` : ""}) is already using data dir ${config.dataDir}; give each worker a --data-dir of its own`,
          );
        const logger = createLogger(config.logLevel);
        const kinds = opts.kinds ?? [...TASK_KINDS];
        let app;
        try {
          app = await createApp(config, {
            runtime: await ctx.runtime(config),
            logger,
            role: "worker",
            kinds,
            applicationName: "worker",
          });
          await app.start();
        } catch (e) {
          await app?.close();
          lock.release();
          throw e;
        }
        const refused = app.services.nodes.refused;
        logger.info("worker started", { data_dir: config.dataDir, kinds, concurrency: config.jobConcurrency });
        ctx.print(
          cmd,
          { data_dir: config.dataDir, pid: process.pid, kinds, concurrency: config.jobConcurrency, refused },
          () =>
            [
              `vsearch worker running (data dir ${config.dataDir}; ${kinds.join(", ")}; ${config.jobConcurrency} at once)`,
              ...(refused ? [`claiming nothing: ${refused}`] : []),
            ].join("\n"),
        );
        await new Promise<void>((resolve) => {
          const stop = async (signal: string) => {
            logger.info("shutting down", { signal });
            await app.close(); // running tasks are handed back, not left to their leases
            lock.release();
            resolve();
          };
          process.once("SIGINT", () => void stop("SIGINT"));
          process.once("SIGTERM", () => void stop("SIGTERM"));
        });
      },
    );
}
