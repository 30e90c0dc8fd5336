// The vsearch executable: `vsearch serve`, `vsearch accounts create`, … (see `vsearch --help`).
import { runCli } from "./commands/index.ts";
import { resolveRuntime } from "./cli/runtime.ts";

const code = await runCli(process.argv.slice(2), process.env, resolveRuntime);
// A command may already have set a non-zero exit code after printing its result (e.g. ingest with failures).
if (code !== 0) process.exitCode = code;
