/**
 * The cluster secret (SPEC §13, signing/cluster-secret.ts): where it is read from, when it is
 * made, and what is refused. Every node of one install must end up with the same bytes, so it is
 * made once on the media root (link-if-absent: the first node wins), never made for an explicit
 * `secret_file`, and an install given a media root late carries its data dir's secret there.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { clusterSecretFile, loadClusterSecret } from "../../src/signing/cluster-secret.ts";
import { publishSecretFile } from "../../src/signing/url-signer.ts";
import { runCli } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp.ts";

const HEX = "ab".repeat(32);
const configOf = (dataDir: string, env: Record<string, string> = {}) => loadConfig({ dataDir }, env);

test("by default the media root is the data dir and the secret is <data-dir>/secret.key, made once (0600)", () => {
  const dir = tempDir("vsearch-secret-");
  const c = configOf(dir);
  expect(c.mediaRoot).toBe(dir);
  expect(clusterSecretFile(c)).toBe(join(dir, "secret.key"));
  const first = loadClusterSecret(c);
  expect(first).toMatchObject({ origin: "made", file: join(dir, "secret.key") });
  expect(first.secret).toHaveLength(32);
  expect(statSync(first.file).mode & 0o777).toBe(0o600);
  const again = loadClusterSecret(c);
  expect(again.origin).toBe("read");
  expect(again.secret.equals(first.secret)).toBe(true);
});

test("two nodes on one media root read one secret: the second to publish loses and reads the first's", () => {
  const root = tempDir("vsearch-secret-root-");
  const file = join(root, "secret.key");
  expect(publishSecretFile(file, HEX)).toBe(true);
  expect(publishSecretFile(file, "cd".repeat(32))).toBe(false);
  expect(readFileSync(file, "utf8")).toBe(HEX);
  const a = loadClusterSecret(configOf(tempDir("vsearch-node-"), { VSEARCH_MEDIA_ROOT: root }));
  const b = loadClusterSecret(configOf(tempDir("vsearch-node-"), { VSEARCH_MEDIA_ROOT: root }));
  expect(a.secret.toString("hex")).toBe(HEX);
  expect(b.secret.equals(a.secret)).toBe(true);
});

test("an install given a media root late carries its own secret there; a node whose data dir holds another is told", () => {
  const dir = tempDir("vsearch-old-install-");
  writeFileSync(join(dir, "secret.key"), HEX);
  const root = tempDir("vsearch-secret-root-");
  const carried = loadClusterSecret(configOf(dir, { VSEARCH_MEDIA_ROOT: root }));
  expect(carried).toMatchObject({ origin: "carried", file: join(root, "secret.key") });
  expect(readFileSync(join(root, "secret.key"), "utf8")).toBe(HEX);
  const other = tempDir("vsearch-other-node-");
  writeFileSync(join(other, "secret.key"), "cd".repeat(32));
  const told = loadClusterSecret(configOf(other, { VSEARCH_MEDIA_ROOT: root }));
  expect(told.secret.toString("hex")).toBe(HEX);
  expect(told.ignoredLocal).toBe(join(other, "secret.key"));
});

test("secret_file must exist and hold a secret; a media root that is not there is refused, not made", () => {
  const dir = tempDir("vsearch-secret-");
  const missing = join(dir, "nope", "cluster.key");
  expect(() => loadClusterSecret(configOf(dir, { VSEARCH_SECRET_FILE: missing }))).toThrow(
    `secret_file ${missing} does not exist`,
  );
  expect(existsSync(missing)).toBe(false);
  const short = join(dir, "short.key");
  writeFileSync(short, "abcd\n");
  expect(() => loadClusterSecret(configOf(dir, { VSEARCH_SECRET_FILE: short }))).toThrow(/at least 64 hex characters/);
  const given = join(dir, "given.key");
  writeFileSync(given, `${HEX}\n`);
  expect(loadClusterSecret(configOf(dir, { VSEARCH_SECRET_FILE: given })).secret.toString("hex")).toBe(HEX);
  expect(existsSync(join(dir, "secret.key"))).toBe(false);

  const unmounted = join(dir, "mnt", "media");
  expect(() => loadClusterSecret(configOf(dir, { VSEARCH_MEDIA_ROOT: unmounted }))).toThrow(
    `media_root ${unmounted} does not exist`,
  );
  expect(existsSync(unmounted)).toBe(false);
  mkdirSync(unmounted, { recursive: true });
  expect(loadClusterSecret(configOf(dir, { VSEARCH_MEDIA_ROOT: unmounted })).file).toBe(join(unmounted, "secret.key"));
});

test("restore refuses to unpack with a media root or secret file set: the files would land where no server reads them", async () => {
  const dir = tempDir("vsearch-restore-target-");
  const root = tempDir("vsearch-restore-root-");
  const archive = join(dir, "missing.tar");
  const r = await runCli(["--data-dir", join(dir, "data"), "restore", archive], { VSEARCH_MEDIA_ROOT: root });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("restore unpacks videos/ and secret.key into the data dir");
  expect(existsSync(join(dir, "data"))).toBe(false);
});

test("a command refused for its secret file ends at once, its store closed (on PostgreSQL an open pool would keep it alive)", async () => {
  const dir = tempDir("vsearch-secret-cli-");
  const missing = join(dir, "nope.key");
  const started = Date.now();
  const r = await runCli(["--data-dir", join(dir, "data"), "users", "list"], { VSEARCH_SECRET_FILE: missing });
  expect(r.code, r.stderr).toBe(1);
  expect(r.stderr).toContain(`secret_file ${missing} does not exist`);
  // runCli kills a process after its bound; a refused start ends in well under it (not killed).
  expect(Date.now() - started).toBeLessThan(30_000);
});
