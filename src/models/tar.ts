/**
 * A small tar reader and writer, so importing and exporting models needs no host `tar` (an
 * appliance may not have one, or one with different flags). Reads ustar, pax and GNU long names,
 * plain or gzip (detected from the bytes, not the file name), streaming: a model's weights are
 * never held in memory. Extraction is deliberately strict: only regular files and folders; a
 * symlink, hard link, device or a path that is absolute or has `..` refuses the whole archive.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { AppError } from "../core/errors.ts";
import { checkRelPath, isHiddenPath, type InstalledFile } from "./types.ts";

const BLOCK = 512;
const MAX_ENTRIES = 10_000;
/** Largest size the 11 octal digits of a ustar header hold (8 GiB - 1). */
const USTAR_MAX_SIZE = 0o77777777777;

const bad = (file: string, why: string) => new AppError(400, "INVALID_MODEL", `${file}: ${why}`);

/** Pulls exact byte counts out of a stream of chunks. */
class ByteReader {
  private pending: Buffer = Buffer.alloc(0);
  constructor(private readonly it: AsyncIterator<Buffer>) {}

  /** Up to `max` bytes (at least one), or null at the end of the stream. */
  async read(max: number): Promise<Buffer | null> {
    if (this.pending.length === 0) {
      const next = await this.it.next();
      if (next.done) return null;
      this.pending = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    }
    const out = this.pending.subarray(0, max);
    this.pending = this.pending.subarray(out.length);
    return out;
  }

  /** `n` bytes; fewer if the stream ends part-way; null if it had already ended. */
  async exact(n: number): Promise<Buffer | null> {
    const parts: Buffer[] = [];
    let got = 0;
    while (got < n) {
      const b = await this.read(n - got);
      if (!b) return got === 0 ? null : Buffer.concat(parts, got);
      parts.push(b);
      got += b.length;
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts, n);
  }
}

function cstr(b: Buffer, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const end = s.indexOf(0);
  return s.subarray(0, end < 0 ? len : end).toString("utf8");
}

function num(b: Buffer, off: number, len: number): number {
  // GNU base-256 for values that do not fit in octal: high bit of the first byte set.
  if (b[off] & 0x80) {
    let v = b[off] & 0x7f;
    for (let i = 1; i < len; i++) v = v * 256 + b[off + i];
    return v;
  }
  const s = cstr(b, off, len).trim();
  if (s === "") return 0;
  if (!/^[0-7]+$/.test(s)) return Number.NaN;
  return Number.parseInt(s, 8);
}

function checksumOk(h: Buffer): boolean {
  const stored = num(h, 148, 8);
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const c = i >= 148 && i < 156 ? 0x20 : h[i];
    unsigned += c;
    signed += c > 127 ? c - 256 : c;
  }
  return stored === unsigned || stored === signed;
}

/** pax records: `<len> key=value\n`. Only `path` and `size` matter here. */
function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 0;
  while (off < data.length) {
    const sp = data.indexOf(0x20, off);
    if (sp < 0) break;
    const len = Number.parseInt(data.subarray(off, sp).toString("ascii"), 10);
    if (!Number.isInteger(len) || len <= 0 || off + len > data.length) break;
    const rec = data.subarray(sp + 1, off + len - 1).toString("utf8");
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    off += len;
  }
  return out;
}

async function openSource(file: string): Promise<AsyncIterator<Buffer>> {
  const fh = await open(file, "r").catch((e: NodeJS.ErrnoException) => {
    throw bad(file, e.code === "ENOENT" ? "no such file" : e.message);
  });
  const magic = Buffer.alloc(2);
  try {
    await fh.read(magic, 0, 2, 0);
  } finally {
    await fh.close();
  }
  const raw = createReadStream(file, { highWaterMark: 1 << 20 });
  if (magic[0] !== 0x1f || magic[1] !== 0x8b) return raw[Symbol.asyncIterator]();
  const gunzip = createGunzip();
  raw.on("error", (e) => gunzip.destroy(e));
  raw.pipe(gunzip);
  return gunzip[Symbol.asyncIterator]();
}

