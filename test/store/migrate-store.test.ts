/**
 * Issue 25: `vsearch migrate-store` moves an embedded install into PostgreSQL. An install is built
 * through the real app on SQLite (a pipeline upload with the tiny models, hand-indexed videos with
 * frames, transcripts and OCR lines, feedback, a webhook with a delivery, users, sessions and API
 * keys), its answers recorded, the app closed; then migrated into this file's database. An app
 * started on the PostgreSQL URL over the same data dir answers the same top-10, a webhook secret
 * still signs, keys and sessions still authenticate, presigned links still verify. A target that
 * fails midway is left empty and a re-run completes; a non-empty target is refused and unchanged;
 * the CLI does both, and carries the secret to another data dir.
 */
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { migrateStore, type MigrateProgress } from "../../src/store/migrate-store.ts";
import { createKeyTenant, createTenant, json, startTestApp, type Tenant, uploadAndWait } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { cutsMp4, scratchDir } from "../helpers/ffmpeg.ts";
import { fixedCatalog, tinyClip, tinyWhisper } from "../helpers/models.ts";
import { makeTempDir, removeDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { pgAvailable, pgTest } from "../pg/database.ts";
import {
  addVideo,
  concept,
  HandEmbedder,
  indexVideo,
  near,
  rng,
  type SearchTestApp,
  search,
  segmentsOf,
  urlencoded,
} from "../search/helpers.ts";
import { startReceiver } from "../webhooks/receiver.ts";

// The install migrated here is the embedded store: this file's apps and CLI runs stay on SQLite
// unless handed a URL (the pg project would otherwise give every data dir a PostgreSQL database of
// its own, test/pg/backend.ts). Only the app started on the migrated database is given one.
process.env.VSEARCH_TEST_BACKEND = "sqlite";

const ENV = {
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "0.2,0.4",
  VSEARCH_WEBHOOK_TIMEOUT_MS: "2000",
  VSEARCH_RATE_LIMIT_SEARCH: "100000",
  VSEARCH_RATE_LIMIT_JOBS: "100000",
  VSEARCH_RATE_LIMIT_WEBHOOKS: "10000",
};
const WORDS = { red: concept(0), blue: concept(1), green: concept(2) };
const QUERIES: Record<string, string>[] = [
  { query: "red", modes: "video" },
  { query: "blue", modes: "video" },
  { query: "green", modes: "video,scene" },
  { query: "budget", modes: "transcript" },
  { query: "marketing review", modes: "transcript" },
  { query: "exit", modes: "ocr" },
  { query: "red budget exit", modes: "video,transcript,ocr" },
];
/** Tables counted before and after a refused or failed run. */
const TABLES = [
  "accounts",
  "users",
  "sessions",
  "api_keys",
  "collections",
  "videos",
  "jobs",
  "tasks",
  "frames",
  "frame_vectors",
  "shots",
  "transcript_segments",
  "ocr_lines",
  "search_feedback",
  "webhooks",
  "webhook_deliveries",
  "events",
  "cluster_meta",
];

const models = fixedCatalog({ "image-text": tinyClip, speech: tinyWhisper });
const rx = startReceiver();
let dir: string;
let tenant: Tenant;
let webhook: { id: string; secret: string };
let before: string[][];
/** The target's counts right after the migration. */
let migrated: Record<string, number>;

/** The top-10 of each query, as comparable lines (video, type, span, rank). */
async function answers(t: SearchTestApp, key: string): Promise<string[][]> {
  const out: string[][] = [];
  for (const q of QUERIES) {
    const { res, body } = await search(t, key, q);
    expect(res.status, JSON.stringify(body)).toBe(200);
    out.push(
      segmentsOf(body)
        .sort((a, b) => a.rank - b.rank)
        .slice(0, 10)
        .map((s) => `${s.video_id} ${s.type} ${s.timestamp_start}-${s.timestamp_end} #${s.rank}`),
    );
  }
  return out;
}

async function counts(url: string): Promise<Record<string, number>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const out: Record<string, number> = {};
    for (const t of TABLES) out[t] = Number((await sql.unsafe(`SELECT count(*) AS n FROM ${t}`))[0]!.n);
    return out;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The fingerprint of a secret.key's text (signing/secret-fingerprint.ts, computed independently). */
const fingerprintOf = (hex: string) =>
  createHmac("sha256", Buffer.from(hex.trim(), "hex")).update("vsearch cluster secret fingerprint v1").digest("hex");

const zero = Object.fromEntries(TABLES.map((t) => [t, 0]));

beforeAll(async () => {
  if (!pgAvailable()) return;
  dir = makeTempDir("vsearch-migrate-");
  const app = await startTestApp(ENV, { dataDir: dir, models, queryEmbedder: new HandEmbedder(WORDS) });
  const t: SearchTestApp = Object.assign(app, { index: app.stores.index });
  try {
    await t.app.start();
    tenant = await createTenant(t, "Acme");
    await createKeyTenant(t, "Other");
    const col = (await json(await t.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } })))
      .data.id;
    // One video through the real pipeline (jobs, tasks, shots, frames and vectors of the tiny CLIP, events).
    const up = await uploadAndWait(t, tenant, col, await cutsMp4(scratchDir("migrate-store")), { timeoutMs: 120_000 });
    expect(up.job.status).toBe("done");
    // Hand-indexed videos: known vectors, transcripts and on-screen text.
    const r = rng(25);
    const texts = [
      ["Welcome to the quarterly budget review.", "Marketing review follows after lunch."],
      ["Our budget for marketing doubled.", "The runners were running."],
      ["Nothing to see here.", "A budget of zero."],
    ];
    for (let v = 0; v < 3; v++) {
      const id = await addVideo(t, tenant.accountId, col, { filename: `hand-${v}.mp4`, duration: 60 });
      await indexVideo(t, id, {
        frames: Array.from({ length: 40 }, (_, i) => ({ timestamp: i, embedding: near(i % 3, 0.5 + 0.1 * v, r) })),
        shots: [
          { start: 0, end: 20, caption: "a red ball", embedding: near(0, 0.8, r) },
          { start: 20, end: 40, caption: "green grass", embedding: near(2, 0.7 + 0.05 * v, r) },
        ],
        transcript: texts[v]!.map((text, i) => ({ start: i * 5, end: i * 5 + 4, text })),
        ocr: [
          { start: 3 + v, end: 6 + v, text: `EXIT ${v}`, confidence: 0.9, box: { x: 0.1, y: 0.1, w: 0.3, h: 0.1 } },
        ],
      });
    }
    // Feedback, and a webhook with a signed delivery.
    const top = segmentsOf((await search(t, tenant.key, { query: "budget", modes: "transcript" })).body)[0];
    const fb = urlencoded({ video_id: top.video_id, timestamp_start: String(top.timestamp_start), signal: "up" });
    expect((await t.request("POST", "/v1/search/feedback", { token: tenant.key, ...fb })).status).toBe(200);
    webhook = (
      await json(
        await t.request("POST", "/v1/webhooks", { token: tenant.key, json: { url: rx.url, events: ["webhook.ping"] } }),
      )
    ).data;
    rx.setSecret(webhook.secret);
    await t.request("POST", `/v1/webhooks/${webhook.id}/test`, { token: tenant.key });
    expect(await until(async () => rx.hits.length === 1)).toBe(true);
    expect(rx.hits[0]!.signatureOk).toBe(true);
    before = await answers(t, tenant.key);
    expect(before.every((a) => a.length > 0)).toBe(true);
  } finally {
    await t.close();
  }
}, 300_000);

