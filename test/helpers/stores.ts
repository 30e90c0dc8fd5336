/**
 * The stores over a data dir's SQLite file, on a connection of their own (WAL: it sees what the
 * app committed, and the app sees what it writes). Tests read state and set up states through
 * store methods, never SQL: this is the one file under test/ that opens a database, and it runs
 * no SQL itself (test/architecture/test-rules.test.ts checks both).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { afterAll } from "vitest";
import { join } from "node:path";
import { AccountStore } from "../../src/accounts/store.ts";
import { ApiKeyStore } from "../../src/api-keys/store.ts";
import { SessionStore } from "../../src/auth/store.ts";
import { CollectionStore } from "../../src/collections/store.ts";
import { CreditStore } from "../../src/credits/store.ts";
import { EventStore } from "../../src/events/store.ts";
import { IndexStore } from "../../src/indexing/store.ts";
import { JobStore } from "../../src/jobs/store.ts";
import { TaskStore } from "../../src/jobs/task-store.ts";
import { LeaseQueue, type LeaseQueueOptions } from "../../src/jobs/lease-queue.ts";
import { PlaybackStore } from "../../src/playback/store.ts";
import { createSearchDomain, type SearchDomain, type SearchDomainOptions } from "../../src/search/domain.ts";
import { SearchStore } from "../../src/search/store.ts";
import postgres from "postgres";
import { openStore } from "../../src/store/database.ts";
import type { Executor } from "../../src/store/executor.ts";
import { type PgConn, PgExecutor } from "../../src/store/pg/executor.ts";
import { poolOptions } from "../../src/store/pg/open.ts";
import { pgUnitOfWork } from "../../src/store/pg/unit-of-work.ts";
import { TxScopes } from "../../src/store/tx-scope.ts";
import type { UnitOfWork } from "../../src/store/unit-of-work.ts";
import { knownDatabaseUrl, testBackend } from "../pg/backend.ts";
import { findPostgres } from "../pg/cluster.ts";
import type { SqliteStore } from "../../src/store/sqlite/database.ts";
import { OcrSearchStore } from "../../src/search/ocr-store.ts";
import { FeedbackStore } from "../../src/search/feedback-store.ts";
import { SystemStore } from "../../src/system/store.ts";
import { NodeStore } from "../../src/nodes/store.ts";
import { SecretFingerprintStore } from "../../src/signing/secret-fingerprint.ts";
import { VideoStore } from "../../src/videos/store.ts";
import { WebhookStore } from "../../src/webhooks/store.ts";
import { tempDirs } from "./temp.ts";

export interface Stores {
  accounts: AccountStore;
  apiKeys: ApiKeyStore;
  sessions: SessionStore;
  collections: CollectionStore;
  credits: CreditStore;
  events: EventStore;
  /** Frames, shots and transcripts as the pipeline writes them (vec0 tables when `vecExtension` was given). */
  index: IndexStore;
  jobs: JobStore;
  /** The task queue's rows (ingest, OCR, rendition tasks waiting or running), and its claim for tests that play a worker. */
  tasks: TaskStore;
  playback: PlaybackStore;
  search: SearchStore;
  system: SystemStore;
  videos: VideoStore;
  webhooks: WebhookStore;
  /** The node registry's rows (a node of another version, written as that node would). */
  nodes: NodeStore;
  /** The cluster secret's fingerprint (cluster_meta). */
  secretFingerprint: SecretFingerprintStore;
  /**
   * A search domain of its own over this connection, built as createApp builds the app's: for
   * tests that watch its index (which k each look-up asked for, what the vector index scanned).
   * Its caches start empty and follow the rows it reads; nothing tells it of later writes.
   */
  searchDomain(deps: Omit<SearchDomainOptions, "stores" | "uow">): SearchDomain;
  /** Runs `fn` (store calls) in one transaction on this connection: the app sees all of it or none. */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * A task queue worker over this connection, as a node runs one (register handlers, `start()`,
   * `stop()` before `close()`): for tests that play several workers over one database.
   */
  leaseQueue(opts: LeaseQueueOptions): LeaseQueue;
  close(): void;
}

