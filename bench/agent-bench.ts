/**
 * Agent tool latency per transport, against a real `vsearch serve` (from source) on a fresh data
 * dir holding one indexed 1080p clip (no models: the tools measured need none):
 *  - `list_videos` (a read: the transport's own cost dominates) and `get_frame` (one 1080p frame
 *    decoded by ffmpeg and fitted to 768 px) through POST /v1/agent/call, MCP over streamable HTTP
 *    (stateless: a server + transport built per POST) and MCP over stdio (`vsearch mcp`);
 *  - median and p95 of `--calls` sequential calls each, after 3 warm-up calls.
 *
 *   node_modules/.bin/bun bench/agent-bench.ts [--calls 100]
 *
 * Prints a table and writes bench/results/agent.json with the load average. Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { BUN, MAIN, runCliJson, startServer } from "../test/helpers/cli.ts";
import { ffmpeg } from "../test/helpers/ffmpeg.ts";

const OUT = fileURLToPath(new URL("./results/agent.json", import.meta.url));
const i = process.argv.indexOf("--calls");
const CALLS = i > 0 ? Number(process.argv[i + 1]) : 100;
const ENV = { VSEARCH_LOG_LEVEL: "silent", VSEARCH_RATE_LIMIT_AGENT: "1000000", VSEARCH_RATE_LIMIT_JOBS: "1000000" };

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

async function time(fn: () => Promise<void>): Promise<{ median: number; p95: number }> {
  for (let k = 0; k < 3; k++) await fn();
  const ms: number[] = [];
  for (let k = 0; k < CALLS; k++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return { median: quantile(ms, 0.5), p95: quantile(ms, 0.95) };
}

const dir = mkdtempSync(join(tmpdir(), "vsearch-agent-bench-"));
const server = await startServer(dir, ENV);
try {
  const account = await runCliJson(["--data-dir", dir, "accounts", "create", "--name", "Bench"], ENV);
  const key = (await runCliJson(["--data-dir", dir, "keys", "create", "--account", account.id, "--name", "bench"], ENV))
    .key as string;
  const clip = await ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=1920x1080:rate=25:duration=10",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "50",
      "-pix_fmt",
      "yuv420p",
    ],
    join(dir, "hd.mp4"),
  );
  const ingest = await runCliJson(
    ["--data-dir", dir, "ingest", clip, "--account", account.id, "--collection", "Bench"],
    ENV,
  );
  const videoId = ingest.files[0].video_id as string;

  const viaCall = (tool: string, input: unknown) => async () => {
    const res = await fetch(`${server.url}/v1/agent/call`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ tool, input }),
    });
    if (res.status !== 200) throw new Error(`${tool}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const viaMcp = (client: Client, tool: string, input: Record<string, unknown>) => async () => {
    const r: any = await client.callTool({ name: tool, arguments: input });
    if (r.isError) throw new Error(`${tool}: ${r.content[0].text}`);
  };
  const http = new Client({ name: "bench", version: "1" });
  await http.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/v1/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  const stdio = new Client({ name: "bench", version: "1" });
  await stdio.connect(
    new StdioClientTransport({
      command: BUN,
      args: [MAIN, "--data-dir", dir, "mcp", "--account", account.id],
      env: { ...(process.env as Record<string, string>), ...ENV },
    }),
  );

  const rows: { tool: string; transport: string; median_ms: number; p95_ms: number; load1: number }[] = [];
  for (const [tool, input] of [
    ["list_videos", {}],
    ["get_frame", { video_id: videoId, timestamp: 5.5 }],
  ] as const) {
    for (const [transport, fn] of [
      ["POST /v1/agent/call", viaCall(tool, input)],
      ["MCP streamable HTTP", viaMcp(http, tool, input)],
      ["MCP stdio", viaMcp(stdio, tool, input)],
    ] as const) {
      const r = await time(fn);
      rows.push({
        tool,
        transport,
        median_ms: Math.round(r.median * 100) / 100,
        p95_ms: Math.round(r.p95 * 100) / 100,
        load1: Math.round(loadavg()[0] * 100) / 100,
      });
    }
  }
  await http.close();
  await stdio.close();

  console.log(`agent tools, ${CALLS} sequential calls each, ${cpus().length} CPUs (${cpus()[0]?.model})`);
  console.log("tool         transport              median ms   p95 ms   load1");
  for (const r of rows)
    console.log(
      `${r.tool.padEnd(12)} ${r.transport.padEnd(22)} ${String(r.median_ms).padStart(9)} ${String(r.p95_ms).padStart(8)} ${String(r.load1).padStart(7)}`,
    );
  mkdirSync(join(OUT, ".."), { recursive: true });
  writeFileSync(
    OUT,
    JSON.stringify(
      { at: new Date().toISOString(), calls: CALLS, cpus: cpus().length, loadavg: loadavg(), rows },
      null,
      2,
    ),
  );
  console.log(`wrote ${OUT}`);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
