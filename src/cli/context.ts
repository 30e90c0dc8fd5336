import type { Command } from "commander";
import { type App, type AppRuntime, createApp } from "../app.ts";
import { type Config, type ConfigFlags, loadConfig } from "../config/config.ts";
import { createLogger } from "../core/logger.ts";
import { escapeControls, escapeForTerminal, escapeJsonForTerminal } from "../core/terminal.ts";

export interface GlobalOptions {
  dataDir?: string;
  json?: boolean;
  logLevel?: Config["logLevel"];
}

/** What every command gets: config resolution, the app, and output in the chosen format. */
export interface CliContext {
  env: Record<string, string | undefined>;
  globals(cmd: Command): GlobalOptions;
  config(cmd: Command, flags?: ConfigFlags): Config;
  runtime(config: Config): Promise<AppRuntime>;
  /** Builds the app for a one-shot command and closes it afterwards. CLI logs are quiet by default. */
  withApp<T>(cmd: Command, fn: (app: App) => Promise<T> | T): Promise<T>;
  /** `--json`: one JSON document on stdout; otherwise the human text. */
  print(cmd: Command, data: unknown, human: string | (() => string)): void;
  stdout(text: string): void;
  stderr(text: string): void;
}

export function createCliContext(
  env: Record<string, string | undefined>,
  runtimeResolver: (config: Config) => Promise<AppRuntime>,
  io: { stdout: (s: string) => void; stderr: (s: string) => void },
): CliContext {
  const ctx: CliContext = {
    env,
    globals: (cmd) => cmd.optsWithGlobals() as GlobalOptions,
    config: (cmd, flags = {}) => {
      const g = ctx.globals(cmd);
      return loadConfig({ dataDir: g.dataDir, logLevel: g.logLevel, ...flags }, env);
    },
    runtime: runtimeResolver,
    withApp: async (cmd, fn) => {
      const config = ctx.config(cmd);
      const logLevel = ctx.globals(cmd).logLevel ?? (env.VSEARCH_LOG_LEVEL as Config["logLevel"]) ?? "warn";
      const app = await createApp(config, { runtime: await runtimeResolver(config), logger: createLogger(logLevel) });
      try {
        return await fn(app);
      } finally {
        await app.close();
      }
    },
    print: (cmd, data, human) => {
      // Never raw control bytes on a terminal, whatever a name or file name carries.
      if (ctx.globals(cmd).json) io.stdout(escapeJsonForTerminal(JSON.stringify(data, null, 2)) + "\n");
      else io.stdout(escapeForTerminal(typeof human === "function" ? human() : human) + "\n");
    },
    stdout: (text) => io.stdout(escapeForTerminal(text)),
    stderr: io.stderr,
  };
  return ctx;
}

/** Fixed-width text table for human output. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return "(none)";
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : escapeControls(String(v)));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join(
    "\n",
  );
}
