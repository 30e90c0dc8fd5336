/**
 * IP address text: parsing and formatting for the outbound address rules (address-rules.ts) and
 * the client address (http/client-address.ts).
 *
 * Why hand-written rather than ipaddr.js (issue 10 asked for the swap; it was tried and measured
 * differentially, 200 000 fast-check cases against this parser): ipaddr.js reads
 * `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d` (IPv4-mapped) — a different address, and
 * one the rules judge differently (IPv4-compatible is refused even when the embedded address is
 * public; mapped follows the embedded address) — and it accepts hex and octal parts in an IPv6
 * dotted tail (`::ffff:0x7f.1.1.1`), which the WHATWG URL parser rejects. It also does not
 * implement WHATWG IPv4 host parsing (a trailing dot, `0x` alone, the last part filling the
 * remaining bytes), which is the form hosts reach the rules in. The rules must see the bytes the
 * connection will use; this parser is checked against `new URL()` in test/net/address-rules.test.ts
 * and against ipaddr.js on dotted quads, where they agree, in test/security/properties.ts.
 */

export type IpAddress =
  | { readonly family: 4; readonly value: number; readonly text: string }
  | { readonly family: 6; readonly value: bigint; readonly text: string };

export type ParsedHost =
  | { readonly kind: "ip"; readonly ip: IpAddress }
  | { readonly kind: "name"; readonly name: string }
  | { readonly kind: "invalid"; readonly input: string };

/**
 * One IPv4 part as the WHATWG host parser (and inet_aton) reads it: `0x…` hex, leading-zero octal,
 * else decimal. `null` when the part is not a number in any of those forms.
 */
function parseIPv4Part(part: string): number | null {
  if (part === "") return null;
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(digits)) {
    digits = digits.slice(2);
    radix = 16;
  } else if (digits.length > 1 && digits.startsWith("0")) {
    digits = digits.slice(1);
    radix = 8;
  }
  if (digits === "") return 0; // "0x" alone is zero for both parsers
  const ok = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!ok.test(digits)) return null;
  // Anything of 2^32 or more is rejected by the caller, so precision loss on absurdly long input
  // cannot turn an invalid value into a valid one (it stays ≥ 2^32).
  return parseInt(digits, radix);
}

/**
 * IPv4 in every form `new URL()` and inet_aton accept: 1 to 4 parts, each decimal/octal/hex, the
 * last part filling the remaining bytes (`127.1`, `0x7f.1`, `2130706433`, `017700000001`), one
 * trailing dot allowed. Returns the 32-bit value or `null`.
 */
export function parseIPv4(input: string): number | null {
  const parts = input.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    const n = parseIPv4Part(p);
    if (n === null) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  let value = last;
  nums.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return value;
}

/** WHATWG "ends in a number": such a host must be an IPv4 address or the URL is invalid. */
function endsInNumber(host: string): boolean {
  const parts = host.split(".");
  if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
  const last = parts[parts.length - 1];
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/i.test(last);
}

const DOTTED_QUAD =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * IPv6 text (RFC 4291 §2.2), with an optional dotted-quad tail and an optional zone id (`%eth0`,
 * which resolvers may append to link-local answers; it does not change the classification).
 * Returns the 128-bit value or `null`.
 */
export function parseIPv6(input: string): bigint | null {
  let s = input;
  const zone = s.indexOf("%");
  if (zone !== -1) s = s.slice(0, zone);
  if (s === "") return null;
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const toGroups = (half: string, allowQuad: boolean): number[] | null => {
    if (half === "") return [];
    const parts = half.split(":");
    const groups: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (allowQuad && i === parts.length - 1 && p.includes(".")) {
        const m = DOTTED_QUAD.exec(p);
        if (!m) return null;
        groups.push((Number(m[1]) << 8) | Number(m[2]), (Number(m[3]) << 8) | Number(m[4]));
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(p)) return null;
        groups.push(parseInt(p, 16));
      }
    }
    return groups;
  };
  let groups: number[];
  if (halves.length === 2) {
    const head = toGroups(halves[0], false);
    const tail = toGroups(halves[1], true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = toGroups(s, true);
    if (!all || all.length !== 8) return null;
    groups = all;
  }
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

export function formatIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

/** RFC 5952 canonical text: lowercase, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
export function formatIPv6(value: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}

export function ipv4(value: number): IpAddress {
  return { family: 4, value: value >>> 0, text: formatIPv4(value >>> 0) };
}

export function ipv6(value: bigint): IpAddress {
  return { family: 6, value, text: formatIPv6(value) };
}

/** An IP address in any accepted text form (IPv4 forms above, IPv6 with or without brackets), or `null`. */
export function parseIp(text: string): IpAddress | null {
  const t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) {
    const v6 = parseIPv6(t.slice(1, -1));
    return v6 === null ? null : ipv6(v6);
  }
  if (t.includes(":")) {
    const v6 = parseIPv6(t);
    return v6 === null ? null : ipv6(v6);
  }
  const v4 = parseIPv4(t);
  return v4 === null ? null : ipv4(v4);
}

/**
 * A URL host (as `URL.hostname` gives it, or raw): an IP literal, a DNS name, or invalid.
 * `new URL()` already rewrites `2130706433`, `0x7f.1`, `017700000001` and `127.1` to
 * `127.0.0.1` and canonicalises bracketed IPv6 (verified under Bun 1.4.5); this function does the
 * same on its own so that a host which never went through the URL parser is judged identically.
 * Names are restricted to LDH/underscore labels (IDNs arrive as punycode from the URL parser): a
 * string like `"127.0.0.1 x"` must not reach a resolver that might read it with inet_aton.
 */
export function parseHost(host: string): ParsedHost {
  const h = host.toLowerCase();
  if (h.startsWith("[") || h.includes(":")) {
    const inner = h.startsWith("[") && h.endsWith("]") ? h.slice(1, -1) : h;
    if (inner.includes("%")) return { kind: "invalid", input: host }; // zone ids are not valid in URLs
    const v6 = parseIPv6(inner);
    return v6 === null ? { kind: "invalid", input: host } : { kind: "ip", ip: ipv6(v6) };
  }
  if (h === "") return { kind: "invalid", input: host };
  const v4 = parseIPv4(h);
  if (v4 !== null) return { kind: "ip", ip: ipv4(v4) };
  if (endsInNumber(h)) return { kind: "invalid", input: host };
  if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/.test(h) || h.length > 254) return { kind: "invalid", input: host };
  return { kind: "name", name: h };
}
