import { type Ip, limiterKey, parseCidr, parseIp } from "../net/ip.ts";

/**
 * Who is calling, by network address, for the rate limiter. The socket peer is the truth unless
 * the operator lists the reverse proxies in front of the server (`trusted_proxies`): only then is
 * `X-Forwarded-For` read, right to left, skipping hops that are themselves trusted proxies — the
 * first untrusted hop is the client. Entries to its left were written by that client and prove
 * nothing, so a client rotating the header cannot change the address it is counted under.
 */
export class ClientAddressResolver {
  private readonly trusted: [Ip, number][];

  constructor(trustedProxies: readonly string[]) {
    this.trusted = trustedProxies.map(parseCidr);
  }

  /** `peer` from `server.requestIP(req)`; null when there is no socket (in-process requests). */
  resolve(peer: string | null | undefined, forwardedFor: string | null | undefined): string {
    let current = parseIp(peer);
    if (!current) return "unknown";
    if (forwardedFor && this.isTrusted(current)) {
      const hops = forwardedFor.split(",");
      for (let i = hops.length - 1; i >= 0 && this.isTrusted(current); i--) {
        const hop = parseIp(hops[i].trim());
        // A malformed entry ends the walk: the last good address (a trusted proxy) is kept.
        if (!hop) break;
        current = hop;
      }
    }
    return limiterKey(current);
  }

  private isTrusted(ip: Ip): boolean {
    return this.trusted.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
  }
}
