import type { Resolver } from "../../src/net/address-rules.ts";

/** What the two layers that guard outbound requests (checkTarget, safeFetch) must both refuse. */

/**
 * Literal targets that are not public, with the reason each is refused: every form that must be
 * caught before any lookup (IPv6, IPv4-mapped, and the integer, hex and octal spellings of 127.0.0.1).
 */
export const NON_PUBLIC_LITERALS: [url: string, reason: string][] = [
  ["http://127.0.0.1/", "loopback"],
  ["http://[::1]/", "loopback"],
  ["http://0.0.0.0/", "unspecified"],
  ["http://10.0.0.1/", "private"],
  ["http://172.16.0.1/", "private"],
  ["http://192.168.1.1/", "private"],
  ["http://169.254.169.254/latest/meta-data/", "link-local"],
  ["http://100.64.0.1/", "cgnat"],
  ["http://[fd00::1]/", "unique-local"],
  ["http://[fe80::1]/", "link-local"],
  ["http://[::ffff:127.0.0.1]/", "ipv4-mapped-loopback"],
  ["http://2130706433/", "loopback"],
  ["http://0x7f.1/", "loopback"],
  ["http://017700000001/", "loopback"],
];

/** A resolver that answers from `table` and fails the lookup of anything else; records every question. */
export function fakeResolver(table: Record<string, string[]>) {
  const calls: string[] = [];
  const resolve: Resolver = async (name) => {
    calls.push(name);
    const answers = table[name];
    if (!answers) throw Object.assign(new Error(`unexpected lookup of ${name}`), { code: "ENOTFOUND" });
    return answers.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return { resolve, calls };
}
