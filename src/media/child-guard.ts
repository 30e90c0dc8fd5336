import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";

/**
 * ffmpeg and ffprobe die with the process that started them. A kill -9 of the server runs no
 * handler, so nothing in the server can stop its children; the kernel can: a child that asked for
 * PR_SET_PDEATHSIG gets SIGKILL when its parent dies. Bun.spawn has no option for it (its
 * `--no-orphans` mode watches Bun's own parent, and kills descendants only on a clean exit), so
 * the tools are started through a wrapper that sets it and then execs the tool (same pid):
 *
 * - `setpriv --pdeathsig KILL --` (util-linux ≥ 2.33, on every glibc distribution Bun runs on;
 *   costs ~1 ms), else
 * - this executable itself as the `bun` CLI (`BUN_BE_BUN=1 <exe> -e GUARD`): prctl through
 *   bun:ffi, a check that the parent is still the one that asked (it may have died before prctl),
 *   then execve. ~50–100 ms per spawn, so only when setpriv is missing.
 *
 * Either way a child whose parent dies between fork and prctl is left; `sweepOrphanTools` at the
 * next start removes those (and everything a host without Linux's prctl leaves).
 */
export interface ChildGuard {
  kind: "setpriv" | "bun" | "none";
  /** Put before the tool's path. */
  prefix: string[];
  /** Added to the tool's environment. */
  env: Record<string, string>;
}

/** prctl(PR_SET_PDEATHSIG = 1, SIGKILL = 9), parent check (argv[1]), execve(argv[2], argv[2..]). */
export const BUN_GUARD_SOURCE = `
const { dlopen, FFIType: T, ptr } = require("bun:ffi");
const c = dlopen("libc.so.6", {
  prctl: { args: [T.i32, T.u64, T.u64, T.u64, T.u64], returns: T.i32 },
  getppid: { args: [], returns: T.i32 },
  execve: { args: [T.ptr, T.ptr, T.ptr], returns: T.i32 },
}).symbols;
const [parent, ...argv] = process.argv.slice(1);
if (c.prctl(1, 9, 0, 0, 0) !== 0) process.exit(126);
if (c.getppid() !== Number(parent)) process.exit(125);
const keep = [];
const list = (xs) => { const a = new BigUint64Array(xs.length + 1); xs.forEach((x, i) => { const b = Buffer.from(x + "\\0"); keep.push(b); a[i] = BigInt(ptr(b)); }); return a; };
const env = Object.entries(process.env).filter(([k]) => k !== "BUN_BE_BUN").map(([k, v]) => k + "=" + v);
const av = list(argv);
c.execve(ptr(keep[0]), ptr(av), ptr(list(env)));
process.exit(127);
`;

const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"];

/** The guard for this host (looked up once: a fact about the host, not state). */
let chosen: ChildGuard | undefined;

export function childGuard(): ChildGuard {
  return (chosen ??= pickGuard());
}

export function pickGuard(prefer?: ChildGuard["kind"]): ChildGuard {
  if (process.platform !== "linux" || prefer === "none") return { kind: "none", prefix: [], env: {} };
  if (prefer !== "bun") {
    for (const p of SETPRIV) {
      if (!existsSync(p)) continue;
      try {
        const r = Bun.spawnSync({ cmd: [p, "--help"], stdout: "pipe", stderr: "ignore", env: {} });
        if (r.success && r.stdout.toString().includes("--pdeathsig"))
          return { kind: "setpriv", prefix: [p, "--pdeathsig", "KILL", "--"], env: {} };
      } catch {
        // not runnable here: try the next
      }
    }
  }
  return {
    kind: "bun",
    prefix: [process.execPath, "-e", BUN_GUARD_SOURCE, String(process.pid)],
    env: { BUN_BE_BUN: "1" },
  };
}

/**
 * Start-up sweep: kills ffmpeg/ffprobe processes left by a crashed server of this data dir
 * (the exe is one of `bins`, the command line names a file under `dataDir`, and the parent is not
 * a live process of this same executable — after a crash the orphan's parent is init or a
 * subreaper). Returns how many were killed. Linux only (reads /proc); elsewhere 0.
 */
export function sweepOrphanTools(bins: { ffmpeg: string; ffprobe: string }, dataDir: string): number {
  if (!existsSync("/proc/self/stat")) return 0;
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const tools = new Set([real(bins.ffmpeg), real(bins.ffprobe)]);
  const self = real(process.execPath);
  const marker = `${real(dataDir)}/`;
  let killed = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      if (!tools.has(readlinkSync(`/proc/${pid}/exe`))) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!cmdline.some((a) => a.startsWith(marker) || a.includes(`=${marker}`))) continue;
      const ppid = Number(/^PPid:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      let parentExe = "";
      try {
        parentExe = readlinkSync(`/proc/${ppid}/exe`);
      } catch {
        // gone or not ours to read: not a live server of ours
      }
      if (ppid > 1 && parentExe === self) continue; // a live vsearch (a CLI beside us) owns it
      process.kill(pid, "SIGKILL");
      killed++;
    } catch {
      // exited meanwhile, or another user's process
    }
  }
  return killed;
}
