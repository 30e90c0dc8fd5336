/**
 * Issue 22 from the operator's side: `users passwd|role|remove`, account names wherever an id was
 * asked for (and the only account by default), and `serve`'s one-time setup link on a fresh data
 * dir — all through the real CLI as a subprocess.
 */
import { describe, expect, test } from "vitest";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { tempDirs } from "../helpers/temp.ts";

const tempDir = tempDirs("vsearch-people-").make;

describe("accounts by name, and the only account by default", () => {
  test("one account needs no --account; several need a name or an id; an ambiguous name says which ids", async () => {
    const d = tempDir();
    const none = await runCli(["--data-dir", d, "keys", "list"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no account yet");
    const acme = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Acme"]);
    const user = await runCliJson([
      "--data-dir",
      d,
      "users",
      "create",
      "--email",
      "ops@example.com",
      "--password",
      "ops password",
      "--admin",
    ]);
    expect(user.account_id).toBe(acme.id);
    const key = await runCliJson(["--data-dir", d, "keys", "create", "--name", "ci"]);
    expect(key.user_id).toBe(acme.id);

    const beta = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Beta"]);
    const which = await runCli(["--data-dir", d, "keys", "list"]);
    expect(which.code).toBe(1);
    expect(which.stderr).toMatch(/2 accounts; name one with --account \("Acme", "Beta"\)/);
    expect((await runCliJson(["--data-dir", d, "keys", "list", "--account", "Acme"])).map((k: any) => k.id)).toEqual([
      key.id,
    ]);
    expect(await runCliJson(["--data-dir", d, "keys", "list", "--account", beta.id])).toEqual([]);
    await runCliJson(["--data-dir", d, "credits", "grant", "--account", "Beta", "--amount", "5"]);
    expect((await runCliJson(["--data-dir", d, "credits", "show", "--account", "Beta"])).balance).toBe(5);

    await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Acme"]);
    const twice = await runCli(["--data-dir", d, "keys", "list", "--account", "Acme"]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain(acme.id);
    expect(twice.stderr).toContain('2 accounts are named "Acme"');
    const unknown = await runCli(["--data-dir", d, "jobs", "--account", "Nobody"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No account has the id or name "Nobody"');
  }, 300_000);
});

describe("users passwd | role | remove", () => {
  test("a one-time password to hand over, a permanent one, roles, and the last admin kept", async () => {
    const d = tempDir();
    await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Acme"]);
    await runCliJson([
      "--data-dir",
      d,
      "users",
      "create",
      "--email",
      "a@example.com",
      "--password",
      "aaaa aaaa",
      "--admin",
    ]);
    const m = await runCliJson([
      "--data-dir",
      d,
      "users",
      "create",
      "--email",
      "m@example.com",
      "--password",
      "mmmm mmmm",
    ]);

    const human = await runCli(["--data-dir", d, "users", "passwd", "m@example.com"]);
    expect(human.code).toBe(0);
    const otp = /One-time password for m@example\.com: ([0-9A-Za-z]{16})/.exec(human.stdout)?.[1];
    expect(otp).toBeDefined();
    let list = await runCliJson(["--data-dir", d, "users", "list"]);
    expect(list.find((u: any) => u.id === m.id).must_change_password).toBe(true);
    const permanent = await runCliJson([
      "--data-dir",
      d,
      "users",
      "passwd",
      m.id,
      "--password",
      "my own password",
      "--permanent",
    ]);
    expect(permanent).toMatchObject({ one_time_password: null, user: { must_change_password: false } });

    expect(await runCliJson(["--data-dir", d, "users", "role", "m@example.com", "admin"])).toMatchObject({
      role: "admin",
    });
    const bad = await runCli(["--data-dir", d, "users", "role", "m@example.com", "owner"]);
    expect(bad.code).toBe(1);
    expect((await runCliJson(["--data-dir", d, "users", "remove", "a@example.com"])).email).toBe("a@example.com");
    const last = await runCli(["--data-dir", d, "users", "remove", "m@example.com"]);
    expect(last.code).toBe(1);
    expect(last.stderr).toContain("LAST_ADMIN");
    const demote = await runCli(["--data-dir", d, "users", "role", "m@example.com", "member"]);
    expect(demote.stderr).toContain("LAST_ADMIN");
    list = await runCliJson(["--data-dir", d, "users", "list"]);
    expect(list.map((u: any) => [u.email, u.role])).toEqual([["m@example.com", "admin"]]);
    const nobody = await runCli(["--data-dir", d, "users", "remove", "x@example.com"]);
    expect(nobody.stderr).toContain("USER_NOT_FOUND");
  }, 300_000);
});

describe("first run: serve prints a one-time setup link", () => {
  test("on a data dir without accounts; the link creates the first account; the next start prints none", async () => {
    const d = tempDir();
    const server = await startServer(d);
    try {
      expect(server.setupUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#\/setup\?token=[0-9A-Za-z]{40}$/);
      const token = server.setupUrl!.split("token=")[1];
      const res = await fetch(`${server.url}/v1/setup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token, account_name: "Studio", email: "boss@example.com", password: "boss password" }),
      });
      expect(res.status).toBe(201);
      const session = ((await res.json()) as any).data.token;
      const me = await fetch(`${server.url}/v1/auth/whoami`, { headers: { authorization: `Bearer ${session}` } });
      expect(((await me.json()) as any).data.role).toBe("admin");
    } finally {
      await server.stop();
    }
    const again = await startServer(d);
    try {
      expect(again.setupUrl).toBeNull();
    } finally {
      await again.stop();
    }
  }, 300_000);
});
