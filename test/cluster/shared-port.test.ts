/**
 * Issue 27: `vsearch serve --share-port` — several serve processes of one install (one PostgreSQL,
 * a data dir each) listen on one port of one machine, and the kernel spreads new connections among
 * them (SO_REUSEPORT), so a second core answers searches. Both processes answer on the port; when
 * one stops, the other answers everything. Without a database, or on port 0, the flag is refused in
 * words. PostgreSQL only (PG_ONLY in vitest.config.ts).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { databaseUrlFor } from "../pg/backend.ts";
import { freePort } from "../pg/cluster.ts";
import { BUN, MAIN, runCli, startServer } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp.ts";

type Server = Awaited<ReturnType<typeof startServer>>;
const dirA = tempDir("vsearch-share-a-");
const dirB = tempDir("vsearch-share-b-");
let port = 0;
let a: Server | undefined;
let b: Server | undefined;

beforeAll(async () => {
  // B's data dir, A's database: two processes of one install.
  const envB = { VSEARCH_DATABASE_URL: (await databaseUrlFor(dirA))!, VSEARCH_MEDIA_ROOT: dirA };
  port = await freePort();
  a = await startServer(dirA, {}, ["--port", String(port), "--share-port"]);
  b = await startServer(dirB, envB, ["--port", String(port), "--share-port"]);
}, 120_000);

afterAll(async () => {
  await a?.stop("SIGKILL");
  await b?.stop("SIGKILL");
});

/** The node (the `instance` label every metric carries on PostgreSQL) that answered a new connection. */
async function answeredBy(): Promise<string> {
  // `Connection: close`: each request a new connection, which the kernel gives to one listener.
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { connection: "close" } });
  expect(res.status).toBe(200);
  const instance = /instance="([^"]+)"/.exec(await res.text())?.[1];
  expect(instance).toBeTruthy();
  return instance!;
}

test("two serve processes on one port both answer; when one stops the other answers everything", async () => {
  expect(new URL(a!.url).port).toBe(String(port));
  expect(new URL(b!.url).port).toBe(String(port));
  const seen = new Map<string, number>();
  for (let i = 0; i < 40; i++) {
    const node = await answeredBy();
    seen.set(node, (seen.get(node) ?? 0) + 1);
  }
  // Two listeners, 40 connections from different source ports: all on one would be a 2^-39 chance.
  expect(seen.size).toBe(2);

  await a!.stop("SIGTERM");
  const after = new Set<string>();
  for (let i = 0; i < 10; i++) after.add(await answeredBy());
  expect(after.size).toBe(1);
  expect(seen.has([...after][0])).toBe(true);
}, 60_000);

test("--share-port is refused without PostgreSQL and on port 0, in words", async () => {
  // The embedded store: no VSEARCH_DATABASE_URL at all (runCli would add this data dir's database).
  const embedded = Bun.spawn(
    [BUN, MAIN, "--data-dir", tempDir("vsearch-share-sqlite-"), "serve", "--port", String(port), "--share-port"],
    { env: { ...process.env, VSEARCH_DATABASE_URL: undefined, VSEARCH_LOG_LEVEL: "silent" }, stderr: "pipe" },
  );
  const timer = setTimeout(() => embedded.kill(), 60_000);
  const [code, stderr] = await Promise.all([embedded.exited, new Response(embedded.stderr).text()]);
  clearTimeout(timer);
  expect(code).toBe(1);
  expect(stderr).toContain("--share-port needs database_url");

  const zero = await runCli(["--data-dir", dirA, "serve", "--port", "0", "--share-port"], {}, 60_000);
  expect(zero.code).toBe(1);
  expect(zero.stderr).toContain("--share-port needs a fixed --port");
}, 120_000);