/**
 * Extracts `tarFile` into `dest` (which must exist and be empty) and returns every regular file
 * with its size and sha256 (hashed while written). Hidden members (`.git/…`, macOS `._x`) are
 * skipped; anything unsafe throws 400 INVALID_MODEL and leaves `dest` for the caller to delete.
 */
export async function extractTar(tarFile: string, dest: string): Promise<InstalledFile[]> {
  const reader = new ByteReader(await openSource(tarFile));
  const files = new Map<string, InstalledFile>();
  let longName: string | null = null;
  let pax: Record<string, string> = {};
  let entries = 0;
  try {
    for (;;) {
      const h = await reader.exact(BLOCK);
      if (h === null || h.length < BLOCK) {
        if (h === null && entries > 0) break; // some writers omit the two zero blocks
        throw bad(tarFile, entries === 0 ? "empty or not a tar archive" : "truncated tar archive");
      }
      if (h.every((b) => b === 0)) break;
      if (++entries > MAX_ENTRIES) throw bad(tarFile, `more than ${MAX_ENTRIES} entries`);
      if (!checksumOk(h)) throw bad(tarFile, entries === 1 ? "not a tar archive (bad header checksum)" : "corrupt tar header (bad checksum)");
      const type = String.fromCharCode(h[156] || 0x30);
      const magic = h.subarray(257, 263).toString("latin1");
      const prefix = magic === "ustar\0" ? cstr(h, 345, 155) : "";
      const headerName = prefix ? `${prefix}/${cstr(h, 0, 100)}` : cstr(h, 0, 100);
      const size = pax.size !== undefined ? Number(pax.size) : num(h, 124, 12);
      if (!Number.isSafeInteger(size) || size < 0) throw bad(tarFile, `entry "${headerName}" has an invalid size`);
      const padded = Math.ceil(size / BLOCK) * BLOCK;

      // Metadata entries describe the next header.
      if (type === "x" || type === "g" || type === "L" || type === "K") {
        if (size > 1 << 20) throw bad(tarFile, "oversized extended header");
        const data = await reader.exact(padded);
        if (data === null || data.length < padded) throw bad(tarFile, "truncated tar archive");
        if (type === "x") pax = parsePax(data.subarray(0, size));
        if (type === "L") longName = cstr(data, 0, size);
        continue;
      }
      const name = pax.path ?? longName ?? headerName;
      pax = {};
      longName = null;

      const checked = checkRelPath(name);
      if (!checked.ok) {
        if (name === "." || name === "./" || name === "") {
          if (type === "5") continue; // the archive root folder itself
        }
        throw bad(tarFile, `refusing entry "${name}": ${checked.reason}`);
      }
      const path = checked.path;
      if (type === "1" || type === "2") throw bad(tarFile, `refusing entry "${name}": links are not allowed in a model archive`);
      if (type === "5") {
        await skip(reader, padded, tarFile);
        if (!isHiddenPath(path)) await mkdir(join(dest, path), { recursive: true });
        continue;
      }
      if (type !== "0" && type !== "7") throw bad(tarFile, `refusing entry "${name}": unsupported type '${type}' (only files and folders)`);
      if (isHiddenPath(path)) {
        await skip(reader, padded, tarFile);
        continue;
      }
      files.set(path, await writeEntry(reader, join(dest, path), path, size, padded, tarFile));
    }
  } catch (e) {
    if (e instanceof AppError) throw e;
    const err = e as NodeJS.ErrnoException;
    if (err.code === "Z_DATA_ERROR" || err.code === "Z_BUF_ERROR" || /unexpected end/i.test(err.message)) {
      throw bad(tarFile, `corrupt or truncated gzip data (${err.message})`);
    }
    if (err.code === "ENOTDIR" || err.code === "EISDIR" || err.code === "EEXIST") throw bad(tarFile, `conflicting entries: ${err.message}`);
    throw e;
  }
  return [...files.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

async function skip(reader: ByteReader, n: number, tarFile: string): Promise<void> {
  let left = n;
  while (left > 0) {
    const b = await reader.read(Math.min(left, 1 << 20));
    if (!b) throw bad(tarFile, "truncated tar archive");
    left -= b.length;
  }
}

async function writeEntry(reader: ByteReader, target: string, path: string, size: number, padded: number, tarFile: string): Promise<InstalledFile> {
  await mkdir(dirname(target), { recursive: true });
  const h = createHash("sha256");
  const out = await open(target, "w", 0o644);
  try {
    let left = size;
    while (left > 0) {
      const b = await reader.read(Math.min(left, 1 << 20));
      if (!b) throw bad(tarFile, `truncated tar archive (in "${path}")`);
      h.update(b);
      await out.write(b);
      left -= b.length;
    }
  } finally {
    await out.close();
  }
  await skip(reader, padded - size, tarFile);
  return { path, size, sha256: h.digest("hex") };
}

// ---------------------------------------------------------------- writer

export type TarInput = { path: string; data: Uint8Array } | { path: string; file: string; size: number };

function octal(buf: Buffer, off: number, len: number, value: number): void {
  buf.write(value.toString(8).padStart(len - 1, "0") + "\0", off, len, "ascii");
}

/** Splits a long path into ustar prefix (≤155) + name (≤100) at a `/`, or null if impossible. */
function splitUstar(path: string): { prefix: string; name: string } | null {
  if (Buffer.byteLength(path) <= 100) return { prefix: "", name: path };
  for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name.length > 0) return { prefix, name };
  }
  return null;
}

