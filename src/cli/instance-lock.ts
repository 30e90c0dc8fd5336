import { closeSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive as alive } from "../core/process.ts";

export interface LockInfo {
  pid: number;
  url?: string;
  started_at: string;
}


/**
 * One `serve` per data dir: SQLite allows one writer and the job loop assumes it owns the
 * queue. The lock file is created with O_EXCL; a lock left by a crashed server (its pid is gone)
 * is taken over, so a kill -9 never blocks the next start.
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
        writeSync(fd, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString(), ...info }));
        closeSync(fd);
        this.held = true;
        return { ok: true };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      const holder = this.read();
      if (holder && holder.pid !== process.pid && alive(holder.pid)) return { ok: false, holder };
      rmSync(this.file, { force: true }); // stale: its process is gone
    }
    return { ok: false, holder: this.read() ?? { pid: -1, started_at: "unknown" } };
  }

  update(info: Omit<LockInfo, "pid" | "started_at">): void {
    if (!this.held) return;
    const cur = this.read();
    const tmp = `${this.file}.${process.pid}.tmp`;
    const fd = openSync(tmp, "w", 0o644);
    writeSync(fd, JSON.stringify({ ...cur, ...info, pid: process.pid }));
    closeSync(fd);
    renameSync(tmp, this.file);
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
