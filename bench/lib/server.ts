/**
 * A `vsearch serve` child process on a fresh data dir with one account, an API key and a
 * collection, for the HTTP load benches. Reads its RSS from /proc.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

export interface BenchServer {
  url: string;
  pid: number;
  key: string;
  collectionId: string;
  dir: string;
  cli(...args: string[]): Promise<any>;
  rssMb(): { rss: number; hwm: number };
  stop(): Promise<void>;
}

export async function startBenchServer(env: Record<string, string> = {}): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-bench-"));
  const fullEnv = { ...process.env, VSEARCH_LOG_LEVEL: "warn", ...env };
  const cli = async (...args: string[]) => {
    const p = Bun.spawn([BUN, join(ROOT, "src", "main.ts"), "--data-dir", dir, "--json", ...args], {
      env: fullEnv,
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = await new Response(p.stdout).text();
    if ((await p.exited) !== 0) throw new Error(`${args.join(" ")}: ${await new Response(p.stderr).text()}`);
    return JSON.parse(out);
  };
  const account = await cli("accounts", "create", "--name", "bench");
  const key = (await cli("keys", "create", "--account", account.id, "--name", "bench")).key;
  const server = Bun.spawn([BUN, join(ROOT, "src", "main.ts"), "--data-dir", dir, "--json", "serve", "--port", "0"], {
    env: fullEnv,
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = server.stdout.getReader();
  let line = "";
  for (let i = 0; i < 100 && !line.includes("}"); i++)
    line += new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
  const { url } = JSON.parse(line);
  const col = await fetch(`${url}/v1/collections`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: '{"name":"bench"}',
  });
  const collectionId = ((await col.json()) as any).data.id;
  return {
    url,
    pid: server.pid,
    key,
    collectionId,
    dir,
    cli,
    rssMb() {
      const s = readFileSync(`/proc/${server.pid}/status`, "utf8");
      const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
      return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
    },
    async stop() {
      server.kill("SIGTERM");
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const loadAvg = () =>
  readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number) as [number, number, number];
