/**
 * A database of its own for each test file of the `pg` project: copied from the migrated template
 * (`CREATE DATABASE … TEMPLATE vsearch_tpl STRATEGY FILE_COPY`: a file copy, faster than replaying
 * the template through the WAL) before the file's tests, dropped after them. test/pg/per-file.ts
 * runs `setUpTestDatabase` as the project's setup file; tests read it with `pgTest()`.
 */
import { existsSync, readFileSync } from "node:fs";
import postgres from "postgres";
import { afterAll, inject } from "vitest";

export const TEMPLATE_DB = "vsearch_tpl";

/** What the global setup hands every test file (vitest `provide`). */
export interface PgProvided {
  available: boolean;
  /** Why the project is skipped, when it is. */
  reason: string;
  /** Written once the cluster and the template are ready (or failed). */
  readyFile: string;
  required: boolean;
}

declare module "vitest" {
  export interface ProvidedContext {
    pg: PgProvided;
  }
}

export type PgReady =
  | { adminUrl: string; port: number; timings: { initdbMs: number; startMs: number; templateMs: number } }
  | { error: string };

export interface PgTest {
  /** This file's database, migrated (a copy of the template). */
  readonly name: string;
  readonly url: string;
  /** Superuser connection to the cluster's `postgres` database (one connection). */
  readonly admin: postgres.Sql;
  readonly adminUrl: string;
  /** URL of another database of the cluster, as `user` (default the superuser). */
  urlFor(database: string, user?: string): string;
  /** How long copying the template took for this file. */
  readonly copyMs: number;
  /** Another migrated database (a copy of the template), dropped with this file's: its URL. */
  newDatabase(): Promise<string>;
}

const KEY = Symbol.for("vsearch.pgTest");
type Holder = { [KEY]?: PgTest };

/** Whether this run has a PostgreSQL to test against (false: the pg project's tests skip). */
export const pgAvailable = (): boolean => inject("pg")?.available === true;

/** This file's database; throws outside the pg project or when it is skipped. */
export function pgTest(): PgTest {
  const t = (globalThis as Holder)[KEY];
  if (!t) throw new Error("no test database: this file runs in the pg project only, and only when PostgreSQL is there");
  return t;
}

async function waitForReady(file: string): Promise<Extract<PgReady, { adminUrl: string }>> {
  const deadline = Date.now() + 240_000;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`the test cluster was not ready after 240 s (${file})`);
    await Bun.sleep(50);
  }
  const ready = JSON.parse(readFileSync(file, "utf8")) as PgReady;
  if ("error" in ready) throw new Error(ready.error);
  return ready;
}

export async function setUpTestDatabase(): Promise<void> {
  const pg = inject("pg");
  if (!pg?.available) return;
  const ready = await waitForReady(pg.readyFile);
  const base = new URL(ready.adminUrl);
  const urlFor = (database: string, user = base.username) =>
    `postgres://${user}@${base.hostname}:${base.port}/${database}`;
  const name = `t_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
  const admin = postgres(ready.adminUrl, { max: 1, onnotice: () => {} });
  const t0 = performance.now();
  await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB} STRATEGY FILE_COPY`);
  const copyMs = performance.now() - t0;
  const more: string[] = [];
  let copies = 0;
  const newDatabase = async () => {
    const db = `${name}_${++copies}`;
    await admin.unsafe(`CREATE DATABASE ${db} TEMPLATE ${TEMPLATE_DB} STRATEGY FILE_COPY`);
    more.push(db);
    return urlFor(db);
  };
  (globalThis as Holder)[KEY] = {
    name,
    url: urlFor(name),
    admin,
    adminUrl: ready.adminUrl,
    urlFor,
    copyMs,
    newDatabase,
  };
  afterAll(async () => {
    delete (globalThis as Holder)[KEY];
    try {
      for (const db of [name, ...more.splice(0)]) await admin.unsafe(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    } finally {
      await admin.end({ timeout: 5 });
    }
  });
}
