import type { Command } from "commander";
import type { CliContext } from "./context.ts";

export function registerSystemCommands(program: Command, ctx: CliContext) {
  program
    .command("openapi")
    .description("Print the OpenAPI 3.1 document")
    .action(async (_o: unknown, cmd: Command) => {
      const doc = await ctx.withApp(cmd, async (app) => (await app.fetch(new Request("http://local/v1/openapi.json"))).json());
      ctx.stdout(JSON.stringify(doc, null, 2) + "\n");
    });
}
