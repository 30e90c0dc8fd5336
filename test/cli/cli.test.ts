import { describe, expect, test } from "vitest";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { tempDirs } from "../helpers/temp.ts";

const tempDir = tempDirs("vsearch-cli-").make;

describe("CLI as a subprocess", () => {
  test("accounts, users and keys: create, list, revoke with --json", async () => {
    const d = tempDir();
    const acct = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Acme", "--plan", "payg"]);
    expect(acct).toMatchObject({ id: expect.stringMatching(/^usr_/), name: "Acme", plan: "payg" });
    const user = await runCliJson([
      "--data-dir",
      d,
      "users",
      "create",
      "--account",
      acct.id,
      "--email",
      "Ops@Example.com",
      "--password",
      "hunter2hunter2",
      "--admin",
    ]);
    expect(user).toMatchObject({ email: "ops@example.com", role: "admin", account_id: acct.id });
    expect(user.password_hash).toBeUndefined();
    const key = await runCliJson([
      "--data-dir",
      d,
      "keys",
      "create",
      "--account",
      acct.id,
      "--name",
      "ci",
      "--permissions",
      "read_only",
    ]);
    expect(key.key).toMatch(/^vsk_[0-9A-Za-z]{40}$/);
    const list = await runCliJson(["--data-dir", d, "keys", "list", "--account", acct.id]);
    expect(list).toHaveLength(1);
    expect(list[0].key).toBeUndefined();
    const revoked = await runCliJson(["--data-dir", d, "keys", "revoke", key.id]);
    expect(revoked.revoked_at).not.toBeNull();
    const again = await runCli(["--data-dir", d, "keys", "revoke", key.id]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split("\n")).toHaveLength(1);
    expect(again.stderr).toContain("API_KEY_ALREADY_REVOKED");
    const accounts = await runCliJson(["--data-dir", d, "accounts", "list"]);
    expect(accounts.map((a: any) => a.id)).toEqual([acct.id]);
  });

  test("errors: one line on stderr, exit 1; usage errors exit 2", async () => {
    const d = tempDir();
    const bad = await runCli(["--data-dir", d, "accounts", "create", "--name", "   "]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: name: must not be empty/);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const unknownAccount = await runCli(["--data-dir", d, "keys", "create", "--account", "usr_nope", "--name", "x"]);
    expect(unknownAccount.code).toBe(1);
    const usage = await runCli(["--data-dir", d, "keys", "create"]);
    expect(usage.code).toBe(2);
    const unknown = await runCli(["--data-dir", d, "frobnicate"]);
    expect(unknown.code).toBe(2);
  });

  test("serve answers; a second serve on the same data dir refuses; CLI works beside it; restart after kill -9", async () => {
    const d = tempDir();
    const server = await startServer(d);
    try {
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      const second = await runCli(["--data-dir", d, "serve", "--port", "0"]);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain("another vsearch serve");
      expect(second.stderr).toContain(d);
      // the CLI writes beside the running server (WAL + busy_timeout)
      const acct = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Beside"]);
      const key = await runCliJson(["--data-dir", d, "keys", "create", "--account", acct.id, "--name", "k"]);
      const res = await fetch(`${server.url}/v1/collections`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "made over HTTP" }),
      });
      expect(res.status).toBe(201);
    } finally {
      await server.stop("SIGKILL");
    }
    // a crash leaves a stale lock behind; the next serve takes it over
    const again = await startServer(d);
    try {
      expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});

describe("credits and account deletion from the CLI", () => {
  test("credits grant/show; accounts delete purges the account", async () => {
    const d = tempDir();
    const acct = await runCliJson(["--data-dir", d, "accounts", "create", "--name", "Meter"]);
    const shown = await runCliJson(["--data-dir", d, "credits", "show", "--account", acct.id]);
    expect(shown).toMatchObject({ balance: null, metered: false });
    expect(
      await runCliJson(["--data-dir", d, "credits", "grant", "--account", acct.id, "--amount", "50"]),
    ).toMatchObject({ balance: 50 });
    const bad = await runCli(["--data-dir", d, "credits", "grant", "--account", acct.id, "--amount", "-3"]);
    expect(bad.code).toBe(1);
    const deleted = await runCliJson(["--data-dir", d, "accounts", "delete", acct.id]);
    expect(deleted).toMatchObject({ user_id: acct.id, videos_deleted: 0, deliveries: [] });
    expect(await runCliJson(["--data-dir", d, "accounts", "list"])).toEqual([]);
    expect((await runCli(["--data-dir", d, "accounts", "delete", acct.id])).code).toBe(1);
  });
});
