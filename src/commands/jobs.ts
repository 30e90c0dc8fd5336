import type { Command } from "commander";
import { type CliContext, table } from "../cli/context.ts";
import type { JobStatus } from "../jobs/schema.ts";

export function registerJobCommands(program: Command, ctx: CliContext) {
  program
    .command("jobs")
    .description("List an account's indexing jobs, newest first")
    .requiredOption("--account <id>", "account id (usr_…)")
    .option("--status <status>", "queued | pending | processing | done | failed")
    .option("--limit <n>", "how many", (v) => Number(v), 50)
    .action(async (opts: { account: string; status?: string; limit: number }, cmd: Command) => {
      const list = await ctx.withApp(cmd, (app) => {
        app.services.accounts.getAccount(opts.account);
        return app.services.jobs.list(opts.account, { status: opts.status as JobStatus | undefined }, { page: 1, perPage: opts.limit }).items;
      });
      ctx.print(cmd, list, () =>
        table(list.map((j) => ({ ...j, error: j.error ? j.error.code : null })) as never, ["id", "video_id", "status", "stage", "progress_pct", "error", "created_at"]),
      );
    });
}
