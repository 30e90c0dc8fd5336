import type { Command } from "commander";
import { buildMcpServer } from "../agent/mcp-server.ts";
import { LineTransport } from "../agent/mcp-stdio.ts";
import { createApp } from "../app.ts";
import type { CliContext } from "../cli/context.ts";
import { InstanceLock } from "../cli/instance-lock.ts";
import { createLogger } from "../core/logger.ts";
import { VERSION } from "../version.ts";

/**
 * `vsearch mcp --account ID`: the agent tools over MCP on stdin/stdout, for a desktop agent on the
 * same machine. It opens the data dir like any CLI command (SQLite WAL: it works beside a running
 * `serve`, whose lock it does not take) and starts no task queue worker or webhook delivery; the query
 * encoder's worker pool starts on the first search that needs it. stdout carries only protocol
 * bytes; logs go to stderr. No key and no rate limit: whoever can start it can read the data dir.
 */
export function registerMcpCommand(program: Command, ctx: CliContext) {
  program
    .command("mcp")
    .description("Serve the agent tools over MCP on stdio (for a desktop agent's MCP config)")
    .option("--account <account>", "the account the agent reads: name or id (default: the only account)")
    .action(async (opts: { account?: string }, cmd: Command) => {
      const config = ctx.config(cmd);
      const logger = createLogger(ctx.globals(cmd).logLevel ?? (ctx.env.VSEARCH_LOG_LEVEL as never) ?? "warn");
      const app = await createApp(config, { runtime: await ctx.runtime(config), logger });
      try {
        const accountId = (await app.services.accounts.resolve(opts.account)).id;
        // Presigned links should open on the running server, when there is one.
        const holder = new InstanceLock(config.dataDir).read();
        if (holder?.url && alive(holder.pid)) app.setBaseUrl(holder.url);

        const server = buildMcpServer(app.services.agent, {
          accountId,
          version: VERSION,
          logger,
          callTimeoutMs: config.agentCallTimeoutSecs * 1000,
        });
        // Lines over the JSON body cap, too deep or not JSON are answered with JSON-RPC errors (mcp-stdio.ts).
        const transport = new LineTransport(process.stdin, process.stdout, { maxLineBytes: config.maxJsonBytes });
        const closed = new Promise<void>((resolve) => {
          transport.onclose = () => resolve();
          process.stdin.once("end", () => resolve());
          process.stdin.once("close", () => resolve());
          process.once("SIGINT", () => resolve());
          process.once("SIGTERM", () => resolve());
        });
        await server.connect(transport);
        logger.info("mcp on stdio", { account_id: accountId, data_dir: config.dataDir });
        await closed;
        await server.close().catch(() => {});
      } finally {
        await app.close();
      }
    });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
