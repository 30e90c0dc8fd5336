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
      const account = await ctx.withApp(
        cmd,
        async (app) => await app.services.accounts.createAccount({ name: opts.name, plan: opts.plan }),
      );
      ctx.print(cmd, account, `Created account ${account.id} (${account.name}, plan ${account.plan})`);
    });

  accounts
    .command("list")
    .description("List accounts")
    .action(async (_opts: unknown, cmd: Command) => {
      const list = await ctx.withApp(cmd, async (app) => await app.services.accounts.listAccounts());
      ctx.print(cmd, list, () => table(list as never, ["id", "name", "plan", "credits_balance", "created_at"]));
    });

  accounts
    .command("delete <account>")
    .description(
      "Delete an account (id or name): fires account.deleted to its webhooks, then purges all its data and files",
    )
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const r = await ctx.withApp(cmd, async (app) =>
        app.services.accountDeletion.delete((await app.services.accounts.resolve(ref)).id),
      );
      ctx.print(
        cmd,
        r,
        `Deleted account ${r.user_id}: ${r.videos_deleted} video(s) purged; account.deleted sent to ${r.deliveries.length} endpoint(s) (${r.deliveries.map((d) => d.status).join(", ") || "none"})`,
      );
    });

  accounts
    .command("set-plan <account> <plan>")
    .description("Change an account's plan (free | payg | enterprise); the account by id or name")
    .action(async (ref: string, plan: string, _o: unknown, cmd: Command) => {
      const account = await ctx.withApp(
        cmd,
        async (app) => await app.services.accounts.setPlan((await app.services.accounts.resolve(ref)).id, plan),
      );
      ctx.print(cmd, account, `Account ${account.id} is now on plan ${account.plan}`);
    });

  const users = program.command("users").description("Manage the people who sign in to an account");
  users
    .command("create")
    .description("Create a user who signs in with e-mail and password")
    .option("--account <account>", ACCOUNT_HELP)
    .requiredOption("--email <email>", "sign-in e-mail")
    .requiredOption("--password <password>", "password (at least 8 characters)")
    .option("--admin", "give the admin role (manages API keys, webhooks and users)")
    .action(async (opts: { account?: string; email: string; password: string; admin?: boolean }, cmd: Command) => {
      const user = await ctx.withApp(cmd, async (app) =>
        app.services.accounts.createUser({
          account_id: (await app.services.accounts.resolve(opts.account)).id,
          email: opts.email,
          password: opts.password,
          role: opts.admin ? "admin" : "member",
        }),
      );
      ctx.print(cmd, user, `Created ${user.role} ${user.email} (${user.id}) in account ${user.account_id}`);
    });
  users
    .command("list")
    .description("List an account's users")
    .option("--account <account>", ACCOUNT_HELP)
    .action(async (opts: { account?: string }, cmd: Command) => {
      const list = await ctx.withApp(
        cmd,
        async (app) => await app.services.accounts.listUsers((await app.services.accounts.resolve(opts.account)).id),
      );
      ctx.print(cmd, list, () => table(list as never, ["id", "email", "role", "must_change_password", "created_at"]));
    });
  users
    .command("passwd <user>")
    .description(
      "Set a user's password (user by e-mail or id): a one-time password they must change at next sign-in (printed when --password is not given); their sessions end",
    )
    .option("--password <password>", "the new password (default: a generated one-time password)")
    .option("--permanent", "an ordinary password the user need not change (e.g. your own)")
    .action(async (ref: string, opts: { password?: string; permanent?: boolean }, cmd: Command) => {
      const r = await ctx.withApp(cmd, (app) =>
        app.services.users.resetPassword(null, ref, { password: opts.password }, { permanent: opts.permanent }),
      );
      const ended = `${r.sessions_ended} session(s) ended`;
      ctx.print(
        cmd,
        r,
        r.one_time_password
          ? `One-time password for ${r.user.email}: ${r.one_time_password}\n(they sign in with it and must choose their own; ${ended})`
          : `Password of ${r.user.email} changed (${ended})`,
      );
    });
  users
    .command("role <user> <role>")
    .description("Make a user (e-mail or id) an admin or a member; the last admin stays an admin")
    .action(async (ref: string, role: string, _o: unknown, cmd: Command) => {
      const user = await ctx.withApp(cmd, async (app) => await app.services.users.setRole(null, ref, { role }));
      ctx.print(cmd, user, `${user.email} is now ${user.role === "admin" ? "an admin" : "a member"}`);
    });
  users
    .command("remove <user>")
    .description("Remove a user (e-mail or id); their sessions end at once; the last admin cannot be removed")
    .action(async (ref: string, _o: unknown, cmd: Command) => {
      const user = await ctx.withApp(cmd, async (app) => await app.services.users.remove(null, ref));
      ctx.print(cmd, user, `Removed ${user.email} (${user.id})`);
    });
}

/** The help of every `--account` option: a name works as well as an id, and one account needs neither. */
export const ACCOUNT_HELP = "account name or id (default: the only account)";
