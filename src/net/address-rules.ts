import { lookup as dnsLookup } from "node:dns/promises";
import { NetError } from "./errors.ts";
import { formatIPv4, formatIPv6, type IpAddress, ipv4, parseHost, parseIp } from "./ip-text.ts";

export {
  formatIPv4,
  formatIPv6,
  type IpAddress,
  ipv4,
  ipv6,
  parseHost,
  parseIp,
  parseIPv4,
  parseIPv6,
  type ParsedHost,
} from "./ip-text.ts";

/**
 * Address rules for outbound requests (SPEC §7 "Target addresses", §6 `image_url`): a target must
 * be public unless an operator opened its network. The security property rests on checking the
 * *resolved* addresses — whatever text a name or literal had, the bytes we connect to are what is
 * classified — and on connecting to exactly those addresses afterwards (see safe-fetch.ts).
 */

/** Why an address is not public. */
export type AddressReason =
  | "unspecified"
  | "this-network"
  | "loopback"
  | "private"
  | "cgnat"
  | "link-local"
  | "unique-local"
  | "site-local"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "reserved";

/** IPv6 forms that carry an IPv4 address; a non-public embedded address is reported through them. */
export type EmbeddingForm = "ipv4-mapped" | "ipv4-compatible" | "ipv4-translated" | "nat64" | "6to4" | "teredo";

export type AddressClass = "public" | AddressReason | `${EmbeddingForm}-${AddressReason}`;

// ---------------------------------------------------------------------------------------------
// Classification

type V4Range = readonly [base: number, prefix: number, reason: AddressReason];

/** IANA IPv4 special-purpose registry plus multicast/reserved space. First match wins. */
const V4_RANGES: readonly V4Range[] = [
  [0x00000000, 32, "unspecified"], // 0.0.0.0 (Linux connects it to the local host)
  [0x00000000, 8, "this-network"], // 0.0.0.0/8
  [0x0a000000, 8, "private"], // 10.0.0.0/8
  [0x64400000, 10, "cgnat"], // 100.64.0.0/10
  [0x7f000000, 8, "loopback"], // 127.0.0.0/8
  [0xa9fe0000, 16, "link-local"], // 169.254.0.0/16 (cloud metadata lives here)
  [0xac100000, 12, "private"], // 172.16.0.0/12
  [0xc0000000, 24, "reserved"], // 192.0.0.0/24 IETF protocol assignments
  [0xc0000200, 24, "documentation"], // 192.0.2.0/24 TEST-NET-1
  [0xc0586300, 24, "reserved"], // 192.88.99.0/24 deprecated 6to4 relay anycast
  [0xc0a80000, 16, "private"], // 192.168.0.0/16
  [0xc6120000, 15, "benchmarking"], // 198.18.0.0/15
  [0xc6336400, 24, "documentation"], // 198.51.100.0/24 TEST-NET-2
  [0xcb007100, 24, "documentation"], // 203.0.113.0/24 TEST-NET-3
  [0xe0000000, 4, "multicast"], // 224.0.0.0/4
  [0xffffffff, 32, "broadcast"], // 255.255.255.255
  [0xf0000000, 4, "reserved"], // 240.0.0.0/4
];

function inV4(value: number, base: number, prefix: number): boolean {
  if (prefix === 0) return true;
  const mask = prefix === 32 ? 0xffffffff : ~(0xffffffff >>> prefix);
  return (value & mask) >>> 0 === (base & mask) >>> 0;
}

function inV6(value: bigint, base: bigint, prefix: number): boolean {
  const shift = BigInt(128 - prefix);
  return value >> shift === base >> shift;
}

function classifyV4(value: number): "public" | AddressReason {
  for (const [base, prefix, reason] of V4_RANGES) if (inV4(value, base, prefix)) return reason;
  return "public";
}

/** An IPv6 network base from its first four 16-bit groups (all special ranges are ≤ /64). */
const v6 = (g0: number, g1 = 0, g2 = 0, g3 = 0): bigint =>
  (BigInt(g0) << 112n) | (BigInt(g1) << 96n) | (BigInt(g2) << 80n) | (BigInt(g3) << 64n);

const LOW32 = 0xffffffffn;

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for, else `null`. */
export function unwrapIPv4Mapped(ip: IpAddress): IpAddress | null {
  if (ip.family !== 6 || ip.value >> 32n !== 0xffffn) return null;
  return ipv4(Number(ip.value & LOW32));
}

function embedded(form: EmbeddingForm, v4: number, publicMeans: "public" | AddressReason): AddressClass {
  const inner = classifyV4(v4);
  return inner === "public" ? publicMeans : `${form}-${inner}`;
}

