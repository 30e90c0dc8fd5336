import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";

export function registerCreditCommands(program: Command, ctx: CliContext) {
  const credits = program.command("credits").description("Optional metering: grant and inspect an account's credits");
  credits
    .command("grant")
    .description("Add credits (an unlimited account becomes metered)")
    .requiredOption("--account <id>", "account id (usr_…)")
    .requiredOption("--amount <n>", "credits to add", (v) => Number(v))
    .action(async (opts: { account: string; amount: number }, cmd: Command) => {
      const r = await ctx.withApp(cmd, (app) => app.services.credits.grant(opts.account, opts.amount));
      ctx.print(cmd, { user_id: opts.account, ...r }, `Account ${opts.account} now has ${r.balance} credits`);
    });
  credits
    .command("unlimited")
    .description("Stop metering: the account's balance becomes unlimited again (the ledger is kept)")
    .requiredOption("--account <id>", "account id (usr_…)")
    .action(async (opts: { account: string }, cmd: Command) => {
      await ctx.withApp(cmd, (app) => app.services.credits.setUnlimited(opts.account));
      ctx.print(
        cmd,
        { user_id: opts.account, balance: null, metered: false },
        `Account ${opts.account} is unlimited (not metered) again`,
      );
    });
  credits
    .command("show")
    .requiredOption("--account <id>", "account id (usr_…)")
    .action(async (opts: { account: string }, cmd: Command) => {
      const r = await ctx.withApp(cmd, (app) => app.services.credits.show(opts.account));
      ctx.print(cmd, r, () =>
        [
          `balance    ${r.balance === null ? "unlimited (not metered)" : r.balance}`,
          `low at     ${r.low_threshold}`,
          ...r.ledger.map(
            (l) => `${l.created_at}  ${l.delta > 0 ? "+" : ""}${l.delta}  ${l.reason}  → ${l.balance_after}`,
          ),
        ].join("\n"),
      );
    });
}
