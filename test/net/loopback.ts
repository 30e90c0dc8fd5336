import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Loopback test servers (127.0.0.0/8 and ::1 only) that count what reaches them. */

export const fixtureCert = () => readFileSync(join(import.meta.dirname, "fixtures", "localhost-cert.pem"), "utf8");
const fixtureKey = () => readFileSync(join(import.meta.dirname, "fixtures", "localhost-key.pem"), "utf8");

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  bytes: Buffer;
  localAddress: string | undefined;
  servername: string | undefined;
}

export interface LoopbackServer {
  host: string;
  port: number;
  /** Requests whose body was fully read before the handler ran. */
  requests: SeenRequest[];
  connections: number;
  /** Connections that have closed (server side). */
  closedConnections: number;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, seen: SeenRequest) => void;

export interface ServeOptions {
  host?: string;
  /** A fixed port (to put a decoy next to another server); 0 = any free one. */
  port?: number;
  tls?: boolean;
}

export async function serve(handler: Handler, options: ServeOptions = {}): Promise<LoopbackServer> {
  const host = options.host ?? "127.0.0.1";
  if (!/^127\.|^::1$/.test(host)) throw new Error(`test servers must be on loopback, not ${host}`);
  const state = { requests: [] as SeenRequest[], connections: 0, closedConnections: 0 };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen: SeenRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
        bytes: Buffer.concat(chunks),
        localAddress: req.socket.localAddress,
        servername: (req.socket as { servername?: string }).servername,
      };
      state.requests.push(seen);
      handler(req, res, seen);
    });
  };
  const server = options.tls
    ? https.createServer({ cert: fixtureCert(), key: fixtureKey() }, onRequest)
    : http.createServer(onRequest);
  server.on(options.tls ? "secureConnection" : "connection", (socket: import("node:net").Socket) => {
    state.connections++;
    socket.on("close", () => state.closedConnections++);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host,
    port,
    get requests() {
      return state.requests;
    },
    get connections() {
      return state.connections;
    },
    get closedConnections() {
      return state.closedConnections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on `host` that nothing listens on (a server was bound there and closed again). */
export async function closedPort(host = "127.0.0.1"): Promise<number> {
  const s = await serve(() => {}, { host });
  await s.close();
  return s.port;
}

/** Waits (bounded) until `check` holds; for server-side effects that trail the client's view. */
export async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}
