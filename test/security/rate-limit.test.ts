import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RateLimiter } from "../../src/http/rate-limit.ts";
import { ClientAddressResolver } from "../../src/http/client-address.ts";
import { DEFAULT_RATE_LIMITS } from "../../src/config/config.ts";
import { json } from "../helpers/app.ts";
import { rawJson, startTestServer, type TestServer } from "../helpers/server.ts";

/**
 * Issue 9: rate limits that can be neither escaped nor turned into a lock-out. Clients are told
 * apart by the socket's local address (127.0.0.x), as a server behind no proxy sees them.
 */
const LIMITS = {
  VSEARCH_RATE_LIMIT_AUTH: "3",
  VSEARCH_RATE_LIMIT_AUTH_EMAIL: "6",
  VSEARCH_RATE_LIMIT_AUTH_ADDRESS: "8",
  VSEARCH_RATE_LIMIT_COLLECTIONS_READ: "4",
};
const PASSWORD = "correct horse";

async function userIn(s: TestServer, email: string) {
  const acc = await s.app.services.accounts.createAccount({ name: email, plan: "enterprise" });
  await s.app.services.accounts.createUser({ account_id: acc.id, email, password: PASSWORD, role: "admin" });
}

/**
 * The limiter counts in one-minute windows of the app's clock. A test's requests (sign-ins hash a
 * password) took over a minute on a loaded machine, and a window that rolled over mid-test reset
 * the count; so the clock is held at the first request of each server: the limiter sees no time
 * pass, however slow the machine.
 */
const heldAt = new WeakMap<TestServer, number>();
function holdClock(s: TestServer): void {
  if (!heldAt.has(s)) heldAt.set(s, s.clock.now);
  s.clock.now = heldAt.get(s)!;
}

const signIn = (s: TestServer, email: string, password: string, from: string, headers: Record<string, string> = {}) => {
  holdClock(s);
  return rawJson(s.port, "/v1/auth/sessions", { email, password }, { localAddress: from, headers });
};

describe("sign-in limits without a proxy: the socket peer is the client", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LIMITS);
    for (const u of ["victim@x.io", "v2@x.io", "v3@x.io"]) await userIn(s, u);
  });
  afterAll(() => s.close());

  test("rotating X-Forwarded-For buys no guesses; the victim at another address still signs in", async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++)
      statuses.push(
        (await signIn(s, "victim@x.io", `guess${i}`, "127.0.0.2", { "X-Forwarded-For": `10.0.0.${i}` })).status,
      );
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    const limited = await signIn(s, "victim@x.io", "guess9", "127.0.0.2", { "X-Forwarded-For": "10.9.9.9" });
    expect(JSON.parse(limited.body).detail.code).toBe("RATE_LIMIT_EXCEEDED");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    const victim = await signIn(s, "victim@x.io", PASSWORD, "127.0.0.3");
    expect(victim.status).toBe(201);
  });

  test("correct passwords do not use up the per-(address, e-mail) budget", async () => {
    for (let i = 0; i < 5; i++) expect((await signIn(s, "v2@x.io", PASSWORD, "127.0.0.4")).status).toBe(201);
  });

  test("X-RateLimit-* on success and on a wrong password", async () => {
    const good = await signIn(s, "v2@x.io", PASSWORD, "127.0.0.5");
    expect(good.headers["x-ratelimit-limit"]).toBe("8"); // per address: the one a success spends
    expect(good.headers["x-ratelimit-remaining"]).toBe("7");
    const bad = await signIn(s, "v2@x.io", "nope", "127.0.0.5");
    expect(bad.status).toBe(401);
    expect(bad.headers["x-ratelimit-limit"]).toBe("3"); // per (address, e-mail): closest to running out
    expect(bad.headers["x-ratelimit-remaining"]).toBe("2");
  });

  test("per e-mail across addresses: distributed guessing stops at the e-mail limit", async () => {
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await signIn(s, "v3@x.io", "nope", `127.0.1.${i + 1}`)).status);
    expect(statuses.slice(0, 6)).toEqual(Array(6).fill(401));
    expect(statuses.slice(6)).toEqual([429, 429]);
  });

  test("per address across e-mails: spraying stops at the address cap", async () => {
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await signIn(s, `nobody${i}@x.io`, "nope", "127.0.2.1")).status);
    expect(statuses).toEqual([...Array(8).fill(401), 429, 429]);
    // Another address is unaffected.
    expect((await signIn(s, "nobody0@x.io", "nope", "127.0.2.2")).status).toBe(401);
  });
});