/** Stores over `<dataDir>/vsearch.db` (the app's database; migrated if new). */
export function openStores(
  dataDir: string,
  opts: {
    vecExtension?: string /** Runs the database's clock ahead for this connection's stores (lease expiry). */;
    dbClockSkewMs?: () => number;
  } = {},
): Stores {
  const url = knownDatabaseUrl(dataDir);
  if (!url && testBackend() === "postgres")
    throw new Error(`no database for ${dataDir} yet: await databaseUrlFor(dir) (test/pg/backend.ts) before openStores`);
  const store = url ? attachPg(url) : openStore(join(dataDir, "vsearch.db"), { vecExtension: opts.vecExtension });
  const { exec: db, uow } = store;
  const clock = { skewMs: opts.dbClockSkewMs ?? (() => 0) };
  return {
    accounts: new AccountStore(db),
    apiKeys: new ApiKeyStore(db),
    sessions: new SessionStore(db),
    collections: new CollectionStore(db),
    credits: new CreditStore(db),
    events: new EventStore(db, clock),
    index: new IndexStore(db, Boolean(opts.vecExtension) && !url),
    jobs: new JobStore(db),
    tasks: new TaskStore(db, clock),
    playback: new PlaybackStore(db),
    search: new SearchStore(db),
    system: new SystemStore(db),
    videos: new VideoStore(db),
    webhooks: new WebhookStore(db, clock),
    nodes: new NodeStore(db, clock),
    secretFingerprint: new SecretFingerprintStore(db),
    searchDomain: (deps) =>
      createSearchDomain({
        ...deps,
        uow,
        stores: { search: new SearchStore(db), ocr: new OcrSearchStore(db), feedback: new FeedbackStore(db) },
      }),
    transaction: async (fn) => await uow.run(fn),
    leaseQueue: (o) => new LeaseQueue(new TaskStore(db, clock), uow, o),
    close: () => store.close(),
  };
}

/** The data of the database at `url` as pg_dump prints it (the test cluster's own pg_dump). */
function pgDump(url: string): Buffer {
  const found = findPostgres();
  if ("missing" in found) throw new Error(`no pg_dump: ${found.missing}`);
  return execFileSync(join(found.bin.bindir, "pg_dump"), ["--data-only", "--no-owner", url], {
    maxBuffer: 512 * 1024 * 1024,
  });
}

/**
 * A pool of this test's own over a PostgreSQL database the app already opened and migrated
 * (synchronous: postgres.js connects on the first query), with its unit of work.
 */
function attachPg(url: string): { exec: Executor; uow: UnitOfWork; close(): void } {
  const pool = postgres(url, poolOptions({ max: 4, applicationName: "vsearch test stores" }));
  const scopes = new TxScopes<PgConn>();
  const exec = new PgExecutor(pool, scopes);
  exec.uow = pgUnitOfWork(pool, scopes);
  return { exec, uow: exec.uow, close: () => void pool.end({ timeout: 5 }) };
}

/**
 * Whether `text` appears anywhere in the database files of `dataDir` (the main file and the
 * write-ahead log, where fresh commits sit): a secret that is stored only hashed or sealed must
 * not. Read as bytes, so no table, column or encoding is left out.
 */
export function databaseFilesContain(dataDir: string, text: string): boolean {
  const needle = Buffer.from(text);
  const url = knownDatabaseUrl(dataDir);
  // On PostgreSQL: every row of the database, as pg_dump writes it (text columns as they are).
  if (url) return pgDump(url).includes(needle);
  return ["vsearch.db", "vsearch.db-wal"].some((name) => {
    const p = join(dataDir, name);
    return existsSync(p) && readFileSync(p).includes(needle);
  });
}

/** Collections of every account (a refused create must store none, for anyone). */
export const allCollections = async (s: Stores): Promise<number> =>
  (await Promise.all((await s.accounts.listAccounts()).map(async (a) => await s.collections.count(a.id)))).reduce(
    (n, c) => n + c,
    0,
  );

/**
 * Store files a test file keeps for itself: for the tests of what lies under the stores (the unit
 * of work, the event bus, the derived-content owner), which need a store over a file no app uses,
 * and sometimes a second connection to it. Call at file level; every connection is closed and
 * every dir removed after the file's tests.
 */
export function ownStoreFiles(prefix: string) {
  const dirs = tempDirs(prefix);
  const opened: SqliteStore[] = [];
  afterAll(() => {
    for (const s of opened.splice(0)) s.close();
  });
  return {
    /** A fresh, empty data dir. */
    dir: () => dirs.make(),
    /** A connection (with its unit of work) to `<dataDir>/vsearch.db`, migrated when new. */
    open: (dataDir: string, opts: Parameters<typeof openStore>[1] = {}): SqliteStore => {
      const store = openStore(join(dataDir, "vsearch.db"), opts);
      opened.push(store);
      return store;
    },
  };
}
