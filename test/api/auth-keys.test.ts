import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startWithTenants, type Tenant, type TestApp } from "../helpers/app.ts";
import { databaseFilesContain } from "../helpers/stores.ts";

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

let t: TestApp;
let a: Tenant;
let b: Tenant;
beforeAll(async () => void ({ t, a, b } = await startWithTenants()));
afterAll(() => t.close());

describe("sessions", () => {
  test("sign in returns a token and expiry; the token works; sign out ends it", async () => {
    const email = (await t.stores.accounts.listUsers(a.accountId)).find((u) => u.role === "admin")!.email;
    const res = await t.request("POST", "/v1/auth/sessions", { json: { email, password: "correct horse" } });
    expect(res.status).toBe(201);
    const { data } = await json(res);
    expect(data.token).toMatch(/^vss_[0-9A-Za-z]{40}$/);
    expect(Date.parse(data.expires_at)).toBeGreaterThan(t.clock.now);
    expect((await t.request("GET", "/v1/api_keys", { token: data.token })).status).toBe(200);
    // only the hash is stored: the session is found by it, and the token is nowhere in the database files
    expect((await t.stores.sessions.findByHash(sha256(data.token)))?.token_hash).toBe(sha256(data.token));
    expect(databaseFilesContain(t.dir, sha256(data.token))).toBe(true); // the scan sees the fresh row
    expect(databaseFilesContain(t.dir, data.token)).toBe(false);
    expect((await t.request("DELETE", "/v1/auth/sessions/current", { token: data.token })).status).toBe(204);
    const after = await t.request("GET", "/v1/api_keys", { token: data.token });
    expect(after.status).toBe(401);
    expect((await json(after)).detail.code).toBe("UNAUTHORIZED");
  });

  test("wrong password and unknown e-mail are the same 401", async () => {
    const r1 = await t.request("POST", "/v1/auth/sessions", { json: { email: "nobody@example.com", password: "x" } });
    expect(r1.status).toBe(401);
    expect((await json(r1)).detail).toEqual({ code: "UNAUTHORIZED", message: "Wrong e-mail or password" });
  });

  test("an expired session is 401 SESSION_EXPIRED", async () => {
    const saved = t.clock.now;
    t.clock.now += t.config.sessionTtlSecs * 1000 + 1;
    const res = await t.request("GET", "/v1/collections", { token: a.memberToken });
    t.clock.now = saved;
    expect(res.status).toBe(401);
    expect((await json(res)).detail.code).toBe("SESSION_EXPIRED");
  });

  test("missing or malformed Authorization is 401 UNAUTHORIZED; a bogus key is INVALID_API_KEY", async () => {
    const none = await t.request("GET", "/v1/collections");
    expect(none.status).toBe(401);
    expect((await json(none)).detail.code).toBe("UNAUTHORIZED");
    expect(none.headers.get("www-authenticate")).toBe("Bearer");
    const basic = await t.request("GET", "/v1/collections", { headers: { authorization: "Basic abc" } });
    expect((await json(basic)).detail.code).toBe("UNAUTHORIZED");
    const bogus = await t.request("GET", "/v1/collections", { token: "vsk_" + "a".repeat(40) });
    expect(bogus.status).toBe(401);
    expect((await json(bogus)).detail.code).toBe("INVALID_API_KEY");
  });

  test("sign-in validation errors are 422", async () => {
    const res = await t.request("POST", "/v1/auth/sessions", { json: { email: 5 } });
    expect(res.status).toBe(422);
    const locs = (await json(res)).detail.map((d: any) => d.loc.join("."));
    expect(locs).toEqual(expect.arrayContaining(["body.email", "body.password"]));
  });
});

