import { describe, expect, it } from "vitest";
import {
  checkTarget,
  CidrAllowList,
  classifyAddress,
  formatIPv6,
  parseCidr,
  parseHost,
  parseIp,
  parseIPv6,
  type Resolver,
} from "../../src/net/address-rules.ts";
import { fakeResolver, NON_PUBLIC_LITERALS } from "./targets.ts";
import { NetError } from "../../src/net/errors.ts";
import { rng } from "../helpers/rng.ts";

function ipText(host: string): string {
  const h = parseHost(host);
  if (h.kind !== "ip") throw new Error(`${host} parsed as ${h.kind}`);
  return h.ip.text;
}

describe("what new URL() does with numeric hosts (Bun 1.4.5)", () => {
  it.each([
    ["2130706433", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["017700000001", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["%31%32%37.0.0.1", "127.0.0.1"],
    ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"],
    ["[::127.0.0.1]", "[::7f00:1]"],
    ["[64:ff9b::10.0.0.1]", "[64:ff9b::a00:1]"],
  ])("%s is normalised to %s, and parseHost reads the raw form the same way", (raw, normalised) => {
    const hostname = new URL(`http://${raw}/`).hostname;
    expect(hostname).toBe(normalised);
    if (!raw.includes("%")) expect(ipText(raw)).toBe(ipText(hostname));
  });

  it.each(["4294967296", "09.0.0.1", "1.2.3.4.5", "foo.0x1", "[fe80::1%25eth0]"])(
    "%s is not a valid URL host, and parseHost calls it invalid too",
    (raw) => {
      expect(() => new URL(`http://${raw}/`)).toThrow();
      expect(parseHost(raw).kind).toBe("invalid");
    },
  );

  it("parseHost agrees with the URL parser on 2000 generated IPv4 spellings", () => {
    const rand = rng(7);
    for (let i = 0; i < 2000; i++) {
      const value = Math.floor(rand() * 2 ** 32);
      const nParts = 1 + Math.floor(rand() * 4);
      const bytes = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
      const parts = [...bytes.slice(0, nParts - 1), bytes.slice(nParts - 1).reduce((a, b) => a * 256 + b, 0)];
      const spelled = parts
        .map((p) => {
          const r = rand();
          return r < 0.33 ? String(p) : r < 0.66 ? `0x${p.toString(16)}` : `0${p.toString(8)}`;
        })
        .join(".");
      const viaUrl = new URL(`http://${spelled}/`).hostname;
      expect(ipText(spelled), spelled).toBe(viaUrl);
    }
  });

  it("formatIPv6 matches the URL parser's canonical form on 2000 generated addresses", () => {
    const rand = rng(11);
    for (let i = 0; i < 2000; i++) {
      // Mostly-zero groups, so that runs of zeros (and ties between runs) are common.
      const groups = Array.from({ length: 8 }, () => (rand() < 0.5 ? 0 : Math.floor(rand() * 0x10000)));
      const full = groups.map((g) => g.toString(16)).join(":");
      const value = parseIPv6(full)!;
      expect(`[${formatIPv6(value)}]`, full).toBe(new URL(`http://[${full}]/`).hostname);
      expect(parseIPv6(formatIPv6(value))).toBe(value);
    }
  });
});

describe("parseHost / parseIp", () => {
  it("reads names, lower-cased, and refuses strings a resolver might read as an address", () => {
    expect(parseHost("Example.COM")).toEqual({ kind: "name", name: "example.com" });
    expect(parseHost("localhost.")).toEqual({ kind: "name", name: "localhost." });
    expect(parseHost("127.0.0.1 x").kind).toBe("invalid");
    expect(parseHost("").kind).toBe("invalid");
    expect(parseHost("a..b").kind).toBe("invalid");
  });

  it("reads IPv6 with brackets, embedded dotted quads and zone ids (resolver answers only)", () => {
    expect(parseIp("[::1]")?.text).toBe("::1");
    expect(parseIp("::ffff:127.0.0.1")?.text).toBe("::ffff:7f00:1");
    expect(parseIp("fe80::1%eth0")?.text).toBe("fe80::1");
    expect(parseHost("[fe80::1%eth0]").kind).toBe("invalid");
    for (const bad of [":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "::1.2.3", "::01.2.3.4", "g::1"]) {
      expect(parseIp(bad), bad).toBeNull();
    }
  });
});

describe("classifyAddress", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "this-network"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.128.0.1", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["192.88.99.1", "reserved"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["2606:4700::1111", "public"],
    ["fd00::1", "unique-local"],
    ["fc00::1", "unique-local"],
    ["fe80::1", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["2001:2::1", "benchmarking"],
    ["2001:10::1", "reserved"],
    ["100::1", "reserved"],
    ["4000::1", "reserved"],
    ["5f00::1", "reserved"],
    ["::ffff:127.0.0.1", "ipv4-mapped-loopback"],
    ["::ffff:7f00:1", "ipv4-mapped-loopback"],
    ["::ffff:10.1.2.3", "ipv4-mapped-private"],
    ["::ffff:169.254.169.254", "ipv4-mapped-link-local"],
    ["::ffff:0.0.0.0", "ipv4-mapped-unspecified"],
    ["::ffff:8.8.8.8", "public"],
    ["::127.0.0.1", "ipv4-compatible-loopback"],
    ["::8.8.8.8", "reserved"],
    ["::ffff:0:127.0.0.1", "ipv4-translated-loopback"],
    ["64:ff9b::10.0.0.1", "nat64-private"],
    ["64:ff9b::127.0.0.1", "nat64-loopback"],
    ["64:ff9b::8.8.8.8", "public"],
    ["64:ff9b:1::1", "reserved"],
    ["2002:7f00:1::", "6to4-loopback"],
    ["2002:c0a8:101::1", "6to4-private"],
    ["2002:808:808::1", "public"],
    // Teredo: client 10.0.0.1 stored inverted (f5ff:fffe) in the last 32 bits.
    ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "teredo-private"],
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public"],
  ])("%s → %s", (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it("rejects text that is not an address", () => {
    expect(() => classifyAddress("example.com")).toThrow(TypeError);
  });
});

describe("CidrAllowList", () => {
  it("opens exactly the named networks, IPv4 and IPv6 kept apart", () => {
    const allow = CidrAllowList.from("127.0.0.0/8, ::1/128,10.1.0.0/16");
    expect(allow.contains("127.5.6.7")).toBe(true);
    expect(allow.contains("128.0.0.1")).toBe(false);
    expect(allow.contains("::1")).toBe(true);
    expect(allow.contains("::2")).toBe(false);
    expect(allow.contains("10.1.255.1")).toBe(true);
    expect(allow.contains("10.2.0.1")).toBe(false);
    // An IPv4 network does not match the IPv6 spelling by itself (checkTarget unwraps mapped forms).
    expect(allow.contains("::ffff:127.0.0.1")).toBe(false);
    expect(allow.toString()).toBe("127.0.0.0/8,::1/128,10.1.0.0/16");
  });

  it("is empty by default and treats a bare address as one host", () => {
    expect(new CidrAllowList().isEmpty).toBe(true);
    expect(CidrAllowList.from(undefined).contains("127.0.0.1")).toBe(false);
    const one = CidrAllowList.from(["192.168.1.10"]);
    expect(one.contains("192.168.1.10")).toBe(true);
    expect(one.contains("192.168.1.11")).toBe(false);
  });

  it("masks host bits and handles /0", () => {
    expect(parseCidr("127.0.0.1/8").text).toBe("127.0.0.0/8");
    expect(parseCidr("fd12:3456::1/16").text).toBe("fd12::/16");
    expect(CidrAllowList.from("0.0.0.0/0").contains("203.0.113.5")).toBe(true);
    expect(CidrAllowList.from("::/0").contains("fe80::1")).toBe(true);
    expect(CidrAllowList.from("::/0").contains("10.0.0.1")).toBe(false);
  });

  it.each(["10.0.0.0/33", "::/129", "not-an-ip/8", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8/8"])(
    "refuses %s with a message naming it",
    (bad) => {
      expect(() => CidrAllowList.from([bad])).toThrow(RangeError);
      expect(() => CidrAllowList.from([bad])).toThrow(bad);
    },
  );
});

async function refusal(url: string, resolve?: Resolver, allowNetworks?: string[]): Promise<NetError> {
  const err = await checkTarget(url, { resolve, allowNetworks }).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof NetError)) throw new Error(`${url} was not refused with a NetError: ${String(err)}`);
  return err;
}

describe("checkTarget", () => {
  it.each([
    ...NON_PUBLIC_LITERALS,
    ["http://[::ffff:7f00:1]/", "ipv4-mapped-loopback"],
    ["http://[::127.0.0.1]/", "ipv4-compatible-loopback"],
    ["http://[64:ff9b::192.168.0.1]/", "nat64-private"],
    ["http://[2002:a00:1::]/", "6to4-private"],
    ["http://127.1:8080/", "loopback"],
    ["http://[ff02::1]/", "multicast"],
    ["http://224.0.0.1/", "multicast"],
    ["https://192.0.2.1/", "documentation"],
  ])("refuses the literal %s as %s without resolving anything", async (url, reason) => {
    const { resolve, calls } = fakeResolver({});
    const err = await refusal(url, resolve);
    expect(err.code).toBe("TARGET_FORBIDDEN");
    expect(err.reason).toBe(reason);
    expect(calls).toEqual([]);
  });

  it("refuses http://localhost through the system resolver (loopback answer)", async () => {
    // `localhost` comes from /etc/hosts (Bun answers it without any socket, checked with strace).
    const err = await refusal("http://localhost:9/");
    expect(err.code).toBe("TARGET_FORBIDDEN");
    expect(err.reason).toBe("loopback");
    expect(err.message).toContain("from localhost");
  });

  it("refuses a name that resolves to loopback", async () => {
    const { resolve, calls } = fakeResolver({ "rebind.example": ["127.0.0.1"] });
    const err = await refusal("https://rebind.example/hook", resolve);
    expect([err.code, err.reason, err.address]).toEqual(["TARGET_FORBIDDEN", "loopback", "127.0.0.1"]);
    expect(calls).toEqual(["rebind.example"]);
  });

  it("refuses a name when any one of its addresses is forbidden", async () => {
    const { resolve } = fakeResolver({
      "mixed.example": ["93.184.216.34", "10.0.0.5"],
      "mixed6.example": ["2606:4700::1", "::ffff:192.168.0.1"],
    });
    expect((await refusal("http://mixed.example/", resolve)).reason).toBe("private");
    expect((await refusal("http://mixed6.example/", resolve)).reason).toBe("ipv4-mapped-private");
  });

  it.each([
    ["ftp://example.com/file", "scheme"],
    ["file:///etc/passwd", "scheme"],
    ["gopher://example.com/", "scheme"],
    ["javascript:alert(1)", "scheme"],
    ["http://user:pass@example.com/", "credentials"],
    ["http://user@example.com/", "credentials"],
    ["https://:secret@example.com/", "credentials"],
  ])("refuses %s (%s) before any lookup", async (url, reason) => {
    const { resolve, calls } = fakeResolver({ "example.com": ["93.184.216.34"] });
    const err = await refusal(url, resolve);
    expect([err.code, err.reason]).toEqual(["TARGET_FORBIDDEN", reason]);
    expect(calls).toEqual([]);
  });

  it("answers INVALID_URL for text that is not a URL", async () => {
    expect((await refusal("not a url")).code).toBe("INVALID_URL");
    expect((await refusal("http://4294967296/")).code).toBe("INVALID_URL");
  });

  it("answers DNS_FAILED when the name does not resolve, has no addresses, or an unreadable one", async () => {
    const { resolve } = fakeResolver({ "empty.example": [], "garbage.example": ["not-an-ip"] });
    expect((await refusal("http://nowhere.example/", resolve)).code).toBe("DNS_FAILED");
    expect((await refusal("http://empty.example/", resolve)).code).toBe("DNS_FAILED");
    expect((await refusal("http://garbage.example/", resolve)).code).toBe("DNS_FAILED");
  });

  it("accepts a public name, resolving once, and returns every checked address", async () => {
    const { resolve, calls } = fakeResolver({
      "hooks.example": ["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"],
    });
    const t = await checkTarget("https://hooks.example:8443/in?x=1", { resolve });
    expect(calls).toEqual(["hooks.example"]);
    expect(t.isName).toBe(true);
    expect(t.hostname).toBe("hooks.example");
    expect(t.port).toBe(8443);
    expect(t.protocol).toBe("https:");
    expect(t.addresses.map((a) => a.text)).toEqual(["93.184.216.34", "2606:2800:220:1::1"]);
    expect(t.address.text).toBe("93.184.216.34");
  });

  it("uses the default port of the scheme", async () => {
    expect((await checkTarget("http://8.8.8.8/")).port).toBe(80);
    expect((await checkTarget("https://8.8.8.8/")).port).toBe(443);
  });

  it("lets the allow list open named networks, and only those", async () => {
    const allow = ["127.0.0.0/8", "::1/128"];
    expect((await checkTarget("http://127.0.0.1:8080/", { allowNetworks: allow })).address.text).toBe("127.0.0.1");
    expect((await checkTarget("http://[::1]:8080/", { allowNetworks: allow })).address.text).toBe("::1");
    // The mapped form connects to the IPv4 address it stands for, which the list opens.
    const mapped = await checkTarget("http://[::ffff:127.0.0.1]/", { allowNetworks: allow });
    expect(mapped.address).toMatchObject({ family: 4, text: "127.0.0.1" });
    // NAT64 of loopback goes to a NAT64 gateway, not to loopback: still refused.
    expect((await refusal("http://[64:ff9b::127.0.0.1]/", undefined, allow)).reason).toBe("nat64-loopback");
    expect((await refusal("http://10.0.0.1/", undefined, allow)).reason).toBe("private");
    const { resolve } = fakeResolver({ "svc.internal": ["127.0.0.9", "10.0.0.2"] });
    expect((await refusal("http://svc.internal/", resolve, allow)).reason).toBe("private");
  });
});
