import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { tempDir } from "../helpers/temp.ts";

const dir = tempDir("vsearch-config-");

describe("issue 9 configuration keys", () => {
  test("defaults: no trusted proxies, CORS off, sign-in limits, 500 000 counters", () => {
    const c = loadConfig({ dataDir: dir }, {});
    expect(c.trustedProxies).toEqual([]);
    expect(c.corsOrigins).toEqual([]);
    expect(c.rateLimitMaxClients).toBe(500_000);
    expect([c.rateLimits.auth, c.rateLimits.auth_email, c.rateLimits.auth_address]).toEqual([10, 50, 60]);
  });

  test("env and config.json are read; env wins", () => {
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        trusted_proxies: ["10.0.0.0/8"],
        cors_origins: ["https://a.example"],
        rate_limits: { auth_email: 5 },
      }),
    );
    const file = loadConfig({ dataDir: dir }, {});
    expect(file.trustedProxies).toEqual(["10.0.0.0/8"]);
    expect(file.corsOrigins).toEqual(["https://a.example"]);
    expect(file.rateLimits.auth_email).toBe(5);
    const env = loadConfig(
      { dataDir: dir },
      { VSEARCH_TRUSTED_PROXIES: "192.168.0.1, fd00::/8", VSEARCH_CORS_ORIGINS: "http://localhost:3000" },
    );
    expect(env.trustedProxies).toEqual(["192.168.0.1", "fd00::/8"]);
    expect(env.corsOrigins).toEqual(["http://localhost:3000"]);
    rmSync(join(dir, "config.json"));
  });

  test.each([
    [{ VSEARCH_TRUSTED_PROXIES: "10.0.0.0/33" }, /trusted_proxies/],
    [{ VSEARCH_TRUSTED_PROXIES: "proxy.example" }, /trusted_proxies/],
    [{ VSEARCH_CORS_ORIGINS: "*" }, /cors_origins/],
    [{ VSEARCH_CORS_ORIGINS: "https://a.example/path" }, /cors_origins/],
    [{ VSEARCH_RATE_LIMIT_MAX_CLIENTS: "10" }, /rate_limit_max_clients/],
  ])("%o is refused at start-up", (env, msg) => {
    expect(() => loadConfig({ dataDir: dir }, env)).toThrow(ConfigError);
    expect(() => loadConfig({ dataDir: dir }, env)).toThrow(msg);
  });
});
