import type { Command } from "commander";
import { type CliContext, table } from "../cli/context.ts";

export function registerAccountCommands(program: Command, ctx: CliContext) {
  const accounts = program.command("accounts").description("Manage accounts (tenants)");

  accounts
    .command("create")
    .description("Create an account")
    .requiredOption("--name <name>", "display name")
    .option("--plan <plan>", "free | payg | enterprise", "enterprise")
    .action(async (opts: { name: string; plan: string }, cmd: Command) => {
      const account = await ctx.withApp(cmd, (app) =>
        app.services.accounts.createAccount({ name: opts.name, plan: opts.plan }),
      );
      ctx.print(cmd, account, `Created account ${account.id} (${account.name}, plan ${account.plan})`);
    });

  accounts
    .command("list")
    .description("List accounts")
    .action(async (_opts: unknown, cmd: Command) => {
      const list = await ctx.withApp(cmd, (app) => app.services.accounts.listAccounts());
      ctx.print(cmd, list, () => table(list as never, ["id", "name", "plan", "credits_balance", "created_at"]));
    });

  accounts
    .command("delete <id>")
    .description("Delete an account: fires account.deleted to its webhooks, then purges all its data and files")
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const r = await ctx.withApp(cmd, (app) => app.services.accountDeletion.delete(id));
      ctx.print(
        cmd,
        r,
        `Deleted account ${r.user_id}: ${r.videos_deleted} video(s) purged; account.deleted sent to ${r.deliveries.length} endpoint(s) (${r.deliveries.map((d) => d.status).join(", ") || "none"})`,
      );
    });

  accounts
    .command("set-plan <id> <plan>")
    .description("Change an account's plan (free | payg | enterprise)")
    .action(async (id: string, plan: string, _o: unknown, cmd: Command) => {
      const account = await ctx.withApp(cmd, (app) => app.services.accounts.setPlan(id, plan));
      ctx.print(cmd, account, `Account ${account.id} is now on plan ${account.plan}`);
    });

  const users = program.command("users").description("Manage the people who sign in to an account");
  users
    .command("create")
    .description("Create a user who signs in with e-mail and password")
    .requiredOption("--account <id>", "account id (usr_…)")
    .requiredOption("--email <email>", "sign-in e-mail")
    .requiredOption("--password <password>", "password (at least 8 characters)")
    .option("--admin", "give the admin role (needed to manage API keys)")
    .action(async (opts: { account: string; email: string; password: string; admin?: boolean }, cmd: Command) => {
      const user = await ctx.withApp(cmd, (app) =>
        app.services.accounts.createUser({
          account_id: opts.account,
          email: opts.email,
          password: opts.password,
          role: opts.admin ? "admin" : "member",
        }),
      );
      ctx.print(cmd, user, `Created ${user.role} ${user.email} (${user.id}) in account ${user.account_id}`);
    });
  users
    .command("list")
    .requiredOption("--account <id>", "account id (usr_…)")
    .action(async (opts: { account: string }, cmd: Command) => {
      const list = await ctx.withApp(cmd, (app) => app.services.accounts.listUsers(opts.account));
      ctx.print(cmd, list, () => table(list as never, ["id", "email", "role", "created_at"]));
    });
}
