import type { Command } from "commander";
import { type CliContext, table } from "../cli/context.ts";
import { ACCOUNT_HELP } from "./accounts.ts";

/** Same service calls and validation as /v1/api_keys; the CLI acts as the operator of the data dir. */
export function registerKeyCommands(program: Command, ctx: CliContext) {
  const keys = program.command("keys").description("Create, list and revoke API keys");

  keys
    .command("create")
    .option("--account <account>", ACCOUNT_HELP)
    .requiredOption("--name <name>", "display name")
    .option("--permissions <level>", "all | read_only", "all")
    .action(async (opts: { account?: string; name: string; permissions: string }, cmd: Command) => {
      const key = await ctx.withApp(
        cmd,
        async (app) =>
          await app.services.apiKeys.create((await app.services.accounts.resolve(opts.account)).id, {
            name: opts.name,
            permissions: opts.permissions,
          }),
      );
      ctx.print(
        cmd,
        key,
        `Created ${key.permissions} key ${key.id} "${key.name}"\n\n  ${key.key}\n\nThis secret is shown once; store it now.`,
      );
    });

  keys
    .command("list")
    .option("--account <account>", ACCOUNT_HELP)
    .action(async (opts: { account?: string }, cmd: Command) => {
      const list = await ctx.withApp(
        cmd,
        async (app) => await app.services.apiKeys.list((await app.services.accounts.resolve(opts.account)).id),
      );
      ctx.print(cmd, list, () =>
        table(list as never, ["id", "name", "prefix", "permissions", "last_used_at", "revoked_at"]),
      );
    });

  keys
    .command("revoke <key_id>")
    .option("--account <account>", "account name or id; looked up from the key when omitted")
    .action(async (keyId: string, opts: { account?: string }, cmd: Command) => {
      const key = await ctx.withApp(
        cmd,
        async (app) =>
          await app.services.apiKeys.revokeAsOperator(
            keyId,
            opts.account === undefined ? undefined : (await app.services.accounts.resolve(opts.account)).id,
          ),
      );
      ctx.print(cmd, key, `Revoked key ${key.id} "${key.name}" at ${key.revoked_at}`);
    });
}
