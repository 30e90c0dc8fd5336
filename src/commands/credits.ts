import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";
import { ACCOUNT_HELP } from "./accounts.ts";

export function registerCreditCommands(program: Command, ctx: CliContext) {
  const credits = program.command("credits").description("Optional metering: grant and inspect an account's credits");
  credits
    .command("grant")
    .description("Add credits (an unlimited account becomes metered)")
    .option("--account <account>", ACCOUNT_HELP)
    .requiredOption("--amount <n>", "credits to add", (v) => Number(v))
    .action(async (opts: { account?: string; amount: number }, cmd: Command) => {
      const { id, r } = await ctx.withApp(cmd, async (app) => {
        const id = (await app.services.accounts.resolve(opts.account)).id;
        return { id, r: await app.services.credits.grant(id, opts.amount) };
      });
      ctx.print(cmd, { user_id: id, ...r }, `Account ${id} now has ${r.balance} credits`);
    });
  credits
    .command("unlimited")
    .description("Stop metering: the account's balance becomes unlimited again (the ledger is kept)")
    .option("--account <account>", ACCOUNT_HELP)
    .action(async (opts: { account?: string }, cmd: Command) => {
      const id = await ctx.withApp(cmd, async (app) => {
        const id = (await app.services.accounts.resolve(opts.account)).id;
        await app.services.credits.setUnlimited(id);
        return id;
      });
      ctx.print(cmd, { user_id: id, balance: null, metered: false }, `Account ${id} is unlimited (not metered) again`);
    });
  credits
    .command("show")
    .option("--account <account>", ACCOUNT_HELP)
    .action(async (opts: { account?: string }, cmd: Command) => {
      const r = await ctx.withApp(
        cmd,
        async (app) => await app.services.credits.show((await app.services.accounts.resolve(opts.account)).id),
      );
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
