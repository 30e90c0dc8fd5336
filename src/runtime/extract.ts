import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { threadId } from "node:worker_threads";

/**
 * Copying embedded files out of the binary (`/$bunfs/…`, readable only through Bun.file and
 * readFileSync/statSync, not through file descriptors) to real files that the OS can exec and
 * dlopen. Written for concurrent callers: each writer uses its own temp name (pid + thread id +
 * random: worker threads share the pid) and publishes with rename(2), which replaces atomically,
 * so a reader sees either no file or a complete one, never a partial one. Two racing writers both
 * succeed; the second rename replaces identical bytes, and a process that already mapped the first
 * copy keeps its inode.
 */

export interface ExtractJob {
  /** The file to copy: an embedded `/$bunfs/…` path or an ordinary file. */
  source: string;
  /** Path relative to the extraction folder. */
  target: string;
  /** Mode 0755 (checked on later starts) instead of 0644. */
  executable: boolean;
}

export interface ExtractResult {
  path: string;
  /** True when this call wrote the file; false when a matching copy was already there. */
  written: boolean;
}

/** Bytes read from each end of a file for its fingerprint. */
const SAMPLE_BYTES = 64 * 1024;
/** Temp files older than this are leftovers of a crashed writer and are removed. */
const STALE_TEMP_MS = 10 * 60 * 1000;

/**
 * A cheap identity for a large file: its size plus a SHA-256 of its first and last 64 KiB. ELF
 * headers, the build-id note and the section table live in those ranges, so two different builds
 * of a tool practically never share one, and a truncated copy never does. Costs two small reads.
 */
export async function fingerprint(path: string): Promise<string> {
  const size = statSync(path).size;
  const file = Bun.file(path);
  const hash = createHash("sha256").update(String(size));
  hash.update(new Uint8Array(await file.slice(0, Math.min(size, SAMPLE_BYTES)).arrayBuffer()));
  if (size > SAMPLE_BYTES)
    hash.update(new Uint8Array(await file.slice(Math.max(SAMPLE_BYTES, size - SAMPLE_BYTES), size).arrayBuffer()));
  return `${size}:${hash.digest("hex").slice(0, 32)}`;
}

function currentCopy(path: string, executable: boolean): { size: number } | null {
  try {
    const st = statSync(path);
    if (!st.isFile()) return null;
    if (executable && (st.mode & 0o111) !== 0o111) return null;
    return { size: st.size };
  } catch {
    return null;
  }
}

function tempName(dest: string): string {
  return join(dirname(dest), `.${basename(dest)}.tmp-${process.pid}-${threadId}-${randomBytes(6).toString("hex")}`);
}

function removeStaleTemps(dest: string, now: number): void {
  const prefix = `.${basename(dest)}.tmp-`;
  for (const name of readdirSync(dirname(dest))) {
    if (!name.startsWith(prefix)) continue;
    const p = join(dirname(dest), name);
    try {
      if (now - statSync(p).mtimeMs > STALE_TEMP_MS) rmSync(p, { force: true });
    } catch {
      // another process removed or renamed it first
    }
  }
}

/**
 * Makes `<dir>/<job.target>` a copy of `job.source`. A copy whose size and fingerprint match is
 * left alone (the cost of a later start: one stat and two small reads per file); a missing,
 * truncated or different one is rewritten to a temp name, checked, chmod'ed and renamed into place.
 */
export async function extractFile(job: ExtractJob, dir: string): Promise<ExtractResult> {
  const dest = join(dir, job.target);
  const sourceSize = statSync(job.source).size;
  const existing = currentCopy(dest, job.executable);
  if (existing && existing.size === sourceSize) {
    const [want, have] = await Promise.all([fingerprint(job.source), fingerprint(dest)]);
    if (want === have) return { path: dest, written: false };
  }

  mkdirSync(dirname(dest), { recursive: true });
  removeStaleTemps(dest, Date.now());
  const tmp = tempName(dest);
  try {
    await Bun.write(tmp, Bun.file(job.source));
    chmodSync(tmp, job.executable ? 0o755 : 0o644);
    const [want, have] = await Promise.all([fingerprint(job.source), fingerprint(tmp)]);
    if (want !== have)
      throw new Error(`copy of ${job.source} to ${tmp} does not match (${have} != ${want}); is the disk full?`);
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new Error(`cannot extract ${job.target} to ${dir}: ${(e as Error).message}`, { cause: e });
  }
  return { path: dest, written: true };
}

/** Extracts several files (in parallel); results in the order of `jobs`. */
export async function extractAll(jobs: ExtractJob[], dir: string): Promise<ExtractResult[]> {
  mkdirSync(dir, { recursive: true });
  return Promise.all(jobs.map((j) => extractFile(j, dir)));
}
