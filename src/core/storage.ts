import { statfsSync } from "node:fs";
import { AppError } from "./errors.ts";

/**
 * Disk-full handling (SPEC §2: 507 `INSUFFICIENT_STORAGE`, nothing half-written, reads keep
 * working, `/readyz` says so). SQLite reports a full disk as SQLITE_FULL (also when
 * `max_page_count` is reached); file writes as ENOSPC, EDQUOT (quota) or EFBIG (RLIMIT_FSIZE).
 */
export function isStorageError(e: unknown): boolean {
  if (!e || typeof e !== "object") return false;
  if (e instanceof AppError) return e.code === "INSUFFICIENT_STORAGE";
  const code = (e as { code?: unknown }).code;
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT" || code === "EFBIG") return true;
  return /database or disk is full|no space left on device/i.test(String((e as Error).message ?? ""));
}

/** SQLite's generic I/O failure (SQLITE_IOERR and its extended codes); a full disk is one cause. */
export function isIoError(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_IOERR") || code === "EIO");
}

export const insufficientStorage = () =>
  new AppError(
    "INSUFFICIENT_STORAGE",
    "The server's disk is full; nothing was written. Reads still work; retry once space is freed",
  );

/** Below this much free space the data dir counts as full for `/readyz`. */
const MIN_FREE_BYTES = 1024 * 1024;
/** How long a storage error seen by a write keeps `/readyz` at "full" without a successful check. */
const RECENT_MS = 10_000;

/**
 * What `/readyz` reports about the data dir's disk: its free bytes, and whether a write recently
 * failed for lack of space (SQLite can be full before statfs says 0 — `max_page_count`, quotas).
 */
export class StorageHealth {
  private lastFullAt = 0;

  constructor(
    private readonly dataDir: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record that a write failed for lack of space. */
  noteFull(): void {
    this.lastFullAt = this.now();
  }

  isFull(): boolean {
    return !this.check().ok;
  }

  check(): { ok: boolean; free_bytes: number | null; detail: string } {
    let free: number | null = null;
    try {
      const s = statfsSync(this.dataDir);
      free = Number(s.bavail) * Number(s.bsize);
    } catch {
      // statfs unavailable: rely on the recent-failure mark alone.
    }
    const recent = this.lastFullAt > 0 && this.now() - this.lastFullAt < RECENT_MS;
    if (free !== null && free < MIN_FREE_BYTES) return { ok: false, free_bytes: free, detail: "full" };
    if (recent) return { ok: false, free_bytes: free, detail: "full (a write failed for lack of space)" };
    return { ok: true, free_bytes: free, detail: "ok" };
  }
}
