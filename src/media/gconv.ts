import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { threadId } from "node:worker_threads";

/**
 * Why this file exists: the static ffprobe (2023, glibc 2.28 linked in) segfaults on *every*
 * MPEG-TS file on a glibc ≥ 2.34 host. The TS demuxer converts the SDT service name from the DVB
 * charset (ISO 6937 by default) with iconv; the static glibc then reads the host's
 * gconv-modules.cache and dlopens the host's ISO_6937.so, built for another glibc → SIGSEGV (seen
 * with gdb/strace; `ffprobe x.ts` dies before printing anything). The 2018 ffmpeg is not affected.
 *
 * Fix: run the tools with GCONV_PATH pointing at a directory whose `gconv-modules` aliases every
 * charset ffmpeg may ask iconv for to a name that has no module. With GCONV_PATH set glibc skips
 * the cache; the first definition of a name wins and a later `module` line that repeats an alias is
 * ignored, so the host's modules are never loaded, iconv_open fails cleanly and ffmpeg falls back
 * to the raw bytes (only the TS service name is affected). Built-in conversions (UTF-8, UCS-2,
 * ASCII) need no module and still work. Setting GCONV_PATH alone is not enough: on a host whose
 * plain gconv-modules file still lists ISO_6937 (glibc < 2.34) the module would be loaded again.
 */
const BLOCKED = [
  "ISO6937",
  "ISO_6937",
  "ISO-IR-156",
  ...Array.from({ length: 16 }, (_, i) => [`ISO-8859-${i + 1}`, `ISO8859-${i + 1}`, `ISO_8859-${i + 1}`]).flat(),
  "LATIN1",
  "CP1252",
  "WINDOWS-1252",
  "KSC_5601",
  "KSC5601",
  "EUC-KR",
  "GB2312",
  "EUC-CN",
  "GBK",
  "GB18030",
  "BIG5",
  "UTF-16",
  "UTF-16BE",
  "UTF-16LE",
  "UTF-32",
  "UTF-7",
];

/** Bump the directory name when BLOCKED changes so an old file is never reused. */
const DIR_NAME = "vsearch-gconv-guard-v1";

export function gconvGuardContents(): string {
  return BLOCKED.map((name) => `alias\t${name}//\tVSEARCH-NO-ICONV//\n`).join("");
}

/**
 * Returns the guard directory, writing it on first use (atomically: a temp name carrying pid,
 * thread id and a random part, then rename — workers share the pid). Called per spawn; after the
 * first call it is one existsSync. Returns "" if the directory cannot be written, which still
 * disables the crashing cache lookup on current hosts.
 */
export function gconvGuardDir(base: string = tmpdir()): string {
  const dir = join(base, DIR_NAME);
  const file = join(dir, "gconv-modules");
  if (existsSync(file)) return dir;
  try {
    mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.${threadId}.${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, gconvGuardContents());
    renameSync(tmp, file);
    return dir;
  } catch {
    return "";
  }
}
