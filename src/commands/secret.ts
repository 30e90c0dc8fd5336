import type { Command } from "commander";
import { createApp } from "../app.ts";
import type { CliContext } from "../cli/context.ts";
import { ConfigError } from "../config/config.ts";
import { createLogger } from "../core/logger.ts";
import { clusterSecretFile } from "../signing/cluster-secret.ts";

/**
 * `vsearch secret adopt --yes`: the way out when the install's cluster secret is lost for good.
 * Every node refuses to start with a secret whose fingerprint is not the database's
 * (signing/secret-fingerprint.ts); this records this node's secret as the install's instead.
 */
export function registerSecretCommand(program: Command, ctx: CliContext) {
  const secret = program
    .command("secret")
    .description("The cluster secret (signs presigned URLs, seals webhook secrets)");
  secret
    .command("adopt")
    .description(
      "Make this node's cluster secret the install's (when the old one is lost for good): links signed and webhook secrets sealed with the old one stop working",
    )
    .option("--yes", "confirm: presigned links and sealed webhook secrets made with the old secret stop working")
    .action(async (opts: { yes?: boolean }, cmd: Command) => {
      const config = ctx.config(cmd);
      const file = clusterSecretFile(config);
      if (!opts.yes)
        throw new ConfigError(
          `this makes ${file} the install's cluster secret: links signed and webhook secrets sealed with the old one stop working (re-create those webhooks). Run again with --yes`,
        );
      const app = await createApp(config, {
        runtime: await ctx.runtime(config),
        logger: createLogger(ctx.globals(cmd).logLevel ?? "warn"),
        adoptSecret: true,
        applicationName: "secret adopt",
      });
      await app.close();
      ctx.print(
        cmd,
        { adopted: file },
        `${file} is now the install's cluster secret: copy it to every node (or point their secret_file at it); re-create webhooks whose secrets were sealed with the old one`,
      );
    });
}