afterAll(async () => {
  await rx.stop();
  if (dir) removeDir(dir);
});

describe.skipIf(!pgAvailable())("vsearch migrate-store", () => {
  test("a failure midway leaves the target empty, and a re-run completes", async () => {
    const { url } = pgTest();
    // The last table copied refuses rows: the run fails after every other table was copied.
    const probe = postgres(url, { max: 1, onnotice: () => {} });
    await probe.unsafe("ALTER TABLE webhook_deliveries ADD CONSTRAINT migrate_probe CHECK (false) NOT VALID");
    const failed = await migrateStore({ fromDir: dir, to: url }).catch((e: Error) => e);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toMatch(/webhook_deliveries.*migrate_probe/);
    expect(await counts(url)).toEqual(zero);
    await probe.unsafe("ALTER TABLE webhook_deliveries DROP CONSTRAINT migrate_probe");
    await probe.end();

    const progress: MigrateProgress[] = [];
    const report = await migrateStore({ fromDir: dir, to: url, chunkRows: 50, onProgress: (p) => progress.push(p) });
    const after = await counts(url);
    for (const t of TABLES) expect(after[t], t).toBe(report.tables.find((x) => x.table === t)?.rows);
    expect(after.frame_vectors).toBeGreaterThan(100);
    expect(after.webhook_deliveries).toBe(1);
    expect(report.verified.vectors_compared).toBeGreaterThan(0);
    expect(report.verified.searches.map((s) => s.table)).toEqual(["transcript_segments", "ocr_lines"]);
    // Progress per table, in chunks: frame_vectors (>100 rows, chunks of 50) reported more than once.
    expect(progress.filter((p) => p.table === "frame_vectors" && p.done > 0).length).toBeGreaterThan(2);
    expect(progress.at(-1)).toMatchObject({ done: progress.at(-1)!.total });
    // Parents before children.
    const order = report.tables.map((t) => t.table);
    expect(order.indexOf("accounts")).toBeLessThan(order.indexOf("videos"));
    expect(order.indexOf("frames")).toBeLessThan(order.indexOf("frame_vectors"));
    migrated = after;
    // Every identity sequence is past the highest copied id: the next row never collides.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      for (const [table, column] of [
        ["frames", "id"],
        ["shots", "id"],
        ["transcript_segments", "id"],
        ["ocr_lines", "id"],
        ["events", "seq"],
        ["tasks", "id"],
        ["videos", "rowid"],
      ] as const) {
        const [row] = await sql.unsafe(
          `SELECT max(${column}) AS top, (SELECT last_value FROM pg_sequences WHERE sequencename = pg_get_serial_sequence('${table}', '${column}')::regclass::text) AS seq FROM ${table}`,
        );
        // A finished task's row is deleted: whether one was still queued (the OCR task) when the
        // source closed depends on the machine's speed, so an empty tasks table is no failure.
        if (table !== "tasks" || Number(after.tasks) > 0) expect(Number(row!.top), table).toBeGreaterThan(0);
        expect(Number(row!.seq), table).toBeGreaterThanOrEqual(Number(row!.top));
      }
      // The cluster secret's fingerprint came with the rows: the carried secret's (nodes start on it).
      const [fp] = await sql.unsafe("SELECT value FROM cluster_meta WHERE key = 'secret_fingerprint'");
      expect(fp?.value).toBe(fingerprintOf(readFileSync(join(dir, "secret.key"), "utf8")));
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  test("an app on the PostgreSQL URL answers the same top-10; keys, sessions, links and the webhook secret still work", async () => {
    // search() only sends requests: the app on PostgreSQL needs no index store of the test's.
    const pg = (await startTestApp(
      { ...ENV, VSEARCH_DATABASE_URL: pgTest().url },
      { dataDir: dir, models, queryEmbedder: new HandEmbedder(WORDS) },
    )) as SearchTestApp;
    try {
      await pg.app.start();
      expect(await answers(pg, tenant.key)).toEqual(before);
      // The API key and the session token authenticate; a wrong key does not.
      expect((await pg.request("GET", "/v1/collections", { token: tenant.key })).status).toBe(200);
      expect((await pg.request("GET", "/v1/collections", { token: tenant.adminToken })).status).toBe(200);
      expect((await pg.request("GET", "/v1/collections", { token: `${tenant.key.slice(0, -2)}xx` })).status).toBe(401);
      // A presigned link made on PostgreSQL verifies (the same master secret signs it).
      const hit = segmentsOf((await search(pg, tenant.key, { query: "red", modes: "video" })).body)[0];
      const link = new URL(hit.video_url);
      expect(
        (await pg.request("GET", `${link.pathname}${link.search}`, { headers: { range: "bytes=0-9" } })).status,
      ).toBe(206);
      // The sealed webhook secret still signs: the receiver verifies with the secret shown at creation.
      expect((await pg.request("POST", `/v1/webhooks/${webhook.id}/test`, { token: tenant.key })).status).toBe(202);
      expect(await until(async () => rx.hits.length === 2, 10_000)).toBe(true);
      expect(rx.hits[1]!.signatureOk).toBe(true);
      // New rows take ids past the copied ones (the sequences were moved).
      const col = (
        await json(await pg.request("POST", "/v1/collections", { token: tenant.key, json: { name: "new" } }))
      ).data.id;
      expect(col).toMatch(/^col_/);
    } finally {
      await pg.close();
    }
  });

  test("a non-empty target is refused, naming the tables, and left unchanged", async () => {
    const was = await counts(pgTest().url);
    const refused = await migrateStore({ fromDir: dir, to: pgTest().url }).catch((e: Error) => e);
    expect((refused as Error).message).toMatch(/is not empty: accounts has 2 rows, .*videos has 4 rows/);
    expect(await counts(pgTest().url)).toEqual(was);
  });

  test("a value PostgreSQL cannot store is refused, naming its table and column, and the target stays empty", async () => {
    const bad = await startTestApp({}, { prefix: "vsearch-migrate-bad-" });
    const t: SearchTestApp = Object.assign(bad, { index: bad.stores.index });
    try {
      const a = await createKeyTenant(t, "Bad");
      const col = (await t.app.services.collections.create(a.accountId, { name: "c" })).id;
      const id = await addVideo(t, a.accountId, col, { filename: "nul.mp4" });
      await indexVideo(t, id, { transcript: [{ start: 0, end: 1, text: "before\u0000after" }] });
      const url = await pgTest().newDatabase();
      const refused = await migrateStore({ fromDir: t.dir, to: url }).catch((e: Error) => e);
      expect((refused as Error).message).toMatch(/^transcript_segments\.text holds a text with a NUL character/);
      expect(await counts(url)).toEqual(zero);
    } finally {
      await t.close();
    }
  });

  test("the CLI copies into a new database, carries the secret to another data dir, and refuses a second run", async () => {
    const { admin, urlFor } = pgTest();
    const db = `${pgTest().name}_cli`;
    await admin.unsafe(`CREATE DATABASE ${db} TEMPLATE vsearch_tpl STRATEGY FILE_COPY`);
    const runDir = makeTempDir("vsearch-migrate-run-");
    try {
      const ok = await runCli(["--data-dir", runDir, "migrate-store", "--from", dir, "--to", urlFor(db)], {}, 240_000);
      expect(ok.stderr + ok.stdout).toContain("Copied");
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(/verified: row counts of every table equal; \d+ vectors equal byte for byte/);
      expect(ok.stdout).toContain(`copied ${join(dir, "secret.key")} to ${join(runDir, "secret.key")}`);
      expect(ok.stdout).toContain("move that folder");
      expect(readFileSync(join(runDir, "secret.key"), "utf8")).toBe(readFileSync(join(dir, "secret.key"), "utf8"));
      expect(await counts(urlFor(db))).toEqual(migrated);
      // A node on the carried secret passes the fingerprint check; one with a secret of its own is refused.
      const onCarried = await runCli(["--data-dir", runDir, "nodes"], { VSEARCH_DATABASE_URL: urlFor(db) });
      expect(onCarried.stderr).toBe("");
      expect(onCarried.code).toBe(0);
      const strayDir = makeTempDir("vsearch-migrate-stray-");
      try {
        const stray = await runCli(["--data-dir", strayDir, "nodes"], { VSEARCH_DATABASE_URL: urlFor(db) });
        expect(stray.code).toBe(1);
        expect(stray.stderr).toContain(
          `the cluster secret in ${join(strayDir, "secret.key")} is not the one this database was started with`,
        );
      } finally {
        removeDir(strayDir);
      }

      const again = await runCli(
        ["--data-dir", runDir, "migrate-store", "--from", dir, "--to", urlFor(db)],
        {},
        240_000,
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/is not empty: accounts has 2 rows/);
    } finally {
      removeDir(runDir);
      await admin.unsafe(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    }
  });
});
