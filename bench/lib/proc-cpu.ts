/**
 * Process and machine CPU from Linux /proc, for benches that run several processes (servers,
 * PostgreSQL, clients) and report each one's share. Not a test.
 */
import { readdirSync, readFileSync } from "node:fs";

/** CPU ms (utime + stime) of `pids` from /proc, less `since`; a process gone meanwhile counts 0. */
export function cpuOf(pids: number[], since = 0): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // Ended.
    }
  }
  return ticks * 10 - since;
}

/** The processes whose parent is `pid` (PostgreSQL's backends and helpers under the postmaster). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(name));
    } catch {
      // Ended.
    }
  }
  return out;
}

/** The box's CPU ticks, busy and total, over all cores (/proc/stat's first line). */
export function boxTicks(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3] - (f[4] ?? 0), total };
}

/**
 * This thread's CPU time in ms, to the nanosecond: clock_gettime(CLOCK_THREAD_CPUTIME_ID) through
 * bun:ffi. Bun's process.threadCpuUsage() reads getrusage, which on Linux moves in scheduler ticks
 * (4 ms here: a 0.3 ms busy loop reads 0 or 4, 0.3 only on average) and catches up when the thread
 * next sleeps — so timers around synchronous parts followed by an await charged the parts' time
 * to the await (search-bench's breakdown up to 2026-11-29). Falls back to threadCpuUsage where
 * libc cannot be opened.
 */
export const threadCpuMs: () => number = (() => {
  try {
    const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    const ts = new BigInt64Array(2);
    const at = ptr(ts);
    const CLOCK_THREAD_CPUTIME_ID = 3;
    return () => {
      libc.symbols.clock_gettime(CLOCK_THREAD_CPUTIME_ID, at);
      return Number(ts[0]) * 1e3 + Number(ts[1]) / 1e6;
    };
  } catch {
    return () => {
      const c = (process as unknown as { threadCpuUsage(): NodeJS.CpuUsage }).threadCpuUsage();
      return (c.user + c.system) / 1000;
    };
  }
})();
