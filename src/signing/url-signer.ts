import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
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
    // Bun's own HMAC: the same digest as node:crypto's createHmac at a third of its cost, which
    // counts here: a search answer signs a link per video and shot thumbnail on its page.
    return new Bun.CryptoHasher("sha256", this.secret).update(`${path}\n${expires}`).digest("hex");
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

/**
 * Reads the signing secret, creating it (0600) on first use. Atomic across processes and machines
 * sharing the folder: the new secret is hard-linked into place, which fails if another process
 * (another node on a shared media root) made it first; then everybody reads that one.
 */
export function loadOrCreateSecret(file: string): Buffer {
  if (!existsSync(file)) publishSecretFile(file, randomBytes(32).toString("hex"));
  return readSecretFile(file);
}

/** Writes `hex` to `file` unless it exists (link-if-absent); returns whether this call made it. */
export function publishSecretFile(file: string, hex: string): boolean {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(tmp, hex, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    // A file system without hard links: a racing second writer may then win, and we re-read.
    if (existsSync(file)) return false;
    renameSync(tmp, file);
    return true;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The secret in `file`: hex text of at least 32 bytes; anything else is refused, saying so. */
export function readSecretFile(file: string): Buffer {
  const text = readFileSync(file, "utf8").trim();
  if (!/^(?:[0-9a-fA-F]{2}){32,}$/.test(text))
    throw new Error(
      `${file} is not a vsearch secret: it must hold at least 64 hex characters (e.g. the output of openssl rand -hex 32)`,
    );
  return Buffer.from(text, "hex");
}
