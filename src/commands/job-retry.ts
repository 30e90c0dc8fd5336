import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";

/** `vsearch jobs retry JOB_ID`: the CLI side of POST /v1/jobs/{id}/retry (same service call). */
export function registerJobRetryCommand(jobs: Command, ctx: CliContext) {
  jobs
    .command("retry <job_id>")
    .description("Run a failed job again from the start (after fixing what made it fail)")
    .option("--account <id>", "account id (usr_…); default: the job's own")
    .action(async (jobId: string, opts: { account?: string }, cmd: Command) => {
      const job = await ctx.withApp(cmd, (app) => app.services.jobs.retry(opts.account ?? app.services.jobs.accountOf(jobId), jobId));
      ctx.print(cmd, job, `Job ${job.id} queued again (video ${job.video_id}); a running server picks it up within a second, or run \`vsearch ingest\`/\`serve\``);
    });
}
