/**
 * Which store backend the tests of this run use: the embedded SQLite file (the `sqlite` vitest
 * project) or PostgreSQL (the `pg` project sets VSEARCH_TEST_BACKEND=postgres). On PostgreSQL,
 * every data dir a test makes gets a database of its own — a copy of the migrated template — the
 * first time an app, a CLI process or the test's stores open it; the same data dir always maps to
 * the same database (an app restarted on its data dir finds its rows), and the databases are
 * dropped after the test file (test/pg/database.ts).
 */
import { resolve } from "node:path";
import { pgTest } from "./database.ts";

export type TestBackend = "sqlite" | "postgres";

export const testBackend = (): TestBackend => (process.env.VSEARCH_TEST_BACKEND === "postgres" ? "postgres" : "sqlite");

const urls = new Map<string, string>();

/**
 * The database URL the app over `dataDir` uses in this run: undefined on SQLite; on PostgreSQL
 * the data dir's database, made on first use. A process the test spawned (a CLI, a `serve`) gets it
 * as VSEARCH_DATABASE_URL.
 */
export async function databaseUrlFor(dataDir: string): Promise<string | undefined> {
  if (testBackend() !== "postgres") return undefined;
  const key = resolve(dataDir);
  let url = urls.get(key) ?? process.env.VSEARCH_DATABASE_URL;
  if (!url) {
    url = await pgTest().newDatabase();
    urls.set(key, url);
  }
  return url;
}

/** The database of `dataDir` if one was made (synchronous: for stores opened after the app). */
export function knownDatabaseUrl(dataDir: string): string | undefined {
  if (testBackend() !== "postgres") return undefined;
  return urls.get(resolve(dataDir)) ?? process.env.VSEARCH_DATABASE_URL;
}

/** The environment a spawned vsearch process over `dataDir` needs for this run's backend. */
export async function backendEnv(dataDir: string | undefined): Promise<Record<string, string>> {
  if (!dataDir) return {};
  const url = await databaseUrlFor(dataDir);
  return url ? { VSEARCH_DATABASE_URL: url } : {};
}
