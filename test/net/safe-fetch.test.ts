import http from "node:http";
import https from "node:https";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Resolver } from "../../src/net/address-rules.ts";
import { NetError } from "../../src/net/errors.ts";
import { readBodyLimited, safeFetch, type SafeFetchOptions } from "../../src/net/safe-fetch.ts";
import { closedPort, eventually, fixtureCert, serve, type LoopbackServer } from "./loopback.ts";
import { fakeResolver, NON_PUBLIC_LITERALS } from "./targets.ts";

const LOOPBACK = ["127.0.0.0/8", "::1/128"];

const servers: LoopbackServer[] = [];
async function track(s: Promise<LoopbackServer>): Promise<LoopbackServer> {
  const server = await s;
  servers.push(server);
  return server;
}
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function failure(url: string, options: SafeFetchOptions): Promise<NetError> {
  const err = await safeFetch(url, options).then(
    (r) => new Error(`expected a failure, got HTTP ${r.status}`),
    (e: unknown) => e,
  );
  if (!(err instanceof NetError)) throw err;
  return err;
}

/** Makes any attempt to open an outbound request fail the test instead of reaching the network. */
function forbidRequests() {
  const attempt = () => {
    throw new Error("a refused target must never be connected to");
  };
  return [
    vi.spyOn(http, "request").mockImplementation(attempt),
    vi.spyOn(https, "request").mockImplementation(attempt),
  ];
}

describe("refusals (default rules: nothing non-public is open)", () => {
  const literalCases: [string, string][] = [
    ...NON_PUBLIC_LITERALS,
    ["https://[64:ff9b::a9fe:a9fe]/", "nat64-link-local"],
  ];

  it.each(literalCases)("%s is refused as %s and never connected to", async (url, reason) => {
    const spies = forbidRequests();
    const { resolve, calls } = fakeResolver({});
    const err = await failure(url, { resolve, method: "POST", body: "{}" });
    expect([err.code, err.reason]).toEqual(["TARGET_FORBIDDEN", reason]);
    expect(calls).toEqual([]);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });

  it("http://localhost is refused (system resolver answers loopback)", async () => {
    const spies = forbidRequests();
    const err = await failure("http://localhost/", {});
    expect([err.code, err.reason]).toEqual(["TARGET_FORBIDDEN", "loopback"]);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });

  it.each([
    ["a name resolving to loopback", "http://rebind.example/", "loopback"],
    ["a name resolving to a public and a private address", "http://mixed.example/", "private"],
    ["a name resolving to IPv4-mapped metadata", "https://mapped.example/", "ipv4-mapped-link-local"],
  ])("%s is refused and never connected to", async (_what, url, reason) => {
    const spies = forbidRequests();
    const { resolve, calls } = fakeResolver({
      "rebind.example": ["127.0.0.1"],
      "mixed.example": ["93.184.216.34", "192.168.0.10"],
      "mapped.example": ["2606:4700::1", "::ffff:169.254.169.254"],
    });
    const err = await failure(url, { resolve });
    expect([err.code, err.reason]).toEqual(["TARGET_FORBIDDEN", reason]);
    expect(calls).toHaveLength(1);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });

  it.each([
    ["ftp://example.com/x", "scheme"],
    ["file:///etc/passwd", "scheme"],
    ["http://user:pw@example.com/", "credentials"],
    ["https://token@example.com/", "credentials"],
  ])("%s is refused (%s)", async (url, reason) => {
    const spies = forbidRequests();
    const { resolve, calls } = fakeResolver({ "example.com": ["93.184.216.34"] });
    const err = await failure(url, { resolve });
    expect([err.code, err.reason]).toEqual(["TARGET_FORBIDDEN", reason]);
    expect(calls).toEqual([]);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  });

  it("a loopback server is not reached without the allow list, and is with it", async () => {
    const server = await track(serve((_req, res) => res.end("hi")));
    const url = `http://127.0.0.1:${server.port}/`;
    expect((await failure(url, {})).code).toBe("TARGET_FORBIDDEN");
    expect(server.connections).toBe(0);
    const ok = await safeFetch(url, { allowNetworks: LOOPBACK });
    expect(ok.status).toBe(200);
    expect(server.connections).toBe(1);
  });
});

