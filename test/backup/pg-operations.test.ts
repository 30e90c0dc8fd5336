/**
 * The operator's commands in PostgreSQL mode, through the real CLI (subprocesses) on this file's
 * database (pg project: test/pg/): `doctor` names the backend without credentials, its versions
 * and migration state, and turns an unreachable server into one line; `backup` archives the files
 * and registry and prints the pg_dump / pg_restore commands, which — run as printed against a
 * second database — bring the rows over, after which `restore` checks the files against them and a
 * key made before the backup authenticates on a `serve` of the restored install. Restoring across
 * stores (an embedded backup into PostgreSQL mode and back) is refused, saying what to do.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runCli, runCliJson, startServer } from "../helpers/cli.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { tempDirs } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { closedPort } from "../net/loopback.ts";
import { findPostgres, freePort } from "../pg/cluster.ts";
import { pgAvailable, pgTest } from "../pg/database.ts";

const run = promisify(execFile);
const dirs = tempDirs("vsearch-pg-ops-");
/** Never sent (the test cluster trusts loopback) and never to be printed. */
const PASSWORD = "pw-Hunter2-never-shown";

let url: string;
let location: string;
let restoredDb: string;
let restoredUrl: string;
let bindir: string;

/** Runs a printed pg_dump / pg_restore line with the cluster's own client (arguments hold no spaces here). */
async function runPrinted(line: string, replaceDb?: string) {
  const [tool, ...args] = line.split(" ");
  const argv = replaceDb ? args.map((a) => (a.startsWith("--dbname=") ? `--dbname=${replaceDb}` : a)) : args;
  return await run(join(bindir, tool), argv, { timeout: 120_000 });
}

