import { mkdirSync } from "node:fs";
import type { Command } from "commander";
import { createApp } from "../app.ts";
import { createLogger } from "../core/logger.ts";
import { ConfigError } from "../config/config.ts";
import { bunServeOptions } from "../http/serve-options.ts";
import type { CliContext } from "../cli/context.ts";
import { InstanceLock } from "../cli/instance-lock.ts";
import { portInUse } from "../cli/port-check.ts";
import { localBaseUrl } from "../signing/link-origin.ts";
import { networkInterfaces } from "node:os";

interface ServeOptions {
  host?: string;
  port?: number;
  role?: "all" | "serve";
  sharePort?: boolean;
}

export function registerServeCommand(program: Command, ctx: CliContext) {
  program
    .command("serve")
    .description("Run the HTTP API, the ingest workers and webhook delivery")
    .option("--host <host>", "address to listen on (default 127.0.0.1)")
    .option("--port <port>", "port (default 8080; 0 picks a free one)", (v) => Number.parseInt(v, 10))
    .option(
      "--role <role>",
      "all (default: HTTP and the jobs) or serve (HTTP only: the jobs run on `vsearch worker` processes)",
      (v) => {
        if (v !== "all" && v !== "serve") throw new ConfigError(`--role must be all or serve, got "${v}"`);
        return v;
      },
    )
    .option(
      "--share-port",
      "let other serve processes of this install (PostgreSQL, a data dir each) listen on the same port: the kernel spreads connections among them",
    )
    .action(async (opts: ServeOptions, cmd: Command) => {
      const config = ctx.config(cmd, { host: opts.host, port: opts.port });
      if (opts.sharePort) assertPortShareable(config);
      mkdirSync(config.dataDir, { recursive: true });
      const lock = new InstanceLock(config.dataDir);
      const got = lock.acquire({});
      if (!got.ok) {
        throw new Error(
          `another vsearch serve (pid ${got.holder.pid}${got.holder.url ? `, ${got.holder.url}` : ""}) is already using data dir ${config.dataDir}; stop it first or use another --data-dir (CLI commands work beside it)`,
        );
      }
      // A shared port is in use by the install's other processes: that is the point.
      if (!opts.sharePort && (await portInUse(config.host, config.port).catch(() => false))) {
        lock.release();
        throw new Error(
          `port ${config.port} on ${config.host} is already in use (another vsearch serve or another program); stop it or pick another --port`,
        );
      }
      const logger = createLogger(config.logLevel);
      let app;
      let server;
      try {
        app = await createApp(config, { runtime: await ctx.runtime(config), logger, role: opts.role ?? "all" });
        server = Bun.serve({ ...bunServeOptions(app, config), reusePort: opts.sharePort === true });
      } catch (e) {
        lock.release();
        await app?.close();
        throw e;
      }
      // On 0.0.0.0 / :: the server answers on every address; links follow the one each request
      // came to, and this machine (the CLI, `vsearch mcp`) reaches it on loopback.
      const port = server.port ?? config.port;
      const url = localBaseUrl(config.host, port);
      const everywhere = ["0.0.0.0", "::", "[::]"].includes(config.host);
      const alsoAt = everywhere ? lanUrls(port) : [];
      app.setBaseUrl(url);
      lock.update({ url });
      try {
        await app.start();
      } catch (e) {
        // Refused at start (another version running, another cluster secret): nothing stays up.
        await server.stop(true);
        await app.close().catch(() => {});
        lock.release();
        throw e;
      }
      logger.info("listening", { url, data_dir: config.dataDir, ...(everywhere ? { also_at: alsoAt } : {}) });
      // First run (SPEC §10): no account yet, so a one-time link lets a browser create the first.
      const setupToken = await app.services.setup.issueToken();
      const setupUrl = setupToken ? `${url}/#/setup?token=${setupToken}` : null;
      ctx.print(cmd, { url, data_dir: config.dataDir, pid: process.pid, also_at: alsoAt, setup_url: setupUrl }, () =>
        [
          `vsearch listening on ${url} (data dir ${config.dataDir})`,
          ...(alsoAt.length ? [`from other machines: ${alsoAt.join("  ")}`] : []),
          ...(setupUrl
            ? [
                "",
                "No account yet. Open this one-time setup link to create the first account and its admin:",
                `  ${setupUrl}`,
                ...(alsoAt.length ? [`  (from another machine: ${alsoAt[0]}/#/setup?token=${setupToken})`] : []),
                "It works until it is used (each start prints a new one). Or use the CLI: vsearch accounts create.",
              ]
            : []),
        ].join("\n"),
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

/**
 * `--share-port` (issue 27): one process runs its requests' JavaScript on one thread, so on one
 * machine more search throughput is more `serve` processes on one port (Linux SO_REUSEPORT: the
 * kernel hands each new connection to one of them). They must be one install — every row in one
 * PostgreSQL, which tells each process what the others wrote — or a client would see a different
 * archive on each connection; so the embedded store (one process per data dir) refuses it.
 */
function assertPortShareable(config: { databaseUrl?: string; port: number }): void {
  if (!config.databaseUrl)
    throw new ConfigError(
      "--share-port needs database_url (VSEARCH_DATABASE_URL): the processes sharing a port must share one PostgreSQL database; the embedded store is one serve process per data dir",
    );
  if (!config.port)
    throw new ConfigError("--share-port needs a fixed --port (0 picks a different free port each time)");
}

/** The machine's non-loopback addresses, as URLs a LAN client could use (IPv4 first). */
function lanUrls(port: number): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? [])
      if (!a.internal && !(a.family === "IPv6" && a.address.startsWith("fe80")))
        out.push(a.family === "IPv6" ? `http://[${a.address}]:${port}` : `http://${a.address}:${port}`);
  return out.sort((a, b) => Number(a.includes("[")) - Number(b.includes("[")));
}
