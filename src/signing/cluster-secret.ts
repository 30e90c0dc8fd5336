import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Config, ConfigError } from "../config/config.ts";
import { publishSecretFile, readSecretFile } from "./url-signer.ts";

type SecretSettings = Pick<Config, "dataDir" | "mediaRoot" | "secretFile">;

/**
 * The cluster secret's file (SPEC §13): `secret_file` when set, else `secret.key` on the media
 * root — which, by default, is the data dir, so a single install keeps `<data-dir>/secret.key`.
 * Every node of one install must read the same secret: presigned URLs made by one server verify on
 * another, and webhook secrets one sealed, another opens (docs/SCALE-OUT.md).
 */
export const clusterSecretFile = (c: Pick<Config, "mediaRoot" | "secretFile">): string =>
  c.secretFile ?? join(c.mediaRoot, "secret.key");

export interface ClusterSecret {
  secret: Buffer;
  file: string;
  /** How it came to be read: already there, made now, or carried from `<data-dir>/secret.key`. */
  origin: "read" | "made" | "carried";
  /** A `<data-dir>/secret.key` that differs from the cluster's (an install moved onto a shared root late). */
  ignoredLocal?: string;
}

/**
 * Reads the cluster secret. An explicit `secret_file` must exist: made separately on every node it
 * would differ, so it is never made here. On the media root it is made once, atomically (the
 * first node to start wins, the others read it); when the media root is not the data dir and has
 * none yet, the data dir's own `secret.key` (an install that ran before it had a media root) is
 * carried there instead of a new one, so its links and sealed webhook secrets keep working.
 */
export function loadClusterSecret(c: SecretSettings): ClusterSecret {
  assertMediaRoot(c);
  const file = clusterSecretFile(c);
  try {
    if (c.secretFile) {
      if (!existsSync(file))
        throw new ConfigError(
          `secret_file ${file} does not exist: copy the cluster's secret there (every node needs the same one), or make it once with: openssl rand -hex 32 > ${file}; chmod 600 ${file}`,
        );
      return { secret: readSecretFile(file), file, origin: "read" };
    }
    const local = join(c.dataDir, "secret.key");
    const separate = resolve(local) !== resolve(file);
    let origin: ClusterSecret["origin"] = "read";
    if (!existsSync(file)) {
      const carry = separate && existsSync(local);
      const hex = carry ? readSecretFile(local).toString("hex") : randomBytes(32).toString("hex");
      if (publishSecretFile(file, hex)) origin = carry ? "carried" : "made";
    }
    const secret = readSecretFile(file);
    const ignoredLocal = separate && existsSync(local) && !readSecretFile(local).equals(secret) ? local : undefined;
    return { secret, file, origin, ...(ignoredLocal ? { ignoredLocal } : {}) };
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(`the cluster secret (${file}): ${(e as Error).message}`);
  }
}

/**
 * A `media_root` of its own must exist: made here, a share that is not mounted would become an
 * empty local folder, and this node would write media no other node sees.
 */
export function assertMediaRoot(c: Pick<Config, "dataDir" | "mediaRoot">): void {
  if (resolve(c.mediaRoot) === resolve(c.dataDir) || existsSync(c.mediaRoot)) return;
  throw new ConfigError(
    `media_root ${c.mediaRoot} does not exist: mount the shared media folder there (or create it), then start again`,
  );
}
