import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The origin (`scheme://host[:port]`) that links handed out while serving one request start with.
 * SPEC §10: links follow the origin the request came to, so a server on `0.0.0.0` hands a laptop on
 * the LAN links to the address it used, and a reverse proxy's users links to the proxy. The HTTP
 * layer sets it per request (http/link-origin.ts); UrlSigner reads it through `current()`, so no
 * service has to carry an origin through its calls. Outside a request (the CLI, MCP over stdio,
 * work in the background) there is none and the signer falls back to the configured base.
 *
 * One instance per app (createApp), never a module-level one.
 */
export class LinkOrigin {
  private readonly store = new AsyncLocalStorage<string>();

  /** Runs `fn` with links built on `origin`. */
  run<T>(origin: string, fn: () => T): T {
    return this.store.run(origin, fn);
  }

  current(): string | undefined {
    return this.store.getStore();
  }
}

/**
 * The URL this machine reaches a server listening on `host`:`port` at: an unspecified address
 * (`0.0.0.0`, `::`) listens everywhere but is no place to send a browser, so it is loopback here.
 */
export function localBaseUrl(host: string, port: number): string {
  const h = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  return `http://${h.includes(":") && !h.startsWith("[") ? `[${h}]` : h}:${port}`;
}