function classifyV6(value: bigint): AddressClass {
  if (value === 0n) return "unspecified";
  if (value === 1n) return "loopback";
  const top96 = value >> 32n;
  const v4 = Number(value & LOW32);
  // ::ffff:a.b.c.d reaches a.b.c.d itself through a dual-stack socket.
  if (top96 === 0xffffn) return embedded("ipv4-mapped", v4, "public");
  // ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1) and ::ffff:0:a.b.c.d (SIIT) have no legitimate use as
  // a destination today; even with a public embedded address they are refused.
  if (top96 === 0n) return embedded("ipv4-compatible", v4, "reserved");
  if (top96 === 0xffff0000n) return embedded("ipv4-translated", v4, "reserved");
  // 64:ff9b::/96 (RFC 6052): a NAT64 gateway forwards to the embedded IPv4 address.
  if (inV6(value, v6(0x64, 0xff9b), 96)) return embedded("nat64", v4, "public");
  // 64:ff9b:1::/48 local-use NAT64: where the IPv4 part sits depends on the operator's prefix.
  if (inV6(value, v6(0x64, 0xff9b, 1), 48)) return "reserved";
  if (inV6(value, v6(0x100), 64)) return "reserved"; // discard-only
  // 2001::/32 Teredo: the client's IPv4 address is stored inverted in the low 32 bits.
  if (inV6(value, v6(0x2001), 32)) return embedded("teredo", Number(~value & LOW32), "public");
  if (inV6(value, v6(0x2001, 0x2), 48)) return "benchmarking";
  if (inV6(value, v6(0x2001, 0xdb8), 32)) return "documentation";
  if (inV6(value, v6(0x2001), 23)) return "reserved"; // IETF protocol assignments
  // 2002::/16 6to4: the IPv4 address of the 6to4 site sits in bits 16–47.
  if (inV6(value, v6(0x2002), 16)) return embedded("6to4", Number((value >> 80n) & LOW32), "public");
  if (inV6(value, v6(0x3fff), 20)) return "documentation";
  if (inV6(value, v6(0x5f00), 16)) return "reserved"; // SRv6 SIDs
  if (inV6(value, v6(0xfc00), 7)) return "unique-local";
  if (inV6(value, v6(0xfe80), 10)) return "link-local";
  if (inV6(value, v6(0xfec0), 10)) return "site-local";
  if (inV6(value, v6(0xff00), 8)) return "multicast";
  // Only 2000::/3 is allocated as global unicast; everything else is unassigned or special.
  if (!inV6(value, v6(0x2000), 3)) return "reserved";
  return "public";
}

/** `"public"`, or why the address may not be a target. Accepts an `IpAddress` or its text. */
export function classifyAddress(ip: IpAddress | string): AddressClass {
  const parsed = typeof ip === "string" ? parseIp(ip) : ip;
  if (!parsed) throw new TypeError(`not an IP address: ${String(ip)}`);
  return parsed.family === 4 ? classifyV4(parsed.value) : classifyV6(parsed.value);
}

// ---------------------------------------------------------------------------------------------
// Allow list

export interface Cidr {
  readonly family: 4 | 6;
  readonly base: number | bigint;
  readonly prefix: number;
  readonly text: string;
}

/**
 * `a.b.c.d/n` or `v6/n` (a bare address is a single host). Host bits below the prefix are
 * ignored (`127.0.0.1/8` means `127.0.0.0/8`). Throws a RangeError naming the bad entry.
 */
export function parseCidr(text: string): Cidr {
  const t = text.trim();
  const slash = t.lastIndexOf("/");
  const addrText = slash === -1 ? t : t.slice(0, slash);
  const ip = parseIp(addrText);
  if (!ip) throw new RangeError(`invalid network "${text}": not an IP address`);
  const max = ip.family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(max) : t.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
    throw new RangeError(`invalid network "${text}": prefix must be 0–${max}`);
  }
  const prefix = Number(prefixText);
  if (ip.family === 4) {
    const mask = prefix === 0 ? 0 : prefix === 32 ? 0xffffffff : ~(0xffffffff >>> prefix);
    const base = (ip.value & mask) >>> 0;
    return { family: 4, base, prefix, text: `${formatIPv4(base)}/${prefix}` };
  }
  const shift = BigInt(128 - prefix);
  const base = (ip.value >> shift) << shift;
  return { family: 6, base, prefix, text: `${formatIPv6(base)}/${prefix}` };
}

/**
 * Networks an operator opened (`VSEARCH_WEBHOOK_ALLOW_NETWORKS`, e.g. `127.0.0.0/8,::1/128`) for
 * targets that would otherwise be refused. Empty by default: nothing non-public is reachable.
 * An IPv4 network matches IPv4 addresses only; `checkTarget` unwraps `::ffff:a.b.c.d` to IPv4 first
 * so a mapped loopback is opened by `127.0.0.0/8`.
 */
export class CidrAllowList {
  readonly networks: readonly Cidr[];

  constructor(cidrs: readonly string[] = []) {
    this.networks = cidrs.filter((c) => c.trim() !== "").map(parseCidr);
  }

