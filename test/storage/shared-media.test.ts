/**
 * Issue 26: several nodes, one PostgreSQL database, one media root. Two apps with data dirs of
 * their own (runtime, index snapshot, node id) share `media_root`: the cluster secret is one file
 * there, so a presigned URL one makes verifies on the other and a webhook secret one seals, the
 * other opens; the media one writes, the other serves. A node starting while another receives an
 * upload leaves that upload's temp file alone (before, its start-up sweep deleted every temp
 * upload on the root). `migrate-store` carries an embedded install's secret onto the media root.
 * PostgreSQL only: two data dirs over one embedded store cannot be.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createKeyTenant, json, startTestApp, type TestApp, type Tenant } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { smallMp4 } from "../helpers/ffmpeg.ts";
import { tempDir } from "../helpers/temp.ts";
import { until } from "../helpers/wait.ts";
import { databaseUrlFor } from "../pg/backend.ts";
import { pgAvailable, pgTest } from "../pg/database.ts";
import { addVideo, type SearchTestApp } from "../search/helpers.ts";
import { startReceiver } from "../webhooks/receiver.ts";

const ENV = {
  VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  VSEARCH_WEBHOOK_RETRY_DELAYS: "0.2,0.4",
  VSEARCH_WEBHOOK_TIMEOUT_MS: "2000",
  VSEARCH_RATE_LIMIT_WEBHOOKS: "10000",
};

describe.skipIf(!pgAvailable())("two nodes, one database, one media root", () => {
  const root = tempDir("vsearch-media-root-");
  const rx = startReceiver();
  let a: TestApp;
  let b: TestApp;
  let tenant: Tenant;
  let col: string;

  beforeAll(async () => {
    const env = { ...ENV, VSEARCH_DATABASE_URL: (await databaseUrlFor(root))!, VSEARCH_MEDIA_ROOT: root };
    a = await startTestApp(env, { prefix: "vsearch-node-a-" });
    b = await startTestApp(env, { prefix: "vsearch-node-b-" });
    tenant = await createKeyTenant(a);
    col = (await json(await a.request("POST", "/v1/collections", { token: tenant.key, json: { name: "c" } }))).data.id;
  });
  afterAll(async () => {
    await rx.stop();
    await b?.close();
    await a?.close();
  });

  test("one secret, on the media root: a link made by one node verifies on the other, which serves the file from the root", async () => {
    expect(a.dir).not.toBe(b.dir);
    expect(existsSync(join(root, "secret.key"))).toBe(true);
    expect(existsSync(join(a.dir, "secret.key")) || existsSync(join(b.dir, "secret.key"))).toBe(false);
    const bytes = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) % 251);
    const id = await addVideo(a as SearchTestApp, tenant.accountId, col, { bytes });
    expect(readdirSync(join(root, "videos"))).toContain(id); // on the root, not in a's data dir
    expect(existsSync(join(a.dir, "videos"))).toBe(false);
    const video = (await json(await a.request("GET", `/v1/videos/${id}`, { token: tenant.key }))).data;
    const link = new URL(video.playback_url);
    expect(link.searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/);
    const served = await b.request("GET", `${link.pathname}${link.search}`, { headers: { range: "bytes=0-9" } });
    expect(served.status).toBe(206);
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes.slice(0, 10));
    // A signature that is not the cluster's is refused there too.
    const forged = `${link.pathname}?expires=${link.searchParams.get("expires")}&signature=${"0".repeat(64)}`;
    expect((await b.request("GET", forged, { headers: { range: "bytes=0-9" } })).status).toBe(403);
  });

  test("a webhook secret sealed by one node opens on the other: its delivery is signed with the secret shown at creation", async () => {
    const hook = (
      await json(
        await a.request("POST", "/v1/webhooks", { token: tenant.key, json: { url: rx.url, events: ["webhook.ping"] } }),
      )
    ).data;
    rx.setSecret(hook.secret);
    await b.app.start(); // b's dispatcher delivers; a's never started
    expect((await b.request("POST", `/v1/webhooks/${hook.id}/test`, { token: tenant.key })).status).toBe(202);
    expect(await until(async () => rx.hits.length === 1, 20_000)).toBe(true);
    expect(rx.hits[0]!.signatureOk).toBe(true);
  });

  test("a node that starts while another receives an upload leaves that upload's temp file alone", async () => {
    const clip = await smallMp4(tempDir("vsearch-shared-clip-"));
    const file = new Uint8Array(readFileSync(clip));
    const boundary = "----vsearch-shared-media";
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="collection_id"\r\n\r\n${col}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.mp4"\r\nContent-Type: video/mp4\r\n\r\n`,
    );
    const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
    const half = Math.floor(file.length / 2);
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const body = new ReadableStream<Uint8Array>({
      async start(ctl) {
        ctl.enqueue(head);
        ctl.enqueue(file.slice(0, half));
        await held;
        ctl.enqueue(file.slice(half));
        ctl.enqueue(tail);
        ctl.close();
      },
    });
    const tmp = join(root, "uploads", "tmp");
    mkdirSync(tmp, { recursive: true });
    const parts = () => readdirSync(tmp).filter((f) => f.endsWith(".part"));
    const pending = a.request("POST", "/v1/upload", {
      token: tenant.key,
      body,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    });
    expect(await until(() => parts().length === 1, 20_000)).toBe(true);
    const [part] = parts();
    // A third node starts on the same root and database: its start-up sweep runs now.
    const c = await startTestApp(
      { ...ENV, VSEARCH_DATABASE_URL: (await databaseUrlFor(root))!, VSEARCH_MEDIA_ROOT: root },
      { prefix: "vsearch-node-c-" },
    );
    try {
      await c.app.start();
      expect(parts()).toEqual([part]);
    } finally {
      await c.close();
    }
    release();
    const res = await pending;
    expect(res.status, await res.clone().text()).toBe(202);
    const { video_id } = (await json(res)).data;
    expect(existsSync(join(root, "videos", video_id))).toBe(true);
    expect(parts()).toEqual([]);
    // Its ingest is not this test's subject: deleted, its task stops wherever it runs.
    expect((await a.request("DELETE", `/v1/videos/${video_id}`, { token: tenant.key })).status).toBe(204);
  });
});

describe.skipIf(!pgAvailable())("migrate-store and the media root", () => {
  test("the embedded install's secret is carried onto the media root, where the PostgreSQL install reads it", async () => {
    const from = tempDir("vsearch-embedded-");
    const runDir = tempDir("vsearch-run-");
    const root = join(tempDir("vsearch-mnt-"), "media");
    mkdirSync(root);
    // An embedded install: no database for its data dir (the pg project would give it one).
    process.env.VSEARCH_TEST_BACKEND = "sqlite";
    const made = await runCli(["--data-dir", from, "accounts", "create", "--name", "Acme"]).finally(
      () => (process.env.VSEARCH_TEST_BACKEND = "postgres"),
    );
    expect(existsSync(join(from, "vsearch.db"))).toBe(true);
    expect(made.code, made.stderr).toBe(0);
    const secret = readFileSync(join(from, "secret.key"), "utf8");
    const { admin, urlFor } = pgTest();
    const db = `${pgTest().name}_media`;
    await admin.unsafe(`CREATE DATABASE ${db} TEMPLATE vsearch_tpl STRATEGY FILE_COPY`);
    try {
      const env = { VSEARCH_MEDIA_ROOT: root };
      const ok = await runCli(
        ["--data-dir", runDir, "migrate-store", "--from", from, "--to", urlFor(db)],
        env,
        240_000,
      );
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain(`copied ${join(from, "secret.key")} to ${join(root, "secret.key")}`);
      expect(ok.stdout).toContain(`move that folder into ${root} (the media root)`);
      expect(readFileSync(join(root, "secret.key"), "utf8")).toBe(secret);
      expect(existsSync(join(runDir, "secret.key"))).toBe(false);
      // The PostgreSQL install's nodes read it there and make none of their own.
      const node = await startTestApp(
        { VSEARCH_DATABASE_URL: urlFor(db), VSEARCH_MEDIA_ROOT: root },
        { dataDir: runDir },
      );
      await node.close();
      // doctor says where the media and the secret are.
      const doctor = await runCli(["--data-dir", runDir, "doctor", "--json"], {
        VSEARCH_DATABASE_URL: urlFor(db),
        VSEARCH_MEDIA_ROOT: root,
      });
      expect(JSON.parse(doctor.stdout)).toMatchObject({ media_root: root, secret_file: join(root, "secret.key") });
      expect(readFileSync(join(root, "secret.key"), "utf8")).toBe(secret);
      expect(existsSync(join(runDir, "secret.key"))).toBe(false);
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    }
  }, 300_000);
});
