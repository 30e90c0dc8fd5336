import { CidrAllowList, type IpAddress, parseIp, unwrapIPv4Mapped } from "../net/address-rules.ts";

/**
 * Who is calling, by network address, for the rate limiter. The socket peer is the truth unless
 * the operator lists the reverse proxies in front of the server (`trusted_proxies`): only then is
 * `X-Forwarded-For` read, right to left, skipping hops that are themselves trusted proxies — the
 * first untrusted hop is the client. Entries to its left were written by that client and prove
 * nothing, so a client rotating the header cannot change the address it is counted under.
 * Addresses are parsed by the same code as the outbound address rules (net/ip-text.ts).
 */
export class ClientAddressResolver {
  private readonly trusted: CidrAllowList;

  constructor(trustedProxies: readonly string[]) {
    this.trusted = new CidrAllowList(trustedProxies);
  }

  /** `peer` from `server.requestIP(req)`; null when there is no socket (in-process requests). */
  resolve(peer: string | null | undefined, forwardedFor: string | null | undefined): string {
    let current = peerIp(peer);
    if (!current) return "unknown";
    if (forwardedFor && this.trusted.contains(current)) {
      const hops = forwardedFor.split(",");
      for (let i = hops.length - 1; i >= 0 && this.trusted.contains(current); i--) {
        const hop = peerIp(hops[i]);
        // A malformed entry ends the walk: the last good address (a trusted proxy) is kept.
        if (!hop) break;
        current = hop;
      }
    }
    return limiterKey(current);
  }
}

/** A literal address only (never a name); `::ffff:a.b.c.d` is the IPv4 address it maps. */
function peerIp(s: string | null | undefined): IpAddress | null {
  const t = s?.trim();
  if (!t || !/^[\d.]+$|:/.test(t)) return null;
  const ip = parseIp(t);
  return ip ? (unwrapIPv4Mapped(ip) ?? ip) : null;
}

/**
 * The key an address is counted under. One IPv6 host commonly owns a whole /64, so counting each
 * of its 2⁶⁴ addresses apart would let it escape every per-address limit.
 */
export function limiterKey(ip: IpAddress): string {
  if (ip.family === 4) return ip.text;
  return `${(ip.value >> 64n).toString(16)}::/64`;
}