  /** From a comma-separated string or a list. */
  static from(list: string | readonly string[] | CidrAllowList | undefined): CidrAllowList {
    if (list instanceof CidrAllowList) return list;
    if (list === undefined) return new CidrAllowList([]);
    return new CidrAllowList(typeof list === "string" ? list.split(",") : list);
  }

  get isEmpty(): boolean {
    return this.networks.length === 0;
  }

  contains(ip: IpAddress | string): boolean {
    const addr = typeof ip === "string" ? parseIp(ip) : ip;
    if (!addr) return false;
    return this.networks.some((n) =>
      n.family === 4
        ? addr.family === 4 && inV4(addr.value, n.base as number, n.prefix)
        : addr.family === 6 && inV6(addr.value, n.base as bigint, n.prefix),
    );
  }

  toString(): string {
    return this.networks.map((n) => n.text).join(",");
  }
}

// ---------------------------------------------------------------------------------------------
// Target check

export interface ResolvedAddress {
  address: string;
  family?: number;
}

/** Resolves a name to every A/AAAA answer. Injected in tests; the default asks the system. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** The system resolver (getaddrinfo order), all records. */
export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true });

export interface CheckTargetOptions {
  allowNetworks?: CidrAllowList | string | readonly string[];
  resolve?: Resolver;
}

export interface CheckedTarget {
  readonly url: URL;
  readonly protocol: "http:" | "https:";
  /** The name as the URL has it (for Host, SNI and certificate checks); for a literal, the address. */
  readonly hostname: string;
  /** Whether the URL named a host (true) or gave an IP literal (false). */
  readonly isName: boolean;
  readonly port: number;
  /** Every address the name resolved to, each one checked; connect to these and nothing else. */
  readonly addresses: readonly IpAddress[];
  /** The first of `addresses`. */
  readonly address: IpAddress;
}

function forbidden(reason: string, message: string, address?: string): NetError {
  return new NetError("TARGET_FORBIDDEN", message, { reason, address });
}

/**
 * Judges one address: the address to connect to (IPv4 for `::ffff:a.b.c.d`) or the refusal.
 * An address is acceptable when it is public or inside an opened network.
 */
function judge(ip: IpAddress, allow: CidrAllowList, shownAs: string): IpAddress {
  const connectTo = unwrapIPv4Mapped(ip) ?? ip;
  const verdict = classifyAddress(ip);
  if (verdict === "public" || allow.contains(connectTo) || allow.contains(ip)) return connectTo;
  const via = shownAs === ip.text ? "" : ` (from ${shownAs})`;
  throw forbidden(verdict, `target address ${ip.text}${via} is ${verdict}; only public addresses are allowed`, ip.text);
}

/**
 * Checks a URL for an outbound request: http/https only, no credentials, and every address the host
 * stands for public (or opened by `allowNetworks`). Resolves a name once, with all records; one
 * forbidden answer refuses the whole target, since a client may pick any of them. Nothing connects
 * here. Throws `NetError` (INVALID_URL, TARGET_FORBIDDEN, DNS_FAILED).
 */
export async function checkTarget(input: string | URL, options: CheckTargetOptions = {}): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new NetError("INVALID_URL", "the URL is not valid");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw forbidden("scheme", `scheme "${url.protocol.replace(/:$/, "")}" is not allowed; use http or https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw forbidden("credentials", "URLs with credentials (user:password@) are not allowed");
  }
  const allow = CidrAllowList.from(options.allowNetworks);
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const host = parseHost(url.hostname);
  if (host.kind === "invalid") throw new NetError("INVALID_URL", `the URL's host "${url.hostname}" is not valid`);

  if (host.kind === "ip") {
    const address = judge(host.ip, allow, host.ip.text);
    return { url, protocol: url.protocol, hostname: address.text, isName: false, port, addresses: [address], address };
  }

  const resolve = options.resolve ?? systemResolver;
  let answers: readonly ResolvedAddress[];
  try {
    answers = await resolve(host.name);
  } catch (err) {
    const code = (err as { code?: unknown })?.code;
    throw new NetError("DNS_FAILED", `could not resolve ${host.name}${typeof code === "string" ? ` (${code})` : ""}`, {
      cause: err,
    });
  }
  const seen = new Set<string>();
  const addresses: IpAddress[] = [];
  for (const answer of answers ?? []) {
    const ip = typeof answer?.address === "string" ? parseIp(answer.address) : null;
    // A resolver answer we cannot read cannot be judged; refuse rather than skip it.
    if (!ip) throw new NetError("DNS_FAILED", `resolver returned an unreadable address for ${host.name}`);
    const connectTo = judge(ip, allow, host.name);
    if (!seen.has(connectTo.text)) {
      seen.add(connectTo.text);
      addresses.push(connectTo);
    }
  }
  if (addresses.length === 0) throw new NetError("DNS_FAILED", `${host.name} has no addresses`);
  return { url, protocol: url.protocol, hostname: host.name, isName: true, port, addresses, address: addresses[0] };
}
