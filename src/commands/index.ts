import { Command, CommanderError } from "commander";
import type { AppRuntime } from "../app.ts";
import type { Config } from "../config/config.ts";
import { ConfigError } from "../config/config.ts";
import { AppError, ValidationError } from "../core/errors.ts";
import { VERSION } from "../version.ts";
import { escapeControls } from "../core/terminal.ts";
import { registerAccountCommands } from "./accounts.ts";
import { registerKeyCommands } from "./api-keys.ts";
import { registerSearchCommands } from "./search.ts";
import { registerJobCommands } from "./jobs.ts";
import { registerModelCommands } from "./models.ts";
import { registerCreditCommands } from "./credits.ts";
import { registerVideoCommands } from "./videos.ts";
import { registerMcpCommand } from "./mcp.ts";
import { registerBackupCommands } from "./backup.ts";
import { registerRestoreCommand } from "./restore.ts";
import { registerMigrateStoreCommand } from "./migrate-store.ts";
import { createCliContext } from "../cli/context.ts";
import { registerServeCommand } from "./serve.ts";
import { registerWorkerCommand } from "./worker.ts";
import { registerNodesCommand } from "./nodes.ts";
import { registerSecretCommand } from "./secret.ts";
import { registerSystemCommands } from "./system.ts";

export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const defaultIo: CliIo = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) };

export function buildProgram(
  env: Record<string, string | undefined>,
  runtime: (c: Config) => Promise<AppRuntime>,
  io: CliIo = defaultIo,
) {
  const ctx = createCliContext(env, runtime, io);
  const program = new Command("vsearch")
    .description("Self-hosted video search: index what is seen and said, find the moment.")
    .version(VERSION)
    .option("--data-dir <dir>", "data directory (env VSEARCH_DATA_DIR, default ./vsearch-data)")
    .option("--json", "machine-readable output: one JSON document on stdout")
    .option("--log-level <level>", "debug | info | warn | error | silent")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  registerServeCommand(program, ctx);
  registerWorkerCommand(program, ctx);
  registerNodesCommand(program, ctx);
  registerSecretCommand(program, ctx);
  registerAccountCommands(program, ctx);
  registerKeyCommands(program, ctx);
  registerVideoCommands(program, ctx);
  registerJobCommands(program, ctx);
  registerModelCommands(program, ctx);
  registerCreditCommands(program, ctx);
  registerSystemCommands(program, ctx);
  registerSearchCommands(program, ctx);
  registerMcpCommand(program, ctx);
  registerBackupCommands(program, ctx);
  registerRestoreCommand(program, ctx);
  registerMigrateStoreCommand(program, ctx);
  return program;
}

/** Runs the CLI; returns the exit code (0 ok, 1 error, 2 usage). Errors are one line on stderr. */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  runtime: (c: Config) => Promise<AppRuntime>,
  io: CliIo = defaultIo,
): Promise<number> {
  const program = buildProgram(env, runtime, io);
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help")
        return 0;
      return 2;
    }
    io.stderr(`error: ${escapeControls(describe(e))}\n`);
    return 1;
  }
}

function describe(e: unknown): string {
  if (e instanceof ValidationError)
    return e.issues.map((i) => `${i.loc.filter((l) => l !== "body").join(".")}: ${i.msg}`).join("; ");
  if (e instanceof AppError) return `${e.message} (${e.code})`;
  if (e instanceof ConfigError) return `configuration: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}
