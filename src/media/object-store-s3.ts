import { rmSync } from "node:fs";
import { S3Client } from "bun";
import { checkKey, type ObjectStore } from "./object-store.ts";

export interface S3Location {
  /** `https://s3.eu-west-1.amazonaws.com`, `http://minio.internal:9000`, … */
  endpoint: string;
  bucket: string;
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Objects under this prefix of the bucket (e.g. `vsearch/`); default none. */
  prefix?: string;
  /** `https://bucket.host/key` instead of `https://host/bucket/key` (AWS); path-style is the default (MinIO, Garage, Ceph). */
  virtualHostedStyle?: boolean;
}

/** S3's "no such key" (404), as Bun's client reports it. */
const notFound = (e: unknown): boolean => {
  const err = e as { code?: string; name?: string; message?: string };
  return (
    err?.code === "NoSuchKey" ||
    err?.code === "ERR_S3_FILE_NOT_FOUND" ||
    /not ?found|NoSuchKey|404/i.test(err?.message ?? "")
  );
};

/**
 * An S3-compatible bucket as an object store, through Bun's built-in client (`Bun.S3Client`: no
 * SDK). Uploads of large files go in parts (Bun decides); reads are ranged GETs; playback can use
 * the bucket's presigned URLs directly (`presign`), so the bytes never pass through a server.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = "s3";
  private readonly client: S3Client;
  private readonly prefix: string;

  constructor(loc: S3Location) {
    this.client = new S3Client({
      endpoint: loc.endpoint,
      bucket: loc.bucket,
      region: loc.region ?? "us-east-1",
      accessKeyId: loc.accessKeyId,
      secretAccessKey: loc.secretAccessKey,
      virtualHostedStyle: loc.virtualHostedStyle ?? false,
    });
    this.prefix = loc.prefix ? checkKey(loc.prefix, "prefix").replace(/\/?$/, "/") : "";
  }

  private name(key: string): string {
    return this.prefix + checkKey(key);
  }

  async put(key: string, localFile: string): Promise<void> {
    // One PUT (or one multipart upload): S3 shows an object only once it is complete.
    await this.client.write(this.name(key), Bun.file(localFile));
  }

  async fetchTo(key: string, localFile: string): Promise<boolean> {
    // A GET of a missing key is not an error to Bun.write (it would write S3's error document): ask first.
    if (!(await this.stat(key))) return false;
    try {
      await Bun.write(localFile, this.client.file(this.name(key)));
      return true;
    } catch (e) {
      rmSync(localFile, { force: true });
      if (notFound(e)) return false; // deleted in between
      throw e;
    }
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      return { size: (await this.client.stat(this.name(key))).size };
    } catch (e) {
      if (notFound(e)) return null;
      throw e;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<ReadableStream<Uint8Array> | null> {
    if (!(await this.stat(key))) return null;
    const file = this.client.file(this.name(key));
    return (range ? file.slice(range.start, range.end + 1) : file).stream();
  }

  async list(prefix: string): Promise<string[]> {
    const want = this.prefix + checkKey(prefix, "prefix");
    const out: string[] = [];
    let continuationToken: string | undefined;
    // Bounded: 10 000 pages of up to 1 000 keys.
    for (let page = 0; page < 10_000; page++) {
      const r = await this.client.list({ prefix: want, continuationToken });
      for (const o of r.contents ?? []) out.push(o.key.slice(this.prefix.length));
      if (!r.isTruncated || !r.nextContinuationToken) break;
      continuationToken = r.nextContinuationToken;
    }
    return out.sort();
  }

  async delete(key: string): Promise<void> {
    await this.client.delete(this.name(key));
  }

  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.list(prefix);
    for (const k of keys) await this.client.delete(this.name(k));
    return keys.length;
  }

  presign(key: string, ttlSecs: number): string {
    return this.client.presign(this.name(key), { method: "GET", expiresIn: ttlSecs });
  }
}
