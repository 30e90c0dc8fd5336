import { createReadStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import { Readable } from "node:stream";

/**
 * Where media objects live, by key (issue 26). A key is a stored path as the database holds it,
 * relative to the media root: `videos/<video_id>/source.mp4`, `videos/<video_id>/shots/3.jpg`. Two
 * implementations: `FsObjectStore`, a folder (the media root every node mounts), and
 * `S3ObjectStore` (object-store-s3.ts), an S3-compatible bucket through Bun's built-in client.
 *
 * The pipeline's tools (ffmpeg, ffprobe) read and write local files: a stage copies a source to
 * local scratch with `fetchTo`, writes its outputs there, and `put`s them. Playback either gets a
 * presigned URL of the store (`presign`; S3) or is proxied by the server (`read` with a range).
 * (Named ObjectStore: `MediaStore` is media-serving's row store.)
 */
export interface ObjectStore {
  readonly kind: "filesystem" | "s3";
  /** Copies the local file in under `key`, replacing what was there; readers never see half of it. */
  put(key: string, localFile: string): Promise<void>;
  /** Copies `key` to a local file (scratch for ffmpeg); false when there is no such object. */
  fetchTo(key: string, localFile: string): Promise<boolean>;
  /** The object's size, or null when there is none. */
  stat(key: string): Promise<{ size: number } | null>;
  /** The bytes `[start, end]` (inclusive; whole object without a range); null when there is none. */
  read(key: string, range?: { start: number; end: number }): Promise<ReadableStream<Uint8Array> | null>;
  /** Keys under `prefix` (e.g. `videos/<id>/`), sorted. */
  list(prefix: string): Promise<string[]>;
  /** Removes `key`; nothing when there is none. */
  delete(key: string): Promise<void>;
  /** Removes every key under `prefix` (a video's folder); returns how many went. */
  deletePrefix(prefix: string): Promise<number>;
  /** A URL a browser can GET for `ttlSecs` without credentials, or null: the server proxies it. */
  presign(key: string, ttlSecs: number): string | null;
}

/**
 * A key is relative, `/`-separated, without empty, `.` or `..` segments, control characters or a
 * backslash: the same string names the same object on a file system and in a bucket, and never
 * one outside the root. A prefix may end with `/`.
 */
export function checkKey(key: string, what: "key" | "prefix" = "key"): string {
  const body = what === "prefix" && key.endsWith("/") ? key.slice(0, -1) : key;
  const ok =
    body.length > 0 &&
    body.length <= 1024 &&
    !/[\u0000-\u001f\u007f\\]/.test(body) &&
    body.split("/").every((s) => s !== "" && s !== "." && s !== "..");
  if (!ok) throw new Error(`not a media object ${what}: ${JSON.stringify(key.slice(0, 200))}`);
  return key;
}

/** A folder as an object store: the media root (`media_root`), mounted on every node. */
export class FsObjectStore implements ObjectStore {
  readonly kind = "filesystem";
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private path(key: string): string {
    const p = resolve(this.root, checkKey(key));
    if (!p.startsWith(this.root + sep)) throw new Error("path escapes the media root");
    return p;
  }

  async put(key: string, localFile: string): Promise<void> {
    const dest = this.path(key);
    mkdirSync(dirname(dest), { recursive: true });
    // Copied next to its place and renamed: a reader on another node sees the old object or the whole new one.
    const tmp = `${dest}.${process.pid}.${Date.now()}.tmp`;
    try {
      await copyFile(localFile, tmp);
      renameSync(tmp, dest);
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  async fetchTo(key: string, localFile: string): Promise<boolean> {
    const from = this.path(key);
    if (!existsSync(from)) return false;
    mkdirSync(dirname(localFile), { recursive: true });
    await copyFile(from, localFile);
    return true;
  }

  async stat(key: string): Promise<{ size: number } | null> {
    const p = this.path(key);
    return existsSync(p) && statSync(p).isFile() ? { size: statSync(p).size } : null;
  }

  async read(key: string, range?: { start: number; end: number }): Promise<ReadableStream<Uint8Array> | null> {
    if (!(await this.stat(key))) return null;
    const stream = createReadStream(this.path(key), range ? { start: range.start, end: range.end } : {});
    return Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
  }

  async list(prefix: string): Promise<string[]> {
    checkKey(prefix, "prefix");
    // The deepest folder the prefix names whole; keys under it filtered by the prefix's rest.
    const base = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    const start = base ? resolve(this.root, base) : this.root;
    const out: string[] = [];
    const walk = (dir: string) => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) out.push(relative(this.root, p).split(sep).join("/"));
      }
    };
    walk(start);
    return out.filter((k) => k.startsWith(prefix)).sort();
  }

  async delete(key: string): Promise<void> {
    rmSync(this.path(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.list(prefix);
    for (const k of keys) rmSync(this.path(k), { force: true });
    // A whole folder named by the prefix goes with its (now empty) subfolders.
    if (prefix.endsWith("/")) rmSync(this.path(prefix.slice(0, -1)), { recursive: true, force: true });
    return keys.length;
  }

  presign(key: string): string | null {
    checkKey(key);
    return null;
  }
}
