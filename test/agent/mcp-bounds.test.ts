import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { backendEnv } from "../pg/backend.ts";
import { createKeyTenant, type Tenant } from "../helpers/app.ts";
import { BUN, MAIN } from "../helpers/cli.ts";
import { fixedCatalog, tinyClip } from "../helpers/models.ts";
import { rawRequest, startTestServer, type TestServer } from "../helpers/server.ts";
import { until } from "../helpers/wait.ts";

/**
 * Issue 21: MCP is bounded like every other route. Over HTTP: the body cap, the JSON depth and
 * value guards (answered as JSON-RPC errors), and a deadline per tools/call. Over stdio
 * (`vsearch mcp`): a line over the cap, not JSON, too deep or a batch is answered with a JSON-RPC
 * error and the process keeps serving (it used to exit without a word past 10 MB). The batch
 * bound and the per-message rate limit are in schema-limits.test.ts.
 */
let s: TestServer;
let a: Tenant;
let hanging: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  s = await startTestServer(
    {
      VSEARCH_RATE_LIMIT_AGENT: "100000",
      VSEARCH_AGENT_CALL_TIMEOUT_SECS: "1",
      VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.1/32",
    },
    { models: fixedCatalog({ "image-text": tinyClip }) },
  );
  a = await createKeyTenant(s);
  // An image_url that never answers (its own fetch timeout is 10 s): only the call's deadline ends it sooner.
  hanging = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) });
}, 60_000);
afterAll(async () => {
  await hanging?.stop(true);
  await s?.close();
});

const post = (body: string) =>
  s.http("/v1/mcp", {
    method: "POST",
    token: a.readOnlyKey,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body,
  });

describe("MCP over HTTP", () => {
  test.each([
    ["50 000 levels of [", `${"[".repeat(50_000)}${"]".repeat(50_000)}`],
    ["a whole MiB of [", "[".repeat(1024 * 1024)],
    [
      "33 levels inside a valid message",
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "ping",
        params: { a: JSON.parse(`${"[".repeat(32)}${"]".repeat(32)}`) },
      }),
    ],
  ])("%s: 400 with JSON-RPC -32600 from the depth guard, before any parse", async (_n, body) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: expect.stringMatching(/nested deeper than 32 levels/) },
    });
  });

  test("a deep body is refused from its first bytes: the answer comes while the client still holds back the rest", async () => {
    // 1 MiB declared, 4 KiB of `[` sent, the rest never (the stall bench's attacker sends it all, slowly).
    const res = await rawRequest(
      s.port,
      `POST /v1/mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.readOnlyKey}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: ${1024 * 1024}\r\n\r\n${"[".repeat(4096)}`,
      { ms: 20_000 },
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatchObject({ code: -32600, message: expect.stringMatching(/nested deeper/) });
  }, 30_000);

  test("more than 10 000 values is -32600; over 1 MiB is 413; not JSON is -32700", async () => {
    const many = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { v: Array(10_001).fill(0) } }),
    );
    expect(many.status).toBe(400);
    expect((await many.json()).error).toMatchObject({ code: -32600, message: expect.stringMatching(/10000 values/) });
    const big = await post(`"${"x".repeat(1024 * 1024)}"`);
    expect(big.status).toBe(413);
    const notJson = await post("{nope");
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.code).toBe(-32700);
  });

  test("a tools/call past agent_call_timeout_secs (1 s here) is stopped: a TIMEOUT tool error, not a hung request", async () => {
    const res = await post(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "search_videos", arguments: { image_url: `http://127.0.0.1:${hanging.port}/q.png` } },
      }),
    );
    expect(res.status).toBe(200);
    const { id, result } = await res.json();
    expect(id).toBe(7);
    expect(result.isError).toBe(true);
    // The image fetch's own limit (10 s) would have said url_timeout: the deadline ended it first.
    expect(result.content[0].text).toMatch(/^TIMEOUT \(504\): The tool call ran past 1 s/);
  }, 30_000);
});

describe("MCP over stdio (vsearch mcp)", () => {
  test("a line over 1 MiB (even 12 MB), a line that is not JSON, one too deep and a batch each get a JSON-RPC error; the process keeps answering", async () => {
    const proc = Bun.spawn([BUN, MAIN, "--data-dir", s.dir, "mcp", "--account", a.accountId], {
      env: { ...process.env, ...(await backendEnv(s.dir)), VSEARCH_LOG_LEVEL: "silent" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "ignore",
    });
    const lines: any[] = [];
    const reading = (async () => {
      let buf = "";
      for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
        buf += new TextDecoder().decode(chunk);
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          lines.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          nl = buf.indexOf("\n");
        }
      }
    })();
    const send = async (text: string) => {
      await proc.stdin.write(text);
      await proc.stdin.flush();
    };
    const next = async (n: number) => {
      expect(await until(async () => lines.length >= n, 30_000)).toBe(true);
      return lines[n - 1];
    };
    try {
      await send(
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })}\n`,
      );
      expect((await next(1)).result.serverInfo.name).toBe("vsearch");

      // 12 MB in pieces, then its newline: answered as soon as it passes 1 MiB, the rest dropped unread.
      const piece = "x".repeat(1024 * 1024);
      for (let i = 0; i < 12; i++) await send(piece);
      expect(await next(2)).toMatchObject({
        id: null,
        error: { code: -32600, message: expect.stringMatching(/at most 1048576 bytes/) },
      });
      await send("\n");
      await send("this is not json\n");
      expect((await next(3)).error.code).toBe(-32700);
      await send(`${"[".repeat(40)}${"]".repeat(40)}\n`);
      expect(await next(4)).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/nested deeper/) } });
      await send(`${JSON.stringify([{ jsonrpc: "2.0", id: 5, method: "ping" }])}\n`);
      expect((await next(5)).error.message).toMatch(/batches are not accepted/);
      await send(`${JSON.stringify({ jsonrpc: "2.0", id: 6, method: 42 })}\n`);
      expect(await next(6)).toMatchObject({ id: 6, error: { code: -32600 } });

      await send(`${JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" })}\n`);
      const listed = await next(7);
      expect(listed.id).toBe(7);
      expect(listed.result.tools).toHaveLength(9);
      expect(proc.exitCode).toBeNull();
    } finally {
      await proc.stdin.end();
      await Promise.race([proc.exited, Bun.sleep(10_000)]);
      proc.kill("SIGKILL");
      await reading.catch(() => {});
    }
  }, 120_000);
});
