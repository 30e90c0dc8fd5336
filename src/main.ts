// The vsearch executable: `vsearch serve`, `vsearch accounts create`, … (see `vsearch --help`).
import { runCli } from "./cli/index.ts";
import { resolveRuntime } from "./cli/runtime.ts";

process.exitCode = await runCli(process.argv.slice(2), process.env, resolveRuntime);
