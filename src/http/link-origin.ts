import type { MiddlewareHandler } from "hono";
import { CidrAllowList, parseIp, unwrapIPv4Mapped } from "../net/address-rules.ts";
import type { AppEnv } from "./types.ts";

/** What the middleware hands the origin to (signing/link-origin.ts's LinkOrigin). */
export interface LinkOriginScope {
  run<T>(origin: string, fn: () => T): T;
}

/** A Host / X-Forwarded-Host value: a name, an IPv4 address or a bracketed IPv6 address, and a port. */
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::\d{1,5})?$/;

/** Paths whose links leave the conversation (an agent passes them on): `public_base_url` wins there. */
const SENT_ELSEWHERE = /^\/v1\/(agent\/|mcp(\/|$))/;

/**
 * The origin a client reached this server at: the request URL's scheme and Host; from a peer in
 * `trusted_proxies` only, `X-Forwarded-Proto` and `X-Forwarded-Host` (their first entry: the hop
 * nearest the client) replace them. Anything malformed is ignored, never echoed into a link.
 */
export function requestOrigin(
  url: string,
  headers: { get(name: string): string | null | undefined },
  peer: string | null | undefined,
  trusted: CidrAllowList,
): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  let proto = u.protocol.replace(/:$/, "");
  let host = u.host;
  if (fromTrustedProxy(peer, trusted)) {
    const fp = first(headers.get("x-forwarded-proto"))?.toLowerCase();
    if (fp === "http" || fp === "https") proto = fp;
    const fh = first(headers.get("x-forwarded-host"));
    if (fh && HOST.test(fh)) host = fh.toLowerCase();
  }
  if ((proto !== "http" && proto !== "https") || !HOST.test(host)) return null;
  return `${proto}://${host}`;
}

const first = (v: string | null | undefined) => v?.split(",")[0]?.trim() || undefined;

function fromTrustedProxy(peer: string | null | undefined, trusted: CidrAllowList): boolean {
  const t = peer?.trim();
  if (!t) return false;
  const ip = parseIp(t);
  return !!ip && trusted.contains(unwrapIPv4Mapped(ip) ?? ip);
}

/**
 * Runs each request with its links built on the origin it came to (`requestOrigin`); for the agent
 * routes, on `public_base_url` when one is set (their answers are read and followed elsewhere).
 */
export function linkOrigin(
  scope: LinkOriginScope,
  config: { trustedProxies: readonly string[]; publicBaseUrl?: string },
): MiddlewareHandler<AppEnv> {
  const trusted = new CidrAllowList(config.trustedProxies);
  const publicBase = config.publicBaseUrl?.replace(/\/+$/, "");
  return async (c, next) => {
    const server = c.env as { requestIP?: (r: Request) => { address: string } | null } | undefined;
    const peer = typeof server?.requestIP === "function" ? server.requestIP(c.req.raw)?.address : null;
    const origin =
      publicBase && SENT_ELSEWHERE.test(c.req.path)
        ? publicBase
        : requestOrigin(c.req.url, c.req.raw.headers, peer, trusted);
    if (!origin) return next();
    return scope.run(origin, () => next());
  };
}
