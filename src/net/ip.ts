import ipaddr from "ipaddr.js";

/** IP address parsing on ipaddr.js, shared by the client-address resolver and config checks. */
export type Ip = ipaddr.IPv4 | ipaddr.IPv6;

/** Parses an address; IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes the IPv4 address. */
export function parseIp(s: string | null | undefined): Ip | null {
  if (!s) return null;
  const bare = s.startsWith("[") && s.endsWith("]") ? s.slice(1, -1) : s;
  if (!ipaddr.isValid(bare)) return null;
  try {
    return ipaddr.process(bare);
  } catch {
    return null;
  }
}

/** Validates a `trusted_proxies` entry: a CIDR or a single address. */
export function parseCidr(s: string): [Ip, number] {
  const t = s.trim();
  if (ipaddr.isValidCIDR(t)) {
    const [ip, bits] = ipaddr.parseCIDR(t);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96];
    return [ip, bits];
  }
  const ip = parseIp(t);
  if (!ip) throw new Error(`"${s}" is not an IP address or CIDR`);
  return [ip, ip.kind() === "ipv4" ? 32 : 128];
}

/**
 * The key an address is counted under. One IPv6 host commonly owns a whole /64, so counting each
 * of its 2⁶⁴ addresses apart would let it escape every per-address limit.
 */
export function limiterKey(ip: Ip): string {
  if (ip.kind() === "ipv4") return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(":")}::/64`;
}
