import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type App, createApp } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { type Config, loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import type { ModelCatalog } from "../../src/models/roles.ts";
import type { Resolver } from "../../src/net/address-rules.ts";

export interface TestApp {
  app: App;
  dir: string;
  config: Config;
  /** Advances the clock every service sees (sessions, rate windows, signatures). */
  clock: { now: number };
  request(method: string, path: string, opts?: { token?: string; json?: unknown; body?: BodyInit; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/** A real app on a real SQLite file in a fresh temp dir. */
export async function startTestApp(env: Record<string, string> = {}, opts: { models?: ModelCatalog; resolve?: Resolver } = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-test-"));
  const config = loadConfig({ dataDir: dir, logLevel: "silent" }, env);
  // Runs with real time (timers and retries move on) but can be pushed forward: `clock.now += ms`.
  let offset = 0;
  const clock = {
    get now() {
      return Date.now() + offset;
    },
    set now(v: number) {
      offset = v - Date.now();
    },
  };
  const app = await createApp(config, { runtime: await resolveRuntime(config), logger: createLogger("silent"), now: () => clock.now, models: opts.models, resolve: opts.resolve });
  return {
    app,
    dir,
    config,
    clock,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body = opts.body;
      if (opts.json !== undefined) {
        body = JSON.stringify(opts.json);
        headers["content-type"] ??= "application/json";
      }
      return app.fetch(new Request(`http://localhost${path}`, { method, headers, body }));
    },
    async close() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Tenant {
  accountId: string;
  adminToken: string;
  memberToken: string;
  key: string;
  readOnlyKey: string;
}

/** An account with an admin, a member, an `all` key and a `read_only` key. */
export async function createTenant(t: TestApp, name = "Acme", plan = "enterprise"): Promise<Tenant> {
  const s = t.app.services;
  const account = s.accounts.createAccount({ name, plan });
  const email = `admin-${account.id}@example.com`.toLowerCase();
  await s.accounts.createUser({ account_id: account.id, email, password: "correct horse", role: "admin" });
  await s.accounts.createUser({ account_id: account.id, email: `m-${email}`, password: "correct horse", role: "member" });
  const adminToken = (await s.auth.signIn({ email, password: "correct horse" })).token;
  const memberToken = (await s.auth.signIn({ email: `m-${email}`, password: "correct horse" })).token;
  const key = plan === "free" ? "" : s.apiKeys.create(account.id, { name: "all", permissions: "all" }).key;
  const readOnlyKey = plan === "free" ? "" : s.apiKeys.create(account.id, { name: "ro", permissions: "read_only" }).key;
  return { accountId: account.id, adminToken, memberToken, key, readOnlyKey };
}

export async function json<T = any>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
