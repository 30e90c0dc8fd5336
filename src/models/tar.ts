/**
 * Reading and writing model archives, so importing and exporting models needs no host `tar` (an
 * appliance may not have one, or one with different flags). The format work is `tar-stream`'s
 * (ustar, pax and GNU long names, GNU base-256 sizes; extended headers capped); this file adds
 * gzip detection from the bytes (not the file name), streaming to disk with a sha256 per file (a
 * model's weights are never held in memory), and strict extraction: only regular files and
 * folders; a symlink, hard link, device or a path that is absolute or has `..` refuses the whole
 * archive.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, statfs } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { once } from "node:events";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { extract as tarExtract, type Header, pack as tarPack } from "tar-stream";
import { AppError } from "../core/errors.ts";
import { checkRelPath, isHiddenPath, type InstalledFile } from "./types.ts";

const MAX_ENTRIES = 10_000;

/**
 * Bounds checked while an archive streams, so a bomb stops early instead of after the disk is
 * full (a 3.2 GB write before any check, issue 21):
 * - every entry's declared size, before a byte of it is written, against what is left of
 *   `maxBytes` (all entries together; default 64 GiB, far above any model) and the free space of
 *   the destination's filesystem;
 * - for a gzip archive, the expansion: past `ratioAfterBytes` written, more than `maxRatio` bytes
 *   out per byte in is refused. Model weights barely compress (ONNX int8 ~1.1×, fp32 ~1.1×;
 *   tokenizer JSON ~4×), a tar of zeros is ~1000×.
 */
export interface ExtractLimits {
  maxBytes: number;
  maxRatio: number;
  ratioAfterBytes: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxBytes: 64 * 1024 ** 3,
  maxRatio: 50,
  ratioAfterBytes: 64 * 1024 ** 2,
};

const bad = (file: string, why: string) => new AppError("INVALID_MODEL", `${file}: ${why}`);

async function openSource(file: string): Promise<{ stream: Readable; compressedBytes: () => number | null }> {
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
  if (magic[0] !== 0x1f || magic[1] !== 0x8b) return { stream: raw, compressedBytes: () => null };
  const gunzip = createGunzip();
  raw.on("error", (e) => gunzip.destroy(e));
  return { stream: raw.pipe(gunzip), compressedBytes: () => raw.bytesRead };
}

/** tar-stream's and zlib's errors as the archive's fault, in this module's words. */
function archiveError(tarFile: string, e: unknown, entries: number): unknown {
  if (e instanceof AppError) return e;
  const err = e as NodeJS.ErrnoException;
  if (err.code === "Z_DATA_ERROR" || err.code === "Z_BUF_ERROR" || /unexpected end of file/i.test(err.message)) {
    return bad(tarFile, `corrupt or truncated gzip data (${err.message})`);
  }
  if (/unexpected end of data/i.test(err.message))
    return bad(
      tarFile,
      entries === 0 ? "empty or not a tar archive (it ends inside the first header)" : "truncated tar archive",
    );
  if (/invalid tar header|invalid header/i.test(err.message)) {
    return bad(
      tarFile,
      entries === 0 ? "not a tar archive (bad header checksum)" : "corrupt tar header (bad checksum)",
    );
  }
  if (/header exceeds max size/i.test(err.message)) return bad(tarFile, "oversized extended header");
  if (err.code === "ENOTDIR" || err.code === "EISDIR" || err.code === "EEXIST")
    return bad(tarFile, `conflicting entries: ${err.message}`);
  return e;
}

/**
 * Extracts `tarFile` into `dest` (which must exist and be empty) and returns every regular file
 * with its size and sha256 (hashed while written). Hidden members (`.git/…`, macOS `._x`) are
 * skipped; anything unsafe throws 400 INVALID_MODEL and leaves `dest` for the caller to delete.
 */
