/**
 * The cluster secret's fingerprint in the database (issue 26): the first start records an HMAC of
 * a fixed label keyed by the secret (never the secret, nor a plain hash of it); a node whose
 * secret matches starts; one with another secret (a `secret_file` of its own) refuses to start,
 * in process and as a real `vsearch serve`, naming the file and what to do; `vsearch secret adopt
 * --yes` makes a new secret the install's when the old one is lost. On both backends.
 */
import { createHash, createHmac } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { startTestApp, type TestApp } from "../helpers/app.ts";
import { runCli } from "../helpers/cli.ts";
import { databaseFilesContain } from "../helpers/stores.ts";
import { tempDir } from "../helpers/temp.ts";

const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps.reverse()) await t.close().catch(() => {});
});
const elsewhere = tempDir("vsearch-fingerprint-secret-");
const hmac = (hex: string) =>
  createHmac("sha256", Buffer.from(hex, "hex")).update("vsearch cluster secret fingerprint v1").digest("hex");

test("the first start records the fingerprint; the same secret starts; another is refused with the file named; adopt takes it", async () => {
  const first = await startTestApp({}, { prefix: "vsearch-fingerprint-" });
  apps.push(first);
  const hex = readFileSync(join(first.dir, "secret.key"), "utf8").trim();
  expect(await first.stores.secretFingerprint.get()).toBe(hmac(hex));
  // Neither the secret nor a plain hash of it is in the database.
  const raw = Buffer.from(hex, "hex");
  for (const leak of [
    hex,
    createHash("sha256").update(raw).digest("hex"),
    createHash("sha256").update(hex).digest("hex"),
  ])
    expect(databaseFilesContain(first.dir, leak)).toBe(false);

  // Another node with the same secret (here: the same file, another node id) starts.
  const same = await startTestApp({}, { dataDir: first.dir, nodeId: "node_00000000000000f2", role: "serve" });
  apps.push(same);
  await same.app.start();

  // A node whose secret_file holds another secret: refused before it signs anything.
  const other = join(elsewhere, "other.key");
  writeFileSync(other, `${"ab".repeat(32)}\n`, { mode: 0o600 });
  const message =
    `configuration: the cluster secret in ${other} is not the one this database was started with (its fingerprint differs): ` +
    "links this node signs and webhook secrets it seals would not work on the other nodes.";
  await expect(
    startTestApp({ VSEARCH_SECRET_FILE: other }, { dataDir: first.dir, nodeId: "node_00000000000000f3" }),
  ).rejects.toThrow(message.replace("configuration: ", ""));
  const cli = await runCli(["--data-dir", first.dir, "serve", "--port", "0"], { VSEARCH_SECRET_FILE: other });
  expect(cli.code).toBe(1);
  expect(cli.stderr.startsWith(`error: ${message}`)).toBe(true);
  expect(cli.stderr).toContain("`vsearch secret adopt`");
  expect(cli.stderr.trim().split("\n")).toHaveLength(1);
  expect(await first.stores.secretFingerprint.get()).toBe(hmac(hex)); // unchanged by the refusal

  // The old secret lost for good: adopt (confirmed) makes this one the install's; then it starts.
  const unconfirmed = await runCli(["--data-dir", first.dir, "secret", "adopt"], { VSEARCH_SECRET_FILE: other });
  expect(unconfirmed.code).toBe(1);
  expect(unconfirmed.stderr).toMatch(/Run again with --yes/);
  expect(await first.stores.secretFingerprint.get()).toBe(hmac(hex));
  const adopted = await runCli(["--data-dir", first.dir, "secret", "adopt", "--yes"], { VSEARCH_SECRET_FILE: other });
  expect(adopted.code).toBe(0);
  expect(await first.stores.secretFingerprint.get()).toBe(hmac("ab".repeat(32)));
  const now = await startTestApp(
    { VSEARCH_SECRET_FILE: other },
    { dataDir: first.dir, nodeId: "node_00000000000000f4" },
  );
  apps.push(now);
}, 180_000);
