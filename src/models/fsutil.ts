/** File plumbing for the models folder: streaming hashes, copies, listings, atomic JSON, the lock. */
import { createHash } from "node:crypto";
import { closeSync, createReadStream, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../core/errors.ts";
import type { InstalledFile } from "./types.ts";
import { isHiddenPath } from "./types.ts";
import { isProcessAlive as alive } from "../core/process.ts";

const CHUNK = 1 << 20;

export async function hashFile(path: string): Promise<{ size: number; sha256: string }> {
  const h = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK })) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: h.digest("hex") };
}

/** Copies `src` to `dst` (parents created), hashing the bytes as they pass: one read per file. */
export async function copyHashed(src: string, dst: string): Promise<{ size: number; sha256: string }> {
  await mkdir(dirname(dst), { recursive: true });
  const h = createHash("sha256");
  let size = 0;
  const out = await open(dst, "w");
  try {
    for await (const chunk of createReadStream(src, { highWaterMark: CHUNK })) {
      h.update(chunk as Buffer);
      size += (chunk as Buffer).length;
      await out.write(chunk as Buffer);
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return { size, sha256: h.digest("hex") };
}

/**
 * Regular files under `root` as sorted `/` paths, hidden entries skipped. Symlinks are followed:
 * an operator's local folder may be a Hugging Face cache snapshot, which is all symlinks into
 * `blobs/` (tar members, which come from elsewhere, never get that trust; see tar.ts).
 */
export async function listFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string, depth: number) => {
    if (depth > 16) throw new AppError("INVALID_MODEL", `${join(root, rel)}: folders nested too deep`);
    for (const name of await readdir(join(root, rel))) {
      const p = rel ? `${rel}/${name}` : name;
      if (isHiddenPath(p)) continue;
      const s = await stat(join(root, p));
      if (s.isDirectory()) await walk(p, depth + 1);
      else if (s.isFile()) out.push(p);
    }
  };
  await walk("", 0);
  return out.sort();
}

export async function hashTree(root: string, paths: readonly string[]): Promise<InstalledFile[]> {
  const files: InstalledFile[] = [];
  for (const p of paths) files.push({ path: p, ...(await hashFile(join(root, p))) });
  return files;
}

/** Write to a temp file, fsync, rename over the target, fsync the folder: readers see old or new. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const fh = await open(tmp, "w", 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await syncDir(dirname(path));
}

/** Makes a rename durable. Some filesystems refuse fsync on a directory; that is not an error. */
export async function syncDir(dir: string): Promise<void> {
  try {
    const d = await open(dir, "r");
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    /* best effort */
  }
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

export async function sizeOf(path: string): Promise<number | null> {
  return stat(path).then(
    (s) => (s.isFile() ? s.size : null),
    () => null,
  );
}

/**
 * One changing `models` command per models folder (import, pull, activate): two concurrent pulls
 * would append to the same `.part` files and two registry writers would lose one's update. The
 * server only reads. A lock left by a dead process is taken over; a live holder fails fast (409).
 */
export async function withModelsLock<T>(modelsDir: string, fn: () => Promise<T>): Promise<T> {
  await mkdir(modelsDir, { recursive: true });
  const file = join(modelsDir, ".lock");
  let fd = -1;
  for (let attempt = 0; attempt < 3 && fd < 0; attempt++) {
    try {
      fd = openSync(file, "wx", 0o644);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const pid = Number.parseInt(readFileSync(file, "utf8").trim(), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new AppError(
          "MODELS_BUSY",
          `another vsearch models command (pid ${pid}) is changing ${modelsDir}; try again when it has finished (or delete ${file} if that process is not vsearch)`,
        );
      }
      // Our own pid is stale too: in a container every run may get the same pid, and a crashed
      // run must not lock the folder forever. Same-process overlap is refused by the caller.
      rmSync(file, { force: true });
    }
  }
  if (fd < 0) throw new AppError("MODELS_BUSY", `cannot take ${file}`);
  writeSync(fd, String(process.pid));
  closeSync(fd);
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}