export async function extractTar(
  tarFile: string,
  dest: string,
  limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
): Promise<InstalledFile[]> {
  const { stream: source, compressedBytes } = await openSource(tarFile);
  let written = 0;
  /** Throws before or while bytes are written past a bound (see ExtractLimits). */
  const checkBounds = (name: string, more: number) => {
    if (written + more > limits.maxBytes)
      throw bad(tarFile, `"${name}" would take the archive past ${limits.maxBytes} bytes; refused before writing it`);
    const packed = compressedBytes();
    if (packed !== null && written + more > limits.ratioAfterBytes && written + more > packed * limits.maxRatio)
      throw bad(
        tarFile,
        `expands more than ${limits.maxRatio}× (${written + more} bytes from ${packed} read): a decompression bomb, not model weights; stopped`,
      );
  };
  const ex = tarExtract();
  source.on("error", (e) => ex.destroy(e));
  source.pipe(ex as unknown as Writable);
  // The cause of a failure is the extractor's own error (an entry stream only says "destroyed").
  let cause: unknown = null;
  ex.on("error", (e) => (cause ??= e));
  const files = new Map<string, InstalledFile>();
  let entries = 0;
  try {
    for await (const entry of ex) {
      const { name, type, size } = entry.header;
      if (++entries > MAX_ENTRIES) throw bad(tarFile, `more than ${MAX_ENTRIES} entries`);
      const checked = checkRelPath(name);
      if (!checked.ok) {
        if ((name === "." || name === "./" || name === "") && type === "directory") {
          entry.resume();
          continue; // the archive root folder itself
        }
        throw bad(tarFile, `refusing entry "${name}": ${checked.reason}`);
      }
      const path = checked.path;
      if (type === "symlink" || type === "link")
        throw bad(tarFile, `refusing entry "${name}": links are not allowed in a model archive`);
      if (type === "directory") {
        entry.resume();
        if (!isHiddenPath(path)) await mkdir(join(dest, path), { recursive: true });
        continue;
      }
      if (type !== "file" && type !== "contiguous-file")
        throw bad(tarFile, `refusing entry "${name}": unsupported type '${type}' (only files and folders)`);
      if (!Number.isSafeInteger(size) || (size ?? -1) < 0) throw bad(tarFile, `entry "${name}" has an invalid size`);
      if (isHiddenPath(path)) {
        entry.resume();
        continue;
      }
      if (written + size! > limits.maxBytes) checkBounds(name, size!);
      const free = await freeBytes(dest);
      if (free !== null && size! > free)
        throw bad(tarFile, `"${name}" is ${size} bytes and the disk has ${free} free; refused before writing it`);
      files.set(
        path,
        await writeEntry(entry as AsyncIterable<Buffer>, join(dest, path), path, size!, tarFile, (n) => {
          checkBounds(name, n);
          written += n;
        }),
      );
    }
  } catch (e) {
    if (!(e instanceof AppError) && cause === null) await new Promise((r) => setImmediate(r)); // let the extractor report first
    throw archiveError(tarFile, e instanceof AppError ? e : (cause ?? e), entries);
  } finally {
    source.destroy();
  }
  if (entries === 0) throw bad(tarFile, "empty or not a tar archive");
  return [...files.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

async function writeEntry(
  entry: AsyncIterable<Buffer>,
  target: string,
  path: string,
  size: number,
  tarFile: string,
  onBytes: (n: number) => void,
): Promise<InstalledFile> {
  await mkdir(dirname(target), { recursive: true });
  const h = createHash("sha256");
  const out = await open(target, "w", 0o644);
  let got = 0;
  try {
    for await (const b of entry) {
      onBytes(b.length); // throws past a bound: nothing more is written
      h.update(b);
      await out.write(b);
      got += b.length;
    }
  } finally {
    await out.close();
  }
  if (got !== size) throw bad(tarFile, `truncated tar archive (in "${path}")`);
  return { path, size, sha256: h.digest("hex") };
}

/** Free bytes on the filesystem holding `dir` (null where statfs is not available). */
async function freeBytes(dir: string): Promise<number | null> {
  try {
    const s = await statfs(dir);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- writer

export type TarInput = { path: string; data: Uint8Array } | { path: string; file: string; size: number };

async function put(sink: Writable, chunk: Buffer): Promise<void> {
  if (!sink.write(chunk)) await once(sink, "drain");
}

/**
 * Writes a ustar archive (pax headers for long paths; gzip-compressed when `gzip`) to `out` and
 * returns the sha256 of every member as written, so the caller can check them against what it
 * expected before publishing.
 */
export async function writeTar(
  out: string,
  inputs: TarInput[],
  opts: { gzip: boolean; mtime?: number },
): Promise<Map<string, InstalledFile>> {
  const hashes = new Map<string, InstalledFile>();
  const p = tarPack();
  const packed = p as unknown as Readable;
  const written = opts.gzip
    ? pipeline(packed, createGzip(), createWriteStream(out))
    : pipeline(packed, createWriteStream(out));
  const mtime = new Date(Math.floor(opts.mtime ?? 0) * 1000);
  try {
    for (const input of inputs) {
      const size = "data" in input ? input.data.length : input.size;
      const header = { name: input.path, size, mode: 0o644, uid: 0, gid: 0, mtime, type: "file" } as Header;
      const sink = p.entry(header) as unknown as Writable;
      const h = createHash("sha256");
      let n = 0;
      if ("data" in input) {
        h.update(input.data);
        n = input.data.length;
        await put(sink, Buffer.from(input.data));
      } else {
        for await (const chunk of createReadStream(input.file, { highWaterMark: 1 << 20 })) {
          // Never write more than the header promised: a file that grew would corrupt the archive.
          const take = (chunk as Buffer).subarray(0, Math.max(0, size - n));
          h.update(take);
          n += take.length;
          if (take.length) await put(sink, take);
        }
      }
      if (n !== size)
        throw new AppError(
          "MODEL_FILES_CHANGED",
          `${input.path} changed size while being archived (${n} of ${size} bytes)`,
        );
      sink.end();
      hashes.set(input.path, { path: input.path, size, sha256: h.digest("hex") });
    }
    p.finalize();
    await written;
  } catch (e) {
    p.destroy(e as Error);
    await written.catch(() => {});
    throw e;
  }
  return hashes;
}
