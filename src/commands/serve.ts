import { mkdirSync } from "node:fs";
import type { Command } from "commander";
import { createApp } from "../app.ts";
import { createLogger } from "../core/logger.ts";
import { bunServeOptions } from "../http/serve-options.ts";
import type { CliContext } from "../cli/context.ts";
import { InstanceLock } from "../cli/instance-lock.ts";
import { portInUse } from "../cli/port-check.ts";

export function registerServeCommand(program: Command, ctx: CliContext) {
  program
    .command("serve")
    .description("Run the HTTP API, the ingest workers and webhook delivery")
    .option("--host <host>", "address to listen on (default 127.0.0.1)")
    .option("--port <port>", "port (default 8080; 0 picks a free one)", (v) => Number.parseInt(v, 10))
    .action(async (opts: { host?: string; port?: number }, cmd: Command) => {
      const config = ctx.config(cmd, { host: opts.host, port: opts.port });
      mkdirSync(config.dataDir, { recursive: true });
      const lock = new InstanceLock(config.dataDir);
      const got = lock.acquire({});
      if (!got.ok) {
        throw new Error(
          `another vsearch serve (pid ${got.holder.pid}${got.holder.url ? `, ${got.holder.url}` : ""}) is already using data dir ${config.dataDir}; stop it first or use another --data-dir (CLI commands work beside it)`,
        );
      }
      if (await portInUse(config.host, config.port).catch(() => false)) {
        lock.release();
        throw new Error(
          `port ${config.port} on ${config.host} is already in use (another vsearch serve or another program); stop it or pick another --port`,
        );
      }
      const logger = createLogger(config.logLevel);
      let app;
      let server;
      try {
        app = await createApp(config, { runtime: await ctx.runtime(config), logger });
        server = Bun.serve(bunServeOptions(app, config));
      } catch (e) {
        lock.release();
        await app?.close();
        throw e;
      }
      const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.port}`;
      app.setBaseUrl(url);
      lock.update({ url });
      await app.start();
      logger.info("listening", { url, data_dir: config.dataDir });
      ctx.print(
        cmd,
        { url, data_dir: config.dataDir, pid: process.pid },
        `vsearch listening on ${url} (data dir ${config.dataDir})`,
      );

      await new Promise<void>((resolve) => {
        const stop = async (signal: string) => {
          logger.info("shutting down", { signal });
          // Not awaited: it resolves once in-flight requests finish, and a slow client (an upload
          // trickling in) must not hold the shutdown; new connections are refused at once, and
          // app.close() ends the work those requests depend on. It never rejects.
          void server.stop();
          await app.close();
          lock.release();
          resolve();
        };
        process.once("SIGINT", () => void stop("SIGINT"));
        process.once("SIGTERM", () => void stop("SIGTERM"));
      });
    });
}
