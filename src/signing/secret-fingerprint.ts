import { createHmac, timingSafeEqual } from "node:crypto";
import { ConfigError } from "../config/config.ts";
import type { Executor } from "../store/executor.ts";

/** The fixed label the fingerprint is an HMAC of; changing it changes every stored fingerprint. */
const LABEL = "vsearch cluster secret fingerprint v1";
const KEY = "secret_fingerprint";

/**
 * What the database keeps of the cluster secret (issue 26): HMAC-SHA256 of a fixed label keyed by
 * the secret, hex. It says whether two nodes hold the same secret and nothing about the secret
 * itself (a plain hash of it would be a target for guessing; this needs the secret to compute).
 */
export function secretFingerprint(secret: Buffer): string {
  return createHmac("sha256", secret).update(LABEL).digest("hex");
}

/** The `cluster_meta` rows (migration 015 / PostgreSQL 009) that hold the fingerprint. */
export class SecretFingerprintStore {
  constructor(private readonly db: Executor) {}

  async get(): Promise<string | null> {
    const row = await this.db.get<{ value: string }>("SELECT value FROM cluster_meta WHERE key = ?1", KEY);
    return row?.value ?? null;
  }

  /** Writes it unless one is there (two first nodes starting at once: one wins); the stored one. */
  async claim(fingerprint: string): Promise<string> {
    await this.db.run(
      "INSERT INTO cluster_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
      KEY,
      fingerprint,
    );
    return (await this.get())!;
  }

  /** Replaces it (`vsearch secret adopt`: the cluster's secret is lost for good). */
  async replace(fingerprint: string): Promise<void> {
    await this.db.run(
      "INSERT INTO cluster_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      KEY,
      fingerprint,
    );
  }
}

/**
 * This node's secret against the install's: the first process to open the database records the
 * fingerprint; every later one must match it. A node with another secret would sign presigned
 * URLs and seal webhook secrets no other node verifies, so it refuses to start, naming the file.
 * Returns whether the fingerprint was written now.
 */
export async function checkClusterSecret(
  store: SecretFingerprintStore,
  secret: Buffer,
  file: string,
): Promise<"recorded" | "matched"> {
  const mine = secretFingerprint(secret);
  const before = await store.get();
  const theirs = before ?? (await store.claim(mine));
  if (theirs.length !== mine.length || !timingSafeEqual(Buffer.from(theirs), Buffer.from(mine)))
    throw new ConfigError(
      `the cluster secret in ${file} is not the one this database was started with (its fingerprint differs): ` +
        "links this node signs and webhook secrets it seals would not work on the other nodes. Put the install's secret file there " +
        "(copy it from a node that runs, or restore it from a backup) and start again; if it is lost for good, `vsearch secret adopt` " +
        "makes this one the install's (presigned links and sealed webhook secrets made with the old one stop working)",
    );
  return before === null ? "recorded" : "matched";
}