describe("requests to opened loopback networks", () => {
  it("sends method, headers and body; Host names the URL, whatever the caller put there", async () => {
    const server = await track(
      serve((_req, res) => {
        res.writeHead(201, { "content-type": "text/plain", "x-multi": ["a", "b"] });
        res.end("created");
      }),
    );
    const { resolve } = fakeResolver({ localhost: ["127.0.0.1"] });
    const res = await safeFetch(`http://localhost:${server.port}/hooks/in?x=1#frag`, {
      method: "post",
      headers: { "Content-Type": "application/json", "X-Service-Event": "webhook.ping", Host: "evil.example" },
      body: '{"a":"é"}',
      allowNetworks: LOOPBACK,
      resolve,
    });
    expect(res.status).toBe(201);
    expect(new TextDecoder().decode(res.body)).toBe("created");
    expect(res.truncated).toBe(false);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.headers["x-multi"]).toBe("a, b");
    const [seen] = server.requests;
    expect(seen.method).toBe("POST");
    expect(seen.url).toBe("/hooks/in?x=1");
    expect(seen.headers.host).toBe(`localhost:${server.port}`);
    expect(seen.rawHeaders.filter((h) => h.toLowerCase() === "host")).toHaveLength(1);
    expect(seen.headers["x-service-event"]).toBe("webhook.ping");
    expect(seen.headers["content-length"]).toBe(String(Buffer.byteLength('{"a":"é"}')));
    expect(seen.body).toBe('{"a":"é"}');
  });

  it("sends a binary body byte for byte", async () => {
    const server = await track(serve((_req, res) => res.end("ok")));
    const bytes = new Uint8Array([0, 255, 1, 254, 10, 13]);
    await safeFetch(`http://127.0.0.1:${server.port}/`, { method: "PUT", body: bytes, allowNetworks: LOOPBACK });
    expect(server.requests[0].method).toBe("PUT");
    expect(server.requests[0].headers["content-length"]).toBe("6");
    expect([...server.requests[0].bytes]).toEqual([...bytes]);
  });

  it("connects to the checked address: resolver asked once, a decoy where a re-resolution would go gets nothing", async () => {
    // The real server is on 127.0.0.2. If anything resolved `localhost` again (system answer:
    // 127.0.0.1) the connection would land on the decoy, bound to the same port on 127.0.0.1.
    const decoy = await track(serve((_req, res) => res.end("decoy"), { host: "127.0.0.1" }));
    const pinned = await track(serve((_req, res) => res.end("real"), { host: "127.0.0.2", port: decoy.port }));
    const { resolve, calls } = fakeResolver({ localhost: ["127.0.0.2"] });
    const res = await safeFetch(`http://localhost:${decoy.port}/`, { allowNetworks: LOOPBACK, resolve });
    expect(new TextDecoder().decode(res.body)).toBe("real");
    expect(calls).toEqual(["localhost"]);
    expect(res.remoteAddress).toBe("127.0.0.2");
    expect(pinned.requests.map((r) => [r.localAddress, r.headers.host])).toEqual([
      ["127.0.0.2", `localhost:${decoy.port}`],
    ]);
    expect(decoy.connections).toBe(0);
  });

  it("goes straight to the checked address even with HTTP_PROXY set, on a fresh connection each time", async () => {
    // Bun's fetch would send this through the proxy (it reads the variable at call time); a
    // proxy connects wherever it likes, so the pinning must not depend on one.
    const proxy = await track(serve((_req, res) => res.end("proxied")));
    const server = await track(serve((_req, res) => res.end("direct")));
    vi.stubEnv("HTTP_PROXY", `http://127.0.0.1:${proxy.port}`);
    vi.stubEnv("http_proxy", `http://127.0.0.1:${proxy.port}`);
    try {
      for (let i = 0; i < 2; i++) {
        const res = await safeFetch(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK });
        expect(new TextDecoder().decode(res.body)).toBe("direct");
      }
    } finally {
      vi.unstubAllEnvs();
    }
    expect(proxy.connections).toBe(0);
    expect(server.connections).toBe(2);
  });

  it("falls back only among checked addresses", async () => {
    const server = await track(serve((_req, res) => res.end("ok"), { host: "127.0.0.2" }));
    const dead = await closedPort("127.0.0.3");
    expect(dead).toBeGreaterThan(0);
    const { resolve } = fakeResolver({ "multi.test": ["127.0.0.3", "127.0.0.2"] });
    // Same port on both: 127.0.0.3 refuses, 127.0.0.2 answers.
    const res = await safeFetch(`http://multi.test:${server.port}/`, { allowNetworks: LOOPBACK, resolve });
    expect(res.status).toBe(200);
    expect(res.remoteAddress).toBe("127.0.0.2");
  });

  it("returns a 302 as it is and does not follow it", async () => {
    const target = await track(serve((_req, res) => res.end("you followed")));
    const redirector = await track(
      serve((_req, res) => {
        res.writeHead(302, { location: `http://127.0.0.1:${target.port}/landing` });
        res.end();
      }),
    );
    const res = await safeFetch(`http://127.0.0.1:${redirector.port}/`, { allowNetworks: LOOPBACK });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(`http://127.0.0.1:${target.port}/landing`);
    expect(redirector.requests).toHaveLength(1);
    expect(target.connections).toBe(0);
    expect(target.requests).toHaveLength(0);
  });

  it("IPv6 loopback and the IPv4-mapped spelling of 127.0.0.1 work when opened", async () => {
    const v6 = await track(serve((_req, res) => res.end("six"), { host: "::1" }));
    const v4 = await track(serve((_req, res) => res.end("four")));
    const six = await safeFetch(`http://[::1]:${v6.port}/`, { allowNetworks: LOOPBACK });
    expect(new TextDecoder().decode(six.body)).toBe("six");
    expect(v6.requests[0].headers.host).toBe(`[::1]:${v6.port}`);
    const mapped = await safeFetch(`http://[::ffff:127.0.0.1]:${v4.port}/`, { allowNetworks: ["127.0.0.0/8"] });
    expect(new TextDecoder().decode(mapped.body)).toBe("four");
  });

  it("answers CONNECT_FAILED when nothing listens", async () => {
    const port = await closedPort();
    const err = await failure(`http://127.0.0.1:${port}/`, { allowNetworks: LOOPBACK });
    expect(err.code).toBe("CONNECT_FAILED");
  });

  it("answers DNS_FAILED when the resolver fails or returns nothing", async () => {
    const { resolve } = fakeResolver({ "empty.test": [] });
    expect((await failure("http://missing.test/", { resolve, allowNetworks: LOOPBACK })).code).toBe("DNS_FAILED");
    expect((await failure("http://empty.test/", { resolve, allowNetworks: LOOPBACK })).code).toBe("DNS_FAILED");
  });
});

