import { dlopen, FFIType } from "bun:ffi";
import { readFileSync } from "node:fs";

/**
 * Hands freed native memory back to the OS. ONNX Runtime allocates model weights and arenas with
 * glibc malloc inside the worker threads; when those threads end, glibc keeps the freed pages in
 * its arenas, so the process stays ~100 MB above where it started (measured: 225 MB after closing a
 * pool that held CLIP + Whisper, 136 MB after `malloc_trim(0)`). Without glibc (musl, other OSes)
 * this does nothing and says so.
 */
interface Libc {
  trim: (pad: number) => number;
  madvise: (addr: number, len: number, advice: number) => number;
}
let libc: Libc | null | undefined;

function open(): Libc | null {
  if (libc === undefined) {
    try {
      const l = dlopen("libc.so.6", {
        malloc_trim: { args: [FFIType.u64], returns: FFIType.i32 },
        madvise: { args: [FFIType.u64, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
      });
      libc = {
        trim: (pad) => l.symbols.malloc_trim(pad) as number,
        madvise: (addr, len, advice) => l.symbols.madvise(addr, len, advice) as number,
      };
    } catch {
      libc = null;
    }
  }
  return libc;
}

export function trimNativeHeap(): boolean {
  const c = open();
  if (!c) return false;
  c.trim(0);
  return true;
}

/** Drop these pages from this process's page tables; file-backed ones are read back from the file on use. */
const MADV_DONTNEED = 4;

/**
 * Drops from this process's RSS the resident code pages of the native libraries whose path
 * matches `path`: libraries that worker threads loaded and no thread runs now. A library stays
 * mapped after its last user ends (Bun never unloads an addon), and its code pages count in RSS
 * (~30 MB for ONNX Runtime and libvips). Only mappings without a write bit and without a single
 * private (anonymous) page are touched: every page there is an unmodified page of the file, so
 * dropping it loses nothing — the next use faults it back in from the page cache (or the disk),
 * as after the kernel reclaimed it under memory pressure. The ranges are read from smaps before
 * they are advised; that is safe only because a loaded library is never unmapped in this process
 * (Bun never unloads an addon), so no range can have become anonymous memory in between — were
 * libraries ever unloaded, this would have to stop (MADV_PAGEOUT/COLD, tried, free nothing of
 * pages other processes share). Returns the bytes that were resident
 * there (0 where /proc/self/smaps or libc's madvise is missing).
 */
export function dropLibraryPages(path: RegExp): number {
  const c = open();
  if (!c) return 0;
  let smaps: string;
  try {
    smaps = readFileSync("/proc/self/smaps", "utf8");
  } catch {
    return 0;
  }
  type Mapping = { start: number; len: number; rss: number; anon: number };
  const candidates: Mapping[] = [];
  let cur: Mapping | null = null;
  for (const line of smaps.split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = Number.parseInt(m[1], 16);
      cur =
        m[3][1] !== "w" && m[4].startsWith("/") && path.test(m[4])
          ? { start, len: Number.parseInt(m[2], 16) - start, rss: -1, anon: -1 }
          : null;
      if (cur) candidates.push(cur);
      continue;
    }
    if (!cur) continue;
    const kb = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line);
    if (kb) cur[kb[1] === "Rss" ? "rss" : "anon"] = Number(kb[2]) * 1024;
  }
  let dropped = 0;
  for (const m of candidates) {
    if (m.anon !== 0 || m.rss <= 0) continue;
    if (c.madvise(m.start, m.len, MADV_DONTNEED) === 0) dropped += m.rss;
  }
  return dropped;
}
