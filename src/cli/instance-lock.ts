import { closeSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive as alive } from "../core/process.ts";
import { isStorageError } from "../core/storage.ts";

export interface LockInfo {
  pid: number;
  url?: string;
  started_at: string;
  /** Identity of the holder beyond its pid (Linux): pids are reused, start time + boot are not. */
  proc_start?: string | null;
  boot_id?: string | null;
}

/** The kernel's start time of a process (clock ticks since boot, /proc/<pid>/stat field 22); null off Linux. */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

function commandLine(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return null;
  }
}

/**
 * Whether the process that wrote the lock still runs. A pid alone is not enough: after a crash
 * or a reboot the pid may belong to an unrelated process, and the lock would never clear by
 * itself. The lock records the holder's start time and the boot id; a pid that is alive but
 * started at another time (or in another boot) is someone else.
 */
export function holderAlive(h: LockInfo): boolean {
  if (!alive(h.pid)) return false;
  const boot = bootId();
  if (h.boot_id && boot && h.boot_id !== boot) return false;
  const start = processStartTicks(h.pid);
  if (h.proc_start && start) return h.proc_start === start;
  // A lock without an identity (written by an older version): trust it only if the pid still
  // runs something that looks like vsearch.
  const cmd = commandLine(h.pid);
  return cmd === null || /vsearch|main\.ts/.test(cmd);
}

/**
 * One `serve` per data dir: SQLite allows one writer and the job loop assumes it owns the
 * queue. The lock file is created with O_EXCL; a lock left by a crashed server (its process is
 * gone, or its pid now belongs to another process) is taken over, so a kill -9 never blocks the
 * next start.
 */
export class InstanceLock {
  private held = false;
  readonly file: string;

  constructor(dataDir: string) {
    this.file = join(dataDir, "serve.lock");
  }

  acquire(info: Omit<LockInfo, "pid" | "started_at">): { ok: true } | { ok: false; holder: LockInfo } {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(this.file, "wx", 0o644);
        const me: LockInfo = {
          pid: process.pid,
          started_at: new Date().toISOString(),
          proc_start: processStartTicks(process.pid),
          boot_id: bootId(),
          ...info,
        };
        try {
          writeSync(fd, JSON.stringify(me));
        } catch (e) {
          // A full disk still has an inode for the file but no block for its text. The server
          // must start anyway (reads work on a full disk); the port check still stops a second one.
          if (!isStorageError(e)) throw e;
        } finally {
          closeSync(fd);
        }
        this.held = true;
        return { ok: true };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      const holder = this.read();
      if (holder && holder.pid !== process.pid && holderAlive(holder)) return { ok: false, holder };
      rmSync(this.file, { force: true }); // stale: its process is gone
    }
    return { ok: false, holder: this.read() ?? { pid: -1, started_at: "unknown" } };
  }

  update(info: Omit<LockInfo, "pid" | "started_at">): void {
    if (!this.held) return;
    const cur = this.read();
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      const fd = openSync(tmp, "w", 0o644);
      try {
        writeSync(fd, JSON.stringify({ ...cur, ...info, pid: process.pid }));
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.file);
    } catch (e) {
      // Informational (the URL for the "already running" message); not worth failing a start on a full disk.
      rmSync(tmp, { force: true });
      if (!isStorageError(e)) throw e;
    }
  }

  read(): LockInfo | null {
    try {
      return JSON.parse(readFileSync(this.file, "utf8")) as LockInfo;
    } catch {
      return null;
    }
  }

  release(): void {
    if (this.held && this.read()?.pid === process.pid) rmSync(this.file, { force: true });
    this.held = false;
  }
}
