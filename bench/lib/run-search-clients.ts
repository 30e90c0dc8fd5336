/**
 * Runs bench/lib/search-clients.ts in a child process (so the server's process CPU is the server's
 * alone): `clients` loops against `url` for `secs`, each query text used once, in order. Returns
 * what the clients measured and the child, whose resource usage is then readable.
 */
import { join } from "node:path";

const BUN = join(import.meta.dir, "..", "..", "node_modules", ".bin", "bun");
const CLIENTS = join(import.meta.dir, "search-clients.ts");

export interface ClientsResult {
  requests: number;
  errors: number;
  secs: number;
  lat: number[];
}

export async function runSearchClients(
  url: string,
  key: string,
  clients: number,
  secs: number,
  queries: string[],
): Promise<{ result: ClientsResult; child: Bun.Subprocess }> {
  const child = Bun.spawn([BUN, CLIENTS, url, key, String(clients), String(secs)], {
    stdin: new Blob([JSON.stringify(queries)]),
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`clients failed: ${out}`);
  return { result: JSON.parse(out) as ClientsResult, child };
}
