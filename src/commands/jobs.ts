import { type Command, InvalidArgumentError } from "commander";
import { type CliContext, table } from "../cli/context.ts";
import { JOB_STATUSES, type JobStatus } from "../jobs/schema.ts";
import { ACCOUNT_HELP } from "./accounts.ts";

/** A bad filter is a usage error (exit 2), as it is a 422 over HTTP — not an empty list. */
const jobStatus = (v: string): JobStatus => {
  if (!(JOB_STATUSES as readonly string[]).includes(v))
    throw new InvalidArgumentError(`must be one of ${JOB_STATUSES.join(", ")}`);
  return v as JobStatus;
};

export function registerJobCommands(program: Command, ctx: CliContext) {
  const jobs = program
    .command("jobs")
    .description("List an account's indexing jobs, newest first")
    .option("--account <account>", ACCOUNT_HELP)
    .option("--status <status>", "queued | pending | processing | done | failed", jobStatus)
    .option("--limit <n>", "how many", (v) => Number(v), 50)
    .action(async (opts: { account?: string; status?: JobStatus; limit: number }, cmd: Command) => {
      const list = await ctx.withApp(cmd, async (app) => {
        const account = (await app.services.accounts.resolve(opts.account)).id;
        return (await app.services.jobs.list(account, { status: opts.status }, { page: 1, perPage: opts.limit })).items;
      });
      ctx.print(cmd, list, () =>
        table(list.map((j) => ({ ...j, error: j.error ? j.error.code : null })) as never, [
          "id",
          "video_id",
          "status",
          "stage",
          "progress_pct",
          "error",
          "created_at",
        ]),
      );
    });
  registerJobRetryCommand(jobs, ctx);
}

/** `vsearch jobs retry JOB_ID`: the CLI side of POST /v1/jobs/{id}/retry (same service call). */
function registerJobRetryCommand(jobs: Command, ctx: CliContext) {
  jobs
    .command("retry <job_id>")
    .description("Run a failed job again from the start (after fixing what made it fail)")
    .option("--account <account>", "account name or id; default: the job's own")
    .action(async (jobId: string, opts: { account?: string }, cmd: Command) => {
      const job = await ctx.withApp(
        cmd,
        async (app) =>
          await app.services.jobs.retry(
            opts.account === undefined
              ? await app.services.jobs.accountOf(jobId)
              : (await app.services.accounts.resolve(opts.account)).id,
            jobId,
          ),
      );
      ctx.print(
        cmd,
        job,
        `Job ${job.id} queued again (video ${job.video_id}); a running server picks it up within a second, or run \`vsearch ingest\`/\`serve\``,
      );
    });
}