describe("time limit", () => {
  it("a server that never answers → TIMEOUT within the limit, connection closed", async () => {
    const server = await track(serve(() => {}));
    const started = Date.now();
    const err = await failure(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, timeoutMs: 300 });
    const elapsed = Date.now() - started;
    expect(err.code).toBe("TIMEOUT");
    expect(elapsed).toBeGreaterThanOrEqual(280);
    expect(elapsed).toBeLessThan(1500);
    expect(await eventually(() => server.closedConnections === 1)).toBe(true);
  });

  it("a body that trickles past the limit → TIMEOUT (the limit covers the whole exchange)", async () => {
    const server = await track(
      serve((_req, res) => {
        res.writeHead(200);
        let n = 0;
        const drip = setInterval(() => {
          if (res.destroyed || ++n > 100) {
            clearInterval(drip);
            res.end();
          } else res.write("x");
        }, 50);
      }),
    );
    const started = Date.now();
    const err = await failure(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, timeoutMs: 400 });
    expect(err.code).toBe("TIMEOUT");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("a resolver that never answers → TIMEOUT", async () => {
    const resolve: Resolver = () => new Promise(() => {});
    const err = await failure("http://stuck.test/", { resolve, timeoutMs: 200 });
    expect(err.code).toBe("TIMEOUT");
  });

  it("the caller's signal cancels with ABORTED", async () => {
    const server = await track(serve(() => {}));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const err = await failure(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, signal: ac.signal });
    expect(err.code).toBe("ABORTED");
    expect(
      (await failure(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, signal: ac.signal })).code,
    ).toBe("ABORTED");
  });
});

