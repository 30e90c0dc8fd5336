import { createHmac, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { constantTimeEqual } from "../core/crypto.ts";

/**
 * Presigned media URLs (SPEC §6): HMAC-SHA256 over `path\nexpires` with a server secret kept in
 * the data dir, so links work without an Authorization header (a <video> tag cannot send one)
 * and stop working at `expires`.
 */
export class UrlSigner {
  constructor(
    private readonly secret: Buffer,
    private readonly baseUrl: () => string,
    private readonly ttlSecs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private mac(path: string, expires: number): string {
    return createHmac("sha256", this.secret).update(`${path}\n${expires}`).digest("hex");
  }

  /** Absolute URL for `path` (which must start with `/`), valid for the configured TTL. */
  sign(path: string, ttlSecs = this.ttlSecs): string {
    const expires = Math.floor(this.now() / 1000) + ttlSecs;
    return `${this.baseUrl()}${path}?expires=${expires}&signature=${this.mac(path, expires)}`;
  }

  verify(path: string, expires: string | undefined, signature: string | undefined): "ok" | "bad" | "expired" {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return "bad";
    if (!constantTimeEqual(this.mac(path, Number(expires)), signature)) return "bad";
    return Number(expires) * 1000 < this.now() ? "expired" : "ok";
  }
}

/** Reads the signing secret, creating it (0600, atomic) on first use. */
export function loadOrCreateSecret(file: string): Buffer {
  if (existsSync(file)) return Buffer.from(readFileSync(file, "utf8").trim(), "hex");
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(tmp, randomBytes(32).toString("hex"), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  try {
    // link-then-rename would be stricter; a racing second writer just loses and we re-read.
    if (!existsSync(file)) renameSync(tmp, file);
  } finally {
    if (existsSync(tmp)) rmSync(tmp, { force: true });
  }
  return Buffer.from(readFileSync(file, "utf8").trim(), "hex");
}
