import type { Command } from "commander";
import type { CliContext } from "../cli/context.ts";
import { table } from "../cli/context.ts";

/** `vsearch nodes`: every serve and worker process of this database, its last heartbeat and what it runs. */
export function registerNodesCommand(program: Command, ctx: CliContext) {
  program
    .command("nodes")
    .description("List the nodes (serve and worker processes) on this database: heartbeat, device, models, kinds")
    .action(async (_opts: unknown, cmd: Command) => {
      await ctx.withApp(cmd, async (app) => {
        const nodes = await app.services.nodes.list();
        ctx.print(cmd, { nodes }, () => {
          const rows = nodes.map((n) => ({
            id: n.id,
            role: n.role,
            status: n.refused ? `${n.status}, refusing jobs` : n.status,
            heartbeat: `${n.heartbeat_age_secs}s ago`,
            host: `${n.host}:${n.pid}`,
            device: n.device,
            kinds: n.kinds.length ? `${n.kinds.join(",")} x${n.concurrency}` : "-",
            "image-text": n.models["image-text"] ?? "-",
            version: n.version,
          }));
          const refusals = nodes.filter((n) => n.refused).map((n) => `${n.id}: ${n.refused}`);
          return [
            table(rows, ["id", "role", "status", "heartbeat", "host", "device", "kinds", "image-text", "version"]),
            ...refusals,
          ].join("\n");
        });
      });
    });
}
