import { expect } from "vitest";
import { type App, createApp } from "../../src/app.ts";
import { resolveRuntime } from "../../src/cli/runtime.ts";
import { type Config, loadConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/core/logger.ts";
import { EventBus } from "../../src/events/bus.ts";
import type { ModelCatalog } from "../../src/models/roles.ts";
import type { Resolver } from "../../src/net/address-rules.ts";
import type { MemoryIndexOptions } from "../../src/search/memory-backend.ts";
import type { IndexWarmOptions } from "../../src/search/index-warmer.ts";
import type { QueryEmbedder } from "../../src/search/embedder.ts";
import { backendEnv } from "../pg/backend.ts";
import { openStores, type Stores } from "./stores.ts";
import { makeTempDir, removeDir } from "./temp.ts";
import { until } from "./wait.ts";

export interface TestApp {
  app: App;
  dir: string;
  config: Config;
  /** Advances the clock every service sees (sessions, rate windows, signatures). */
  clock: { now: number };
  /**
   * Runs the database's clock ahead (ms) for the app and `t.stores`: leases, claims and webhook
   * due times follow the database's clock, not `clock` (store/sql.ts `dbNowMs`), so this is how a
   * test fast-forwards a lease to its expiry.
   */
  dbClock: { skewMs: number };
  /**
   * The stores over the app's database file, on a connection of their own (opened on first use,
   * closed by `close()`): how a test reads state or sets one up, never with SQL.
   */
  readonly stores: Stores;
  /** The app's domain event bus: a test that writes index rows as the pipeline does publishes its event here. */
  bus: EventBus;
  request(
    method: string,
    path: string,
    opts?: { token?: string; json?: unknown; body?: BodyInit; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  models?: ModelCatalog;
  resolve?: Resolver;
  /** Replaces the CLIP text/image encoder of search (hand-made vectors, no model). */
  queryEmbedder?: QueryEmbedder;
  /** The temp dir's name prefix (the dir is removed by `close()`). */
  prefix?: string;
  /** Opens this existing data dir instead of a fresh temp dir; `close()` then leaves it in place. */
  dataDir?: string;
  /** Vector index tuning for search (e.g. a low `trainAt` so a small account gets inverted lists). */
  vectorIndex?: MemoryIndexOptions;
  /** Search's nearest-neighbour backend (default: the in-memory index). */
  vectorBackend?: "memory" | "sqlite-vec";
  /** The index warm-up after `app.start()` (small pages, no slice budget: a load that takes many turns). */
  indexWarm?: IndexWarmOptions;
  /** This app's node id (default: the data dir's own); apps that play two nodes over one data dir set it. */
  nodeId?: string;
  /** false: an upload of bytes the collection holds is a new video (tests that queue one file many times). */
  uploadDuplicateCheck?: boolean;
  /** What the app runs (createApp's `role`: `all` by default, `serve`, `worker`). */
  role?: "all" | "serve" | "worker";
}

/**
 * The one test-app factory: a real app on a real SQLite file in a fresh temp dir, configured
 * by `env` (the same VSEARCH_* variables the binary reads).
 */
export async function startTestApp(env: Record<string, string> = {}, opts: TestAppOptions = {}): Promise<TestApp> {
  const dir = opts.dataDir ?? makeTempDir(opts.prefix ?? "vsearch-test-");
  // The pg project's apps run on a database of their own (test/pg/backend.ts).
  const config = loadConfig({ dataDir: dir, logLevel: "silent" }, { ...(await backendEnv(dir)), ...env });
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
  const dbClock = { skewMs: 0 };
  const wired: { bus?: EventBus } = {};
  const app = await createApp(config, {
    runtime: await resolveRuntime(config),
    logger: createLogger("silent"),
    now: () => clock.now,
    dbClockSkewMs: () => dbClock.skewMs,
    nodeId: opts.nodeId,
    role: opts.role,
    uploadDuplicateCheck: opts.uploadDuplicateCheck,
    onEventBus: (b) => (wired.bus = b),
    models: opts.models,
    resolve: opts.resolve,
    queryEmbedder: opts.queryEmbedder,
    vectorIndex: opts.vectorIndex,
    vectorBackend: opts.vectorBackend,
    indexWarm: opts.indexWarm,
  });
  let stores: Stores | null = null;
  return {
    app,
    dir,
    config,
    clock,
    dbClock,
    bus: wired.bus!,
    get stores() {
      return (stores ??= openStores(dir, {
        vecExtension: app.runtime.vecExtension,
        dbClockSkewMs: () => dbClock.skewMs,
      }));
    },
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
      stores?.close();
      await app.close();
      if (!opts.dataDir) removeDir(dir);
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

/**
 * An account with an `all` and a `read_only` API key and no users: no slow password hashing, so
 * it is synchronous. The session tokens are "" (use `createTenant` for those).
 */
export async function createKeyTenant(t: Pick<TestApp, "app">, name = "Acme", plan = "enterprise"): Promise<Tenant> {
  const s = t.app.services;
  const account = await s.accounts.createAccount({ name, plan });
  return {
    accountId: account.id,
    adminToken: "",
    memberToken: "",
    key: (await s.apiKeys.create(account.id, { name: "all", permissions: "all" })).key,
    readOnlyKey: (await s.apiKeys.create(account.id, { name: "ro", permissions: "read_only" })).key,
  };
}

/** The tenant helper: an account with an admin, a member, an `all` key and a `read_only` key. */
export async function createTenant(t: Pick<TestApp, "app">, name = "Acme", plan = "enterprise"): Promise<Tenant> {
  const s = t.app.services;
  const account = await s.accounts.createAccount({ name, plan });
  const email = `admin-${account.id}@example.com`.toLowerCase();
  await s.accounts.createUser({ account_id: account.id, email, password: "correct horse", role: "admin" });
  await s.accounts.createUser({
    account_id: account.id,
    email: `m-${email}`,
    password: "correct horse",
    role: "member",
  });
  const adminToken = (await s.auth.signIn({ email, password: "correct horse" })).token;
  const memberToken = (await s.auth.signIn({ email: `m-${email}`, password: "correct horse" })).token;
  const key = plan === "free" ? "" : (await s.apiKeys.create(account.id, { name: "all", permissions: "all" })).key;
  const readOnlyKey =
    plan === "free" ? "" : (await s.apiKeys.create(account.id, { name: "ro", permissions: "read_only" })).key;
  return { accountId: account.id, adminToken, memberToken, key, readOnlyKey };
}

/**
 * The common setup of a two-account file: an app (started when `start`, so jobs and webhooks
 * run) with tenants A and B. Use in `beforeAll`: `({ t, a, b } = await startWithTenants(ENV));`.
 */
export async function startWithTenants(
  env: Record<string, string> = {},
  opts: TestAppOptions & { start?: boolean } = {},
): Promise<{ t: TestApp; a: Tenant; b: Tenant }> {
  const t = await startTestApp(env, opts);
  if (opts.start) await t.app.start();
  const [a, b] = await Promise.all([createTenant(t, "A"), createTenant(t, "B")]);
  return { t, a, b };
}

export async function json<T = any>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

/**
 * POSTs the file at `path` as multipart `file` + `collection_id` with the tenant's `all` key (or
 * `opts.token`), named `opts.filename` (default: the file's own name).
 */
export function upload(
  t: TestApp,
  tenant: Tenant,
  collectionId: string,
  path: string,
  opts: { token?: string; filename?: string } = {},
): Promise<Response> {
  const fd = new FormData();
  fd.append("collection_id", collectionId);
  fd.append("file", Bun.file(path), opts.filename ?? path.split("/").pop());
  return t.request("POST", "/v1/upload", { token: opts.token ?? tenant.key, body: fd });
}

export interface Uploaded {
  video_id: string;
  job_id: string;
  status: "queued";
  /** The job as GET /v1/jobs/{id} shows it once it ended (or at the deadline). */
  job: any;
}

/**
 * Uploads through HTTP (asserting 202), then waits for the job to end (done or failed). It polls
 * the jobs service, not GET /v1/jobs, so waiting does not spend the jobs rate limit; `onPoll`
 * sees every poll.
 */
export async function uploadAndWait(
  t: TestApp,
  tenant: Tenant,
  collectionId: string,
  path: string,
  opts: { timeoutMs?: number; filename?: string; onPoll?: (job: any) => void } = {},
): Promise<Uploaded> {
  const res = await upload(t, tenant, collectionId, path, { filename: opts.filename });
  expect(res.status).toBe(202);
  const { data } = await json(res);
  let job: any;
  await until(
    async () => {
      job = await t.app.services.jobs.get(tenant.accountId, data.job_id);
      opts.onPoll?.(job);
      return job.status === "done" || job.status === "failed";
    },
    opts.timeoutMs ?? 90_000,
    100,
  );
  return { ...data, job };
}

/** One sample of GET /metrics (Prometheus text), e.g. `metric(t, "vsearch_jobs", { status: "done" })`; null when absent. */
export async function metric(t: TestApp, name: string, labels: Record<string, string> = {}): Promise<number | null> {
  const res = await t.request("GET", "/metrics");
  expect(res.status).toBe(200);
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    // `instance` (the node id) is on every sample when the store is PostgreSQL: not what a test asks about.
    const have = (m[2] ? m[2].split(",") : []).filter((l) => !l.startsWith("instance="));
    if (want.every((w) => have.includes(w)) && have.length === want.length) return Number(m[3]);
  }
  return null;
}