describe("behind a trusted proxy", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ ...LIMITS, VSEARCH_TRUSTED_PROXIES: "127.0.0.1/32" });
    await userIn(s, "p@x.io");
    await userIn(s, "q@x.io");
  });
  afterAll(() => s.close());

  test("X-Forwarded-For is read right to left: the hop the proxy appended counts, the client's own entries do not", async () => {
    const statuses = [];
    // The proxy (peer 127.0.0.1) appends the real client 203.0.113.7; the client forges the left part.
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await signIn(s, "p@x.io", "nope", "127.0.0.1", { "X-Forwarded-For": `6.6.6.${i}, 203.0.113.7` })).status,
      );
    expect(statuses).toEqual([401, 401, 401, 429]);
    // A different real client behind the same proxy has its own budget.
    expect((await signIn(s, "p@x.io", "nope", "127.0.0.1", { "X-Forwarded-For": "203.0.113.8" })).status).toBe(401);
  });

  test("a peer that is not a trusted proxy cannot use X-Forwarded-For", async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await signIn(s, "q@x.io", "nope", "127.0.0.9", { "X-Forwarded-For": `203.0.113.${50 + i}` })).status,
      );
    expect(statuses).toEqual([401, 401, 401, 429]);
  });
});

describe("sessions count against their user", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LIMITS);
    await userIn(s, "many@x.io");
  });
  afterAll(() => s.close());

  test("two sessions of one user share one budget", async () => {
    const tokens = [];
    for (let i = 0; i < 2; i++)
      tokens.push(JSON.parse((await signIn(s, "many@x.io", PASSWORD, "127.0.0.1")).body).data.token);
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      holdClock(s);
      statuses.push((await s.http("/v1/collections", { token: tokens[i % 2] })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    holdClock(s);
    const last = await s.http("/v1/collections", { token: tokens[0] });
    expect(last.headers.get("x-ratelimit-remaining")).toBe("0");
    expect((await json(last)).detail.code).toBe("RATE_LIMIT_EXCEEDED");
  });
});

describe("the limiter's table", () => {
  test("memory is bounded by maxClients; a recently seen client keeps its count", () => {
    const l = new RateLimiter(DEFAULT_RATE_LIMITS, Date.now, { maxClients: 1000 });
    for (let i = 0; i < 50_000; i++) l.hit("search", `ip:${i}`);
    expect(l.size).toBe(1000);
    // A client seen recently keeps its count; hits are counted per window.
    for (let i = 0; i < 30; i++) l.hit("search", "ip:49999");
    expect(l.hit("search", "ip:49999").allowed).toBe(false);
  });
});

describe("client address", () => {
  const direct = new ClientAddressResolver([]);
  const proxied = new ClientAddressResolver(["10.0.0.0/8", "fd00::/8"]);

  test("IPv6 clients count per /64; IPv4-mapped peers as their IPv4 address", () => {
    expect(direct.resolve("2001:db8:1:2:aaaa::1", null)).toBe(direct.resolve("2001:db8:1:2:ffff::9", null));
    expect(direct.resolve("2001:db8:1:2::1", null)).not.toBe(direct.resolve("2001:db8:1:3::1", null));
    expect(direct.resolve("::ffff:198.51.100.7", null)).toBe("198.51.100.7");
    expect(direct.resolve(null, "1.2.3.4")).toBe("unknown");
  });

  test("trusted hops are skipped right to left; a malformed or name entry stops the walk", () => {
    expect(proxied.resolve("10.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
    expect(proxied.resolve("fd00::1", "198.51.100.8")).toBe("198.51.100.8");
    expect(proxied.resolve("10.0.0.1", "198.51.100.7, evil.example")).toBe("10.0.0.1");
    expect(proxied.resolve("10.0.0.1", "198.51.100.7, ")).toBe("10.0.0.1");
    expect(proxied.resolve("198.51.100.9", "203.0.113.1")).toBe("198.51.100.9");
  });
});