describe("API keys (seed + SPEC §3)", () => {
  test("create: vsk_ + 40 base62, prefix of 12, secret only once, SHA-256 stored", async () => {
    const res = await t.request("POST", "/v1/api_keys", {
      token: a.adminToken,
      json: { name: "ci", permissions: "read_only" },
    });
    expect(res.status).toBe(201);
    const { data } = await json(res);
    expect(data.key).toMatch(/^vsk_[0-9A-Za-z]{40}$/);
    expect(data.prefix).toBe(data.key.slice(0, 12));
    expect(data).toMatchObject({
      user_id: a.accountId,
      name: "ci",
      permissions: "read_only",
      last_used_at: null,
      revoked_at: null,
    });
    const list = (await json(await t.request("GET", "/v1/api_keys", { token: a.adminToken }))).data;
    const listed = list.find((k: any) => k.id === data.id);
    expect(listed).toBeDefined();
    expect(listed.key).toBeUndefined();
    const row = await t.stores.apiKeys.findByHash(sha256(data.key));
    expect(row?.id).toBe(data.id);
    expect(row?.key_hash).toBe(sha256(data.key));
    expect(databaseFilesContain(t.dir, row!.key_hash)).toBe(true); // the scan sees the fresh row
    expect(databaseFilesContain(t.dir, data.key)).toBe(false);
  });

  test("only admin sessions manage keys: API key or member session → 403", async () => {
    for (const token of [a.key, a.readOnlyKey, a.memberToken]) {
      for (const [method, path] of [
        ["GET", "/v1/api_keys"],
        ["POST", "/v1/api_keys"],
        ["DELETE", "/v1/api_keys/key_x"],
      ] as const) {
        const res = await t.request(method, path, { token, json: method === "POST" ? { name: "x" } : undefined });
        expect(res.status).toBe(403);
        expect((await json(res)).detail.code).toBe("FORBIDDEN");
      }
    }
  });

  test("revoke: immediate, permanent, 409 on repeat, stays listed; other account's key is 404", async () => {
    const created = (
      await json(await t.request("POST", "/v1/api_keys", { token: a.adminToken, json: { name: "temp" } }))
    ).data;
    expect((await t.request("GET", "/v1/collections", { token: created.key })).status).toBe(200);
    expect((await t.request("DELETE", `/v1/api_keys/${created.id}`, { token: b.adminToken })).status).toBe(404);
    const del = await t.request("DELETE", `/v1/api_keys/${created.id}`, { token: a.adminToken });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    const after = await t.request("GET", "/v1/collections", { token: created.key });
    expect(after.status).toBe(401);
    expect((await json(after)).detail.code).toBe("INVALID_API_KEY");
    const again = await t.request("DELETE", `/v1/api_keys/${created.id}`, { token: a.adminToken });
    expect(again.status).toBe(409);
    expect((await json(again)).detail.code).toBe("API_KEY_ALREADY_REVOKED");
    const listed = (await json(await t.request("GET", "/v1/api_keys", { token: a.adminToken }))).data.find(
      (k: any) => k.id === created.id,
    );
    expect(listed.revoked_at).not.toBeNull();
    const missing = await t.request("DELETE", "/v1/api_keys/key_doesnotexist", { token: a.adminToken });
    expect((await json(missing)).detail.code).toBe("API_KEY_NOT_FOUND");
  });

  test("last_used_at is set on use", async () => {
    const created = (
      await json(await t.request("POST", "/v1/api_keys", { token: a.adminToken, json: { name: "used" } }))
    ).data;
    await t.request("GET", "/v1/collections", { token: created.key });
    const listed = (await json(await t.request("GET", "/v1/api_keys", { token: a.adminToken }))).data.find(
      (k: any) => k.id === created.id,
    );
    expect(listed.last_used_at).not.toBeNull();
  });

  test("plan limit: free allows one active key, then 402 API_KEY_LIMIT_REACHED; revoking frees the slot", async () => {
    const free = await createTenant(t, "Freebie", "free");
    const first = await t.request("POST", "/v1/api_keys", { token: free.adminToken, json: { name: "one" } });
    expect(first.status).toBe(201);
    const second = await t.request("POST", "/v1/api_keys", { token: free.adminToken, json: { name: "two" } });
    expect(second.status).toBe(402);
    expect((await json(second)).detail.code).toBe("API_KEY_LIMIT_REACHED");
    await t.request("DELETE", `/v1/api_keys/${(await json(first)).data.id}`, { token: free.adminToken });
    expect((await t.request("POST", "/v1/api_keys", { token: free.adminToken, json: { name: "three" } })).status).toBe(
      201,
    );
  });

  test("key input validation: bad permissions, unknown fields, empty and long names", async () => {
    t.clock.now += 61_000; // a fresh rate-limit window: the tests above used this session's budget
    for (const body of [
      { name: "x", permissions: "root" },
      { name: "x", extra: 1 },
      { name: "   " },
      { name: "x".repeat(256) },
      { name: 5 },
    ]) {
      const res = await t.request("POST", "/v1/api_keys", { token: a.adminToken, json: body });
      expect(res.status).toBe(422);
    }
  });
});
