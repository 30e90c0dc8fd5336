import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

/**
 * Seals webhook secrets at rest with AES-256-GCM. The key is derived from the data dir's
 * secret.key (never stored in the database), so a leaked database file alone does not leak the
 * secrets receivers verify signatures with.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterSecret: Buffer) {
    this.key = createHmac("sha256", masterSecret).update("vsearch webhook secrets v1").digest();
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([c.update(plain, "utf8"), c.final()]);
    return `v1.${iv.toString("base64url")}.${body.toString("base64url")}.${c.getAuthTag().toString("base64url")}`;
  }

  open(sealed: string): string {
    const [v, iv, body, tag] = sealed.split(".");
    if (v !== "v1" || !iv || !body || !tag) throw new Error("unreadable sealed secret");
    const d = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    d.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([d.update(Buffer.from(body, "base64url")), d.final()]).toString("utf8");
  }
}