// The pg project's harness gives every data dir a database of its own (test/pg/backend.ts); the
// embedded runs below are the embedded store on purpose: the variable is removed for them.
const WEBHOOKS = { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", VSEARCH_WEBHOOK_RETRY_DELAYS: "60,60" };
const EMBEDDED = { VSEARCH_DATABASE_URL: undefined } as unknown as Record<string, string>;

describe.skipIf(!pgAvailable())("PostgreSQL mode", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    const u = new URL(pgTest().url);
    u.password = PASSWORD;
    url = u.toString();
    location = `${u.hostname}:${u.port}${u.pathname}`;
    restoredDb = `${pgTest().name}_restored`;
    restoredUrl = pgTest().urlFor(restoredDb);
    await pgTest().admin.unsafe(`CREATE DATABASE ${restoredDb}`);
    const found = findPostgres();
    if (!("bin" in found)) throw new Error(found.missing);
    bindir = found.bin.bindir;
  });
  afterAll(async () => {
    await pgTest().admin.unsafe(`DROP DATABASE IF EXISTS ${restoredDb} WITH (FORCE)`);
    await pgTest().admin.unsafe(`DROP DATABASE IF EXISTS ${pgTest().name}_r WITH (FORCE)`);
    await pgTest().admin.unsafe(`DROP ROLE IF EXISTS ${pgTest().name}_r`);
  });

  const a = dirs.make();
  const pgEnv = () => ({ VSEARCH_DATABASE_URL: url });
  let account: string;
  let key: string;
  let videoId: string;
  let archive: string;
  let backup: any;
  let hookId: string;

  test("doctor reports the backend, versions and migration state, never the password", async () => {
    account = (await runCliJson(["--data-dir", a, "accounts", "create", "--name", "ops"], pgEnv())).id;
    key = (await runCliJson(["--data-dir", a, "keys", "create", "--account", account, "--name", "k"], pgEnv())).key;
    const clip = await smallMp4(scratchDir("pg-ops"), 2);
    const ingest = await runCliJson(
      ["--data-dir", a, "ingest", clip, "--account", account, "--collection", "c"],
      pgEnv(),
    );
    videoId = ingest.files[0].video_id;
    expect(ingest.summary.indexed).toBe(1);

    const json = await runCli(["--data-dir", a, "--json", "doctor"], pgEnv());
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.store_backend).toMatchObject({
      kind: "postgres",
      location,
      database: pgTest().name,
      role: "vsearch",
      server_version: expect.stringMatching(/^1[5-9]\.|^[2-9]\d\./),
      pgvector_version: expect.stringMatching(/^0\.(8|9|\d\d)\.|^[1-9]\./),
      pending_migrations: [],
      migrated_at_open: [],
    });
    expect(report.store_backend.schema_version).toBe(report.store_backend.binary_schema_version);
    expect(report.store_backend.schema_version).toBeGreaterThan(0);
    // SQLite and sqlite-vec are not checked, so cannot fail it.
    expect(report.runtime).toMatchObject({ vec_query_ok: null, sqlite_version: null, vec_version: null });
    expect(report.store.videos).toBe(1);

    const text = await runCli(["--data-dir", a, "doctor"], pgEnv());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      new RegExp(`store backend PostgreSQL \\S+ at ${location.replace(/\./g, "\\.")} \\(role vsearch\\), pgvector`),
    );
    expect(text.stdout).toMatch(/migrations +schema version (\d+) of \1, up to date/);
    expect(text.stdout).toMatch(/sqlite +not used \(PostgreSQL store\)/);
    for (const out of [json.stdout, json.stderr, text.stdout, text.stderr]) expect(out).not.toContain(PASSWORD);
  });

  test("doctor on an unreachable server, or without pgvector: one problem line, exit 1, no stack trace", async () => {
    const port = await freePort(); // nothing listens there
    const down = `postgres://vsearch:${PASSWORD}@127.0.0.1:${port}/nowhere`;
    const text = await runCli(["--data-dir", dirs.make(), "doctor"], { VSEARCH_DATABASE_URL: down });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("PROBLEMS FOUND");
    expect(text.stdout).toContain(`store backend PostgreSQL at 127.0.0.1:${port}/nowhere: UNAVAILABLE`);
    const problems = text.stdout.split("\n").filter((l) => l.startsWith("problem"));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}/nowhere`));
    expect(text.stderr).not.toMatch(/\bat .+:\d+:\d+\)?$/m); // no stack frame
    const json = await runCli(["--data-dir", dirs.make(), "--json", "doctor"], { VSEARCH_DATABASE_URL: down });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({
      ok: false,
      store_backend: { kind: "postgres", location: `127.0.0.1:${port}/nowhere` },
    });
    expect(report.problems[0]).toContain("cannot reach PostgreSQL");
    for (const out of [text.stdout, text.stderr, json.stdout]) expect(out).not.toContain(PASSWORD);

    // A database without pgvector, and a role that may not enable it: the DBA's sentence.
    const role = `${pgTest().name}_r`;
    await pgTest().admin.unsafe(`CREATE ROLE ${role} LOGIN`);
    await pgTest().admin.unsafe(`CREATE DATABASE ${role} OWNER ${role}`);
    const bare = await runCli(["--data-dir", dirs.make(), "doctor"], {
      VSEARCH_DATABASE_URL: pgTest().urlFor(role, role),
    });
    expect(bare.code).toBe(1);
    expect(bare.stdout.split("\n").filter((l) => l.startsWith("problem"))).toEqual([
      `problem       pgvector is not enabled in database "${role}", and this role may not enable it (it needs a superuser): ask the DBA to run CREATE EXTENSION vector in database "${role}"`,
    ]);
  });

  test("backup archives files and registry, and names pg_dump for the rows", async () => {
    // A webhook delivery left pending (its receiver is down) when the server stops: in the dump.
    const server = await startServer(a, { ...pgEnv(), ...WEBHOOKS });
    try {
      const post = (path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const created = await post("/v1/webhooks", {
        url: `http://127.0.0.1:${await closedPort()}/hook`,
        events: ["webhook.ping"],
      });
      hookId = ((await created.json()) as any).data.id;
      expect((await post(`/v1/webhooks/${hookId}/test`)).status).toBe(202);
      const attempted = async () =>
        (
          (await (
            await fetch(`${server.url}/v1/webhooks/${hookId}/deliveries`, {
              headers: { authorization: `Bearer ${key}` },
            })
          ).json()) as any
        ).data[0];
      expect(await until(async () => (await attempted())?.attempts === 1, 20_000, 20)).toBe(true);
      expect((await attempted()).status).toBe("pending");
    } finally {
      await server.stop();
    }

    archive = join(dirs.make(), "pg-backup.tar");
    const r = await runCli(["--data-dir", a, "backup", archive], pgEnv());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`NOT the rows: they are in PostgreSQL (${location})`);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    expect(existsSync(archive)).toBe(true);
    // JSON: what the archive covers, and the two commands, database named, no password.
    backup = await runCliJson(["--data-dir", a, "backup", archive], pgEnv());
    expect(backup).toMatchObject({
      videos: 1,
      videos_without_files: [],
      rows: { in_archive: false, database: location },
    });
    const dump = archive.replace(/\.tar$/, ".pgdump");
    expect(backup.rows.pg_dump).toBe(
      `pg_dump --format=custom --host=127.0.0.1 --port=${new URL(url).port} --username=vsearch --dbname=${pgTest().name} --file=${dump}`,
    );
    expect(backup.rows.pg_restore).toContain(`--dbname=${pgTest().name} ${dump}`);
    expect(JSON.stringify(backup)).not.toContain(PASSWORD);
    // No database in the archive: the video's files, the secret, the manifest.
    const names = (await run("tar", ["-tf", archive])).stdout.trim().split("\n");
    expect(names).not.toContain("vsearch.db");
    expect(names).toEqual(
      expect.arrayContaining([`videos/${videoId}/source.mp4`, "secret.key", "vsearch-backup.json"]),
    );

    // Before the rows are in the new database, restore refuses without migrating it (pg_restore
    // --exit-on-error, next test, would collide with the tables a migration made).
    const b = dirs.make();
    const early = await runCli(["--data-dir", b, "restore", archive], { VSEARCH_DATABASE_URL: restoredUrl });
    expect(early.code).toBe(1);
    expect(early.stderr).toContain("BACKUP_ROWS_MISSING");
    expect(early.stderr).toContain(`pg_restore --no-owner --no-comments --exit-on-error`);
    expect(readdirSync(b).filter((n) => n !== "runtime")).toEqual([]);
  });

  test("pg_dump + pg_restore as printed, then restore: the files check out and an old key works", async () => {
    await runPrinted(backup.rows.pg_dump);
    await runPrinted(backup.rows.pg_restore, restoredDb);
    const b = dirs.make();
    const restored = await runCliJson(["--data-dir", b, "restore", archive], { VSEARCH_DATABASE_URL: restoredUrl });
    expect(restored).toMatchObject({
      videos: 1,
      warnings: [],
      webhook_deliveries_held: 1,
      rows: { database: `127.0.0.1:${new URL(restoredUrl).port}/${restoredDb}` },
      backup: { store: "postgres", format: 2 },
    });
    expect(existsSync(join(b, "videos", videoId, "source.mp4"))).toBe(true);
    expect(existsSync(join(b, "secret.key"))).toBe(true);
    const check = await runCliJson(["--data-dir", b, "check"], { VSEARCH_DATABASE_URL: restoredUrl });
    expect(check).toMatchObject({ ok: true, videos: 1, videos_missing_source: [], orphan_video_dirs: [] });

    const server = await startServer(b, { VSEARCH_DATABASE_URL: restoredUrl });
    try {
      const res = await fetch(`${server.url}/v1/videos/${videoId}`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      // The delivery pending in the dump is held (failed, with the reason), not re-sent.
      const deliveries = (await (
        await fetch(`${server.url}/v1/webhooks/${hookId}/deliveries`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any;
      expect(deliveries.data[0]).toMatchObject({ status: "failed", event: "webhook.ping" });
      expect(deliveries.data[0].error).toMatch(/^held by restore .*pending when the backup was made/);
      // A serve on the database: restoring under it is refused (another data dir, same rows).
      const c = dirs.make();
      const busy = await runCli(["--data-dir", c, "restore", archive], { VSEARCH_DATABASE_URL: restoredUrl });
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain("SERVER_RUNNING");
      expect(busy.stderr).toMatch(/vsearch processes are connected to .*vsearch serve/);
      expect(readdirSync(c).filter((n) => n !== "runtime")).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  test("across stores: an embedded backup into PostgreSQL mode and a PostgreSQL backup into an embedded install are refused", async () => {
    const e = dirs.make();
    await runCliJson(["--data-dir", e, "accounts", "create", "--name", "embedded"], EMBEDDED);
    const doctor = await runCliJson(["--data-dir", e, "doctor"], EMBEDDED);
    expect(doctor.store_backend).toEqual({ kind: "sqlite", file: join(e, "vsearch.db") });
    expect(doctor.runtime.vec_query_ok).toBe(true);
    const embedded = join(dirs.make(), "embedded.tar");
    expect((await runCliJson(["--data-dir", e, "backup", embedded], EMBEDDED)).rows).toEqual({ in_archive: true });

    const p = dirs.make();
    const intoPg = await runCli(["--data-dir", p, "restore", embedded], { VSEARCH_DATABASE_URL: restoredUrl });
    expect(intoPg.code).toBe(1);
    expect(intoPg.stderr).toContain("BACKUP_WRONG_STORE");
    expect(intoPg.stderr).toContain("vsearch migrate-store --to postgres://… --from <dir>");
    expect(readdirSync(p).filter((n) => n !== "runtime")).toEqual([]);

    const s = dirs.make();
    const intoEmbedded = await runCli(["--data-dir", s, "restore", archive], EMBEDDED);
    expect(intoEmbedded.code).toBe(1);
    expect(intoEmbedded.stderr).toContain("BACKUP_WRONG_STORE");
    expect(intoEmbedded.stderr).toContain(`made on PostgreSQL (${location})`);
    expect(readdirSync(s).filter((n) => n !== "runtime")).toEqual([]);
  });
});
