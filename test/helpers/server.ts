import { connect } from "node:net";
import { bunServeOptions } from "../../src/http/serve-options.ts";
import type { ModelCatalog } from "../../src/models/roles.ts";
import type { Resolver } from "../../src/net/address-rules.ts";
import { startTestApp, type TestApp } from "./app.ts";

export interface TestServer extends TestApp {
  url: string;
  port: number;
  /** `fetch` against the real server. */
  http(path: string, init?: RequestInit & { token?: string }): Promise<Response>;
}

/** A real app behind a real Bun.serve on 127.0.0.1:0, wired exactly as `vsearch serve` wires it. */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: { models?: ModelCatalog; resolve?: Resolver } = {},
): Promise<TestServer> {
  const t = await startTestApp({ VSEARCH_HOST: "127.0.0.1", VSEARCH_PORT: "0", ...env }, opts);
  const server = Bun.serve(bunServeOptions(t.app, t.config));
  const url = `http://127.0.0.1:${server.port}`;
  t.app.setBaseUrl(url);
  return {
    ...t,
    url,
    port: server.port as number,
    http(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.token) headers.set("authorization", `Bearer ${init.token}`);
      return fetch(url + path, { ...init, headers });
    },
    async close() {
      await server.stop(true);
      await t.close();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/**
 * Sends bytes over a plain TCP socket and reads until the server closes or `ms` pass: for
 * requests no HTTP client library would send (HTTP/1.0 without Host, lying Content-Length…).
 * It returns as soon as a whole response is in, so `ms` only bounds a server that never answers
 * (30 s: a sign-in hashes a password, which took over 5 s at load ~40 on the 2-core test machine).
 */
export function rawRequest(
  port: number,
  bytes: string | Uint8Array,
  opts: { ms?: number; endAfterWrite?: boolean; localAddress?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // Any 127.x.y.z is this machine: a different local address is a different client to the server.
    const sock = connect({ port, host: "127.0.0.1", localAddress: opts.localAddress });
    const done = () => {
      clearTimeout(timer);
      sock.destroy();
      resolve(parseRaw(Buffer.concat(chunks).toString("latin1")));
    };
    const timer = setTimeout(done, opts.ms ?? 30_000);
    sock.on("data", (d: Buffer) => {
      chunks.push(d);
      // One response is enough: stop once its declared body has arrived.
      const r = parseRaw(Buffer.concat(chunks).toString("latin1"));
      const len = Number(r.headers["content-length"]);
      if (r.status && Number.isFinite(len) && Buffer.byteLength(r.body, "latin1") >= len) done();
    });
    sock.on("end", done);
    sock.on("error", (e) => (chunks.length ? done() : reject(e)));
    sock.write(bytes);
    if (opts.endAfterWrite) sock.end();
  });
}

function parseRaw(raw: string): RawResponse {
  const head = raw.indexOf("\r\n\r\n");
  const headerText = head < 0 ? raw : raw.slice(0, head);
  const lines = headerText.split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status, headers, body: head < 0 ? "" : raw.slice(head + 4), raw };
}

/** A JSON POST over a raw socket from `localAddress`, with optional extra headers. */
export function rawJson(
  port: number,
  path: string,
  body: unknown,
  opts: { localAddress?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const text = JSON.stringify(body);
  const extra = Object.entries(opts.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return rawRequest(
    port,
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n${extra}\r\n${text}`,
    { localAddress: opts.localAddress },
  );
}
