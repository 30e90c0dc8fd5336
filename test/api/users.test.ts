/**
 * Issue 22, people: an admin invites, resets, re-roles and removes users over the API; a user
 * changes their own password; a one-time password allows nothing but choosing a new one; sessions
 * of a removed user or a changed password end at once; the last admin stays. And the first run in
 * the browser: the setup link's token creates the first account and its admin, once.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTenant, json, startTestApp, type Tenant, type TestApp } from "../helpers/app.ts";

let t: TestApp;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  t = await startTestApp({ VSEARCH_RATE_LIMIT_ADMIN: "1000", VSEARCH_RATE_LIMIT_AUTH: "1000" });
  [a, b] = await Promise.all([createTenant(t, "A"), createTenant(t, "B")]);
});
afterAll(() => t.close());

const signIn = async (email: string, password: string) =>
  t.request("POST", "/v1/auth/sessions", { json: { email, password } });
const tokenOf = async (email: string, password: string) => {
  const res = await signIn(email, password);
  expect(res.status).toBe(201);
  return (await json(res)).data as { token: string; must_change_password: boolean };
};

describe("users over the API (admins)", () => {
  test("invite: a one-time password that allows only choosing a new one, then everything", async () => {
    const res = await t.request("POST", "/v1/users", { token: a.adminToken, json: { email: "Ana@Example.com" } });
    expect(res.status).toBe(201);
    const { user, one_time_password } = (await json(res)).data;
    expect(user).toMatchObject({ email: "ana@example.com", role: "member", must_change_password: true });
    expect(one_time_password).toMatch(/^[0-9A-Za-z]{16}$/);

    const s = await tokenOf("ana@example.com", one_time_password);
    expect(s.must_change_password).toBe(true);
    const blocked = await t.request("GET", "/v1/collections", { token: s.token });
    expect(blocked.status).toBe(403);
    expect((await json(blocked)).detail.code).toBe("PASSWORD_CHANGE_REQUIRED");
    const me = await json(await t.request("GET", "/v1/auth/whoami", { token: s.token }));
    expect(me.data).toMatchObject({ email: "ana@example.com", member_id: user.id, must_change_password: true });

    const wrong = await t.request("PUT", "/v1/auth/password", {
      token: s.token,
      json: { current_password: "not it at all", new_password: "anas own password" },
    });
    expect(wrong.status).toBe(403);
    expect((await json(wrong)).detail.code).toBe("WRONG_PASSWORD");
    const changed = await t.request("PUT", "/v1/auth/password", {
      token: s.token,
      json: { current_password: one_time_password, new_password: "anas own password" },
    });
    expect(changed.status).toBe(200);
    // The same session goes on, now with full access; the one-time password is gone.
    expect((await t.request("GET", "/v1/collections", { token: s.token })).status).toBe(200);
    expect((await signIn("ana@example.com", one_time_password)).status).toBe(401);
    expect((await tokenOf("ana@example.com", "anas own password")).must_change_password).toBe(false);
  });

  test("a password reset ends the user's sessions at once and hands out a one-time password", async () => {
    await t.request("POST", "/v1/users", {
      token: a.adminToken,
      json: { email: "bo@example.com", password: "first one-time" },
    });
    const first = await tokenOf("bo@example.com", "first one-time");
    await t.request("PUT", "/v1/auth/password", {
      token: first.token,
      json: { current_password: "first one-time", new_password: "bos password" },
    });
    const bo = (await tokenOf("bo@example.com", "bos password")).token;
    expect((await t.request("GET", "/v1/collections", { token: bo })).status).toBe(200);
    const id = (await json(await t.request("GET", "/v1/users", { token: a.adminToken }))).data.find(
      (u: any) => u.email === "bo@example.com",
    ).id;
    const reset = await t.request("POST", `/v1/users/${id}/password`, { token: a.adminToken, json: {} });
    expect(reset.status).toBe(200);
    const { one_time_password } = (await json(reset)).data;
    expect((await t.request("GET", "/v1/collections", { token: bo })).status).toBe(401);
    expect((await signIn("bo@example.com", "bos password")).status).toBe(401);
    expect((await tokenOf("bo@example.com", one_time_password)).must_change_password).toBe(true);
  });

  test("changing one's own password ends one's other sessions, not this one", async () => {
    await t.request("POST", "/v1/users", {
      token: a.adminToken,
      json: { email: "cy@example.com", password: "cy one-time" },
    });
    const s1 = (await tokenOf("cy@example.com", "cy one-time")).token;
    await t.request("PUT", "/v1/auth/password", {
      token: s1,
      json: { current_password: "cy one-time", new_password: "cy password 1" },
    });
    const s2 = (await tokenOf("cy@example.com", "cy password 1")).token;
    const res = await t.request("PUT", "/v1/auth/password", {
      token: s1,
      json: { current_password: "cy password 1", new_password: "cy password 2" },
    });
    expect((await json(res)).data.sessions_ended).toBe(1);
    expect((await t.request("GET", "/v1/collections", { token: s1 })).status).toBe(200);
    expect((await t.request("GET", "/v1/collections", { token: s2 })).status).toBe(401);
    // An API key has no password to change.
    const key = await t.request("PUT", "/v1/auth/password", {
      token: a.key,
      json: { current_password: "x", new_password: "yyyyyyyy" },
    });
    expect(key.status).toBe(403);
  });

  test("removing a user ends their sessions at once; a role change applies to the next request", async () => {
    await t.request("POST", "/v1/users", {
      token: a.adminToken,
      json: { email: "di@example.com", password: "di one-time" },
    });
    const s = (await tokenOf("di@example.com", "di one-time")).token;
    await t.request("PUT", "/v1/auth/password", {
      token: s,
      json: { current_password: "di one-time", new_password: "di password" },
    });
    const id = (await json(await t.request("GET", "/v1/users", { token: a.adminToken }))).data.find(
      (u: any) => u.email === "di@example.com",
    ).id;
    expect((await t.request("GET", "/v1/users", { token: s })).status).toBe(403);
    const promoted = await t.request("PATCH", `/v1/users/${id}`, { token: a.adminToken, json: { role: "admin" } });
    expect((await json(promoted)).data.role).toBe("admin");
    expect((await t.request("GET", "/v1/users", { token: s })).status).toBe(200);
    expect((await t.request("DELETE", `/v1/users/${id}`, { token: a.adminToken })).status).toBe(204);
    expect((await t.request("GET", "/v1/collections", { token: s })).status).toBe(401);
    expect((await signIn("di@example.com", "di password")).status).toBe(401);
  });

  test("the last admin can be neither removed nor made a member", async () => {
    const solo = await createTenant(t, "Solo");
    const users = (await json(await t.request("GET", "/v1/users", { token: solo.adminToken }))).data;
    const admin = users.find((u: any) => u.role === "admin");
    const member = users.find((u: any) => u.role === "member");
    for (const [method, json_] of [
      ["DELETE", undefined],
      ["PATCH", { role: "member" }],
    ] as const) {
      const res = await t.request(method, `/v1/users/${admin.id}`, { token: solo.adminToken, json: json_ });
      expect(res.status).toBe(409);
      expect((await json(res)).detail).toMatchObject({ code: "LAST_ADMIN" });
    }
    // With a second admin, the first may step down.
    await t.request("PATCH", `/v1/users/${member.id}`, { token: solo.adminToken, json: { role: "admin" } });
    expect(
      (await t.request("PATCH", `/v1/users/${admin.id}`, { token: solo.adminToken, json: { role: "member" } })).status,
    ).toBe(200);
  });

  test("another account's user is a 404; API keys and members cannot manage users", async () => {
    const bUser = (await json(await t.request("GET", "/v1/users", { token: b.adminToken }))).data[0].id;
    for (const [method, path, body] of [
      ["PATCH", `/v1/users/${bUser}`, { role: "member" }],
      ["DELETE", `/v1/users/${bUser}`, undefined],
      ["POST", `/v1/users/${bUser}/password`, {}],
    ] as const) {
      const res = await t.request(method, path, { token: a.adminToken, json: body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await json(res)).detail.code).toBe("USER_NOT_FOUND");
    }
    expect((await t.request("GET", "/v1/users", { token: a.key })).status).toBe(403);
    expect((await t.request("GET", "/v1/users", { token: a.memberToken })).status).toBe(403);
    const dup = await t.request("POST", "/v1/users", { token: a.adminToken, json: { email: "ana@example.com" } });
    expect(dup.status).toBe(409);
  });
});

describe("first run in the browser", () => {
  let fresh: TestApp;
  beforeAll(async () => {
    fresh = await startTestApp();
  });
  afterAll(() => fresh.close());

  test("the setup link's token creates the first account and its admin once; then setup is gone", async () => {
    expect((await json(await fresh.request("GET", "/v1/setup"))).data).toEqual({ required: true });
    const token = (await fresh.app.services.setup.issueToken())!;
    const older = (await fresh.app.services.setup.issueToken())!; // a second start: both links stay valid until one is used
    expect(token).toMatch(/^[0-9A-Za-z]{40}$/);
    const body = {
      token: "x".repeat(40),
      account_name: "Studio",
      email: "boss@example.com",
      password: "boss password",
    };
    const bad = await fresh.request("POST", "/v1/setup", { json: body });
    expect(bad.status).toBe(403);
    expect(await fresh.app.services.accounts.listAccounts()).toEqual([]);

    // Two browsers with the two links at once: one account, the other told setup is done.
    const [r1, r2] = await Promise.all([
      fresh.request("POST", "/v1/setup", { json: { ...body, token } }),
      fresh.request("POST", "/v1/setup", { json: { ...body, token: older, email: "other@example.com" } }),
    ]);
    expect([r1.status, r2.status].sort()).toEqual([201, 404]);
    const won = (await json(r1.status === 201 ? r1 : r2)).data;
    const me = (await json(await fresh.request("GET", "/v1/auth/whoami", { token: won.token }))).data;
    expect(me).toMatchObject({ role: "admin", credential: "session", must_change_password: false });
    expect((await fresh.app.services.accounts.listAccounts()).map((x) => x.name)).toEqual(["Studio"]);
    expect((await fresh.request("GET", "/v1/collections", { token: won.token })).status).toBe(200);

    expect((await json(await fresh.request("GET", "/v1/setup"))).data).toEqual({ required: false });
    expect((await fresh.request("POST", "/v1/setup", { json: { ...body, token } })).status).toBe(404);
    expect(await fresh.app.services.setup.issueToken()).toBeNull();
  });
});