function header(path: string, size: number, type: "0" | "x", mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const split = splitUstar(path) ?? { prefix: "", name: path.slice(0, 100) };
  h.write(split.name, 0, 100, "utf8");
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, Math.min(size, USTAR_MAX_SIZE));
  octal(h, 136, 12, mtime);
  h.fill(0x20, 148, 156);
  h.write(type, 156, 1, "ascii");
  h.write("ustar\0", 257, 6, "latin1");
  h.write("00", 263, 2, "ascii");
  h.write(split.prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8, "ascii");
  return h;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

const pad = (size: number) => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

async function* tarStream(inputs: TarInput[], mtime: number, hashes: Map<string, InstalledFile>): AsyncGenerator<Buffer> {
  for (const input of inputs) {
    const size = "data" in input ? input.data.length : input.size;
    // pax header when the path does not fit ustar or the size does not fit 11 octal digits.
    if (!splitUstar(input.path) || size > USTAR_MAX_SIZE) {
      const records = Buffer.from(paxRecord("path", input.path) + (size > USTAR_MAX_SIZE ? paxRecord("size", String(size)) : ""), "utf8");
      yield header(`PaxHeaders/${input.path.slice(-80)}`, records.length, "x", mtime);
      yield records;
      yield pad(records.length);
    }
    yield header(input.path, size, "0", mtime);
    const h = createHash("sha256");
    let written = 0;
    if ("data" in input) {
      h.update(input.data);
      written = input.data.length;
      yield Buffer.from(input.data);
    } else {
      for await (const chunk of createReadStream(input.file, { highWaterMark: 1 << 20 })) {
        const b = chunk as Buffer;
        // Never write more than the header promised: a file that grew would corrupt the archive.
        const take = b.subarray(0, Math.max(0, size - written));
        h.update(take);
        written += take.length;
        yield take;
      }
    }
    if (written !== size) throw new AppError(409, "MODEL_HASH_MISMATCH", `${input.path} changed size while being archived (${written} of ${size} bytes)`);
    hashes.set(input.path, { path: input.path, size, sha256: h.digest("hex") });
    yield pad(size);
  }
  yield Buffer.alloc(BLOCK * 2);
}

/**
 * Writes a ustar archive (gzip-compressed when `gzip`) to `out` and returns the sha256 of every
 * member as written, so the caller can check them against what it expected before publishing.
 */
export async function writeTar(out: string, inputs: TarInput[], opts: { gzip: boolean; mtime?: number }): Promise<Map<string, InstalledFile>> {
  const hashes = new Map<string, InstalledFile>();
  const source = Readable.from(tarStream(inputs, Math.floor(opts.mtime ?? 0), hashes), { objectMode: false });
  if (opts.gzip) await pipeline(source, createGzip(), createWriteStream(out));
  else await pipeline(source, createWriteStream(out));
  return hashes;
}