describe("size limit", () => {
  /** Streams 64 KiB chunks until the client goes away (at most 64 MiB). */
  const endless = () =>
    serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(65536, 0x61);
      let sent = 0;
      const pump = () => {
        while (!res.destroyed && sent < 1024) {
          sent++;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });

  it("a declared Content-Length over the limit → RESPONSE_TOO_LARGE without reading the body", async () => {
    const server = await track(
      serve((_req, res) => {
        res.writeHead(200, { "content-length": String(10 * 1024 * 1024) });
        res.write(Buffer.alloc(1024));
      }),
    );
    const err = await failure(`http://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, maxResponseBytes: 4096 });
    expect(err.code).toBe("RESPONSE_TOO_LARGE");
  });

  it("an endless chunked body → RESPONSE_TOO_LARGE, and the connection is dropped", async () => {
    const server = await track(endless());
    const err = await failure(`http://127.0.0.1:${server.port}/`, {
      allowNetworks: LOOPBACK,
      maxResponseBytes: 100_000,
    });
    expect(err.code).toBe("RESPONSE_TOO_LARGE");
    expect(await eventually(() => server.closedConnections === 1)).toBe(true);
  });

  it("with onOversize: truncate, the first maxResponseBytes come back marked truncated", async () => {
    const server = await track(endless());
    const res = await safeFetch(`http://127.0.0.1:${server.port}/`, {
      allowNetworks: LOOPBACK,
      maxResponseBytes: 100_000,
      onOversize: "truncate",
    });
    expect(res.status).toBe(200);
    expect(res.truncated).toBe(true);
    expect(res.body.byteLength).toBe(100_000);
    expect(res.body.every((b) => b === 0x61)).toBe(true);
    expect(await eventually(() => server.closedConnections === 1)).toBe(true);
  });

  it("a body of exactly maxResponseBytes is complete, not truncated", async () => {
    const server = await track(serve((_req, res) => res.end(Buffer.alloc(5000, 0x62))));
    const res = await safeFetch(`http://127.0.0.1:${server.port}/`, {
      allowNetworks: LOOPBACK,
      maxResponseBytes: 5000,
    });
    expect([res.body.byteLength, res.truncated]).toEqual([5000, false]);
  });

  it("readBodyLimited keeps the prefix and stops pulling from the source", async () => {
    let pulled = 0;
    async function* source() {
      for (let i = 0; i < 1000; i++) {
        pulled++;
        yield new Uint8Array(10).fill(i % 256);
      }
    }
    const { body, truncated } = await readBodyLimited(source(), 25);
    expect(truncated).toBe(true);
    expect([...body]).toEqual([...new Array(10).fill(0), ...new Array(10).fill(1), 2, 2, 2, 2, 2]);
    expect(pulled).toBe(3);
    const whole = await readBodyLimited(source(), 10_000);
    expect([whole.body.byteLength, whole.truncated]).toEqual([10_000, false]);
  });
});

describe("https", () => {
  it("connects to the pinned address, sends SNI and checks the certificate against the URL's name", async () => {
    const server = await track(serve((_req, res) => res.end("secure"), { tls: true }));
    const { resolve, calls } = fakeResolver({ localhost: ["127.0.0.1"] });
    const res = await safeFetch(`https://localhost:${server.port}/x`, {
      allowNetworks: LOOPBACK,
      resolve,
      ca: fixtureCert(),
    });
    expect(new TextDecoder().decode(res.body)).toBe("secure");
    expect(calls).toEqual(["localhost"]);
    expect(server.requests[0].servername).toBe("localhost");
    expect(server.requests[0].headers.host).toBe(`localhost:${server.port}`);
  });

  it("refuses a certificate that is not trusted (TLS_FAILED)", async () => {
    const server = await track(serve((_req, res) => res.end("secure"), { tls: true }));
    const { resolve } = fakeResolver({ localhost: ["127.0.0.1"] });
    const err = await failure(`https://localhost:${server.port}/`, { allowNetworks: LOOPBACK, resolve });
    expect(err.code).toBe("TLS_FAILED");
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a certificate that does not name the host: the IP literal is not in its SANs (TLS_FAILED)", async () => {
    const server = await track(serve((_req, res) => res.end("secure"), { tls: true }));
    const err = await failure(`https://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, ca: fixtureCert() });
    expect(err.code).toBe("TLS_FAILED");
    expect(server.requests).toHaveLength(0);
  });

  it("https to a plain-HTTP port fails with a coded error", async () => {
    const server = await track(serve((_req, res) => res.end("plain")));
    const err = await failure(`https://127.0.0.1:${server.port}/`, { allowNetworks: LOOPBACK, timeoutMs: 2000 });
    expect(err.code).toBe("TLS_FAILED");
  });
});

describe("option checks", () => {
  it("refuses a malformed allow list up front and bad limits", async () => {
    await expect(safeFetch("http://127.0.0.1/", { allowNetworks: ["127.0.0.0/99"] })).rejects.toThrow(RangeError);
    await expect(safeFetch("http://127.0.0.1/", { timeoutMs: 0 })).rejects.toThrow(RangeError);
    await expect(safeFetch("http://127.0.0.1/", { maxResponseBytes: -1 })).rejects.toThrow(RangeError);
  });

  it("a header value with a line break is INVALID_REQUEST, not a raw error", async () => {
    const server = await track(serve((_req, res) => res.end("x")));
    const err = await failure(`http://127.0.0.1:${server.port}/`, {
      allowNetworks: LOOPBACK,
      headers: { "x-bad": "a\r\nInjected: 1" },
    });
    expect(err.code).toBe("INVALID_REQUEST");
    expect(server.requests).toHaveLength(0);
  });
});
