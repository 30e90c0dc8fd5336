import { existsSync, readFileSync, rmSync } from "node:fs";
import { S3Client } from "bun";
import { type Config, ConfigError } from "../config/config.ts";
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
  private readonly where: string;

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
    this.where = `s3://${loc.bucket}/${this.prefix} at ${new URL(loc.endpoint).origin}`;
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

  /**
   * One listing under a prefix nothing is stored at: throws what the bucket answers (unreachable,
   * no such bucket, keys refused). (An empty answer: s3rver fails a listing it has to truncate.)
   */
  async probe(): Promise<void> {
    await this.client.list({ prefix: `${this.prefix}.vsearch-probe/`, maxKeys: 1 });
  }

  /** `s3://bucket/prefix` at the endpoint, for logs and doctor (never the keys). */
  get description(): string {
    return this.where;
  }
}

/** Where presigned URLs point: the endpoint's origin, with the bucket as a subdomain in virtual-hosted style. */
function originOf(endpoint: string, bucket: string, virtualHosted: boolean): string {
  const url = new URL(endpoint);
  if (virtualHosted) url.hostname = `${bucket}.${url.hostname}`;
  return url.origin;
}

/** The origin the bucket's presigned URLs have, or null without a bucket (the dashboard's CSP allows it). */
export function bucketOrigin(c: Pick<Config, "s3Bucket" | "s3Endpoint" | "s3UrlStyle">): string | null {
  return c.s3Bucket && c.s3Endpoint ? originOf(c.s3Endpoint, c.s3Bucket, c.s3UrlStyle === "virtual-hosted") : null;
}

type S3Settings = Pick<
  Config,
  | "s3Bucket"
  | "s3Endpoint"
  | "s3Region"
  | "s3Prefix"
  | "s3AccessKeyId"
  | "s3SecretAccessKey"
  | "s3SecretAccessKeyFile"
  | "s3UrlStyle"
>;

/**
 * The bucket the settings name (`s3_bucket` and its companions), or null when none is set: the
 * media are plain files on the media root. A bucket without its endpoint or keys is refused here,
 * at start, with the settings to add; the secret comes from the environment or a file.
 */
export function bucketFromConfig(c: S3Settings): S3ObjectStore | null {
  if (!c.s3Bucket) {
    const stray = c.s3Endpoint ? "s3_endpoint" : c.s3AccessKeyId ? "s3_access_key_id" : null;
    if (stray)
      throw new ConfigError(
        `${stray} is set but s3_bucket (VSEARCH_S3_BUCKET) is not: set the bucket too, or unset ${stray}`,
      );
    return null;
  }
  const need = [
    c.s3Endpoint ? null : "s3_endpoint (VSEARCH_S3_ENDPOINT)",
    c.s3AccessKeyId ? null : "s3_access_key_id (VSEARCH_S3_ACCESS_KEY_ID)",
    c.s3SecretAccessKey || c.s3SecretAccessKeyFile
      ? null
      : "the secret key (VSEARCH_S3_SECRET_ACCESS_KEY, or s3_secret_access_key_file)",
  ].filter((x): x is string => x !== null);
  if (need.length) throw new ConfigError(`s3_bucket is set; it also needs ${need.join(", ")}`);
  let secret = c.s3SecretAccessKey;
  if (!secret) {
    const file = c.s3SecretAccessKeyFile!;
    if (!existsSync(file)) throw new ConfigError(`s3_secret_access_key_file ${file} does not exist`);
    secret = readFileSync(file, "utf8").trim();
    if (!secret) throw new ConfigError(`s3_secret_access_key_file ${file} is empty`);
  }
  return new S3ObjectStore({
    endpoint: c.s3Endpoint!.replace(/\/$/, ""),
    bucket: c.s3Bucket,
    region: c.s3Region,
    prefix: c.s3Prefix,
    accessKeyId: c.s3AccessKeyId!,
    secretAccessKey: secret,
    virtualHostedStyle: c.s3UrlStyle === "virtual-hosted",
  });
}
