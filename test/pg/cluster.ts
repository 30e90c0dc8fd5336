/**
 * A throw-away PostgreSQL cluster for the `pg` test project: initdb into a temp dir, one server on
 * a free loopback port (no Unix socket), durability off (fsync, synchronous_commit,
 * full_page_writes: a crash only loses test data), stopped and removed at the end. A watchdog
 * stops it and removes the dir if the test process dies without tearing down.
 *
 * initdb refuses to run as root, and CI and the dev machines run as root: then every server
 * binary runs as the `postgres` user (Debian's package creates it) through runuser, on a dir
 * chowned to it.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const MIN_PG_MAJOR = 15;
export const MIN_PGVECTOR = "0.8.0";

export interface PgBinaries {
  bindir: string;
  major: number;
  /** The server's share dir (extension control files). */
  sharedir: string;
  pgvector: string;
}

/** The newest usable PostgreSQL (≥ 15 with pgvector ≥ 0.8), or why there is none. */
export function findPostgres(env: NodeJS.ProcessEnv = process.env): { bin: PgBinaries } | { missing: string } {
  const candidates: string[] = [];
  // An explicit bin dir is the only one tried (also how to see the project skip on a machine that has PostgreSQL).
  if (env.VSEARCH_TEST_PG_BINDIR) candidates.push(env.VSEARCH_TEST_PG_BINDIR);
  const root = "/usr/lib/postgresql";
  if (env.VSEARCH_TEST_PG_BINDIR) {
    // nothing else
  } else if (existsSync(root)) {
    for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) candidates.push(join(root, v, "bin"));
  }
  if (!env.VSEARCH_TEST_PG_BINDIR) {
    try {
      candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
    } catch {
      // no pg_config on PATH
    }
  }
  const reasons: string[] = [];
  for (const bindir of candidates) {
    const pgConfig = join(bindir, "pg_config");
    if (!existsSync(join(bindir, "initdb")) || !existsSync(join(bindir, "postgres")) || !existsSync(pgConfig)) {
      reasons.push(`${bindir}: no initdb/postgres/pg_config`);
      continue;
    }
    const version = execFileSync(pgConfig, ["--version"], { encoding: "utf8" }); // "PostgreSQL 15.20 (…)"
    const major = Number(/PostgreSQL (\d+)/.exec(version)?.[1] ?? 0);
    if (major < MIN_PG_MAJOR) {
      reasons.push(`${bindir}: PostgreSQL ${major} (need ${MIN_PG_MAJOR}+)`);
      continue;
    }
    const sharedir = execFileSync(pgConfig, ["--sharedir"], { encoding: "utf8" }).trim();
    const control = join(sharedir, "extension", "vector.control");
    const pgvector = existsSync(control)
      ? /default_version\s*=\s*'([^']+)'/.exec(readFileSync(control, "utf8"))?.[1]
      : "";
    if (!pgvector || !atLeast(pgvector, MIN_PGVECTOR)) {
      reasons.push(
        `${bindir}: PostgreSQL ${major} without pgvector ${MIN_PGVECTOR}+ (${control} ${pgvector || "missing"})`,
      );
      continue;
    }
    return { bin: { bindir, major, sharedir, pgvector } };
  }
  return { missing: reasons.length ? reasons.join("; ") : `no PostgreSQL under ${root} or on PATH` };
}

function atLeast(have: string, want: string): boolean {
  const a = have.split(".").map(Number);
  const b = want.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** A free TCP port on 127.0.0.1 (the kernel's pick; the server binds it moments later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const asRoot = () => process.getuid?.() === 0;

/** `cmd` as the user that owns the cluster: `postgres` through runuser when we are root. */
function asOwner(cmd: string, args: string[]): [string, string[]] {
  return asRoot() ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
}

export interface Cluster {
  readonly dir: string;
  readonly port: number;
  /** Superuser `vsearch`, trust auth, database `postgres`. */
  readonly adminUrl: string;
  urlFor(database: string, user?: string): string;
  /** Milliseconds initdb and the server start took. */
  readonly timings: { initdbMs: number; startMs: number };
  stop(): Promise<void>;
}

export const SUPERUSER = "vsearch";

/**
 * `extraSettings`: postgresql.conf lines added after the defaults, for a bench that looks inside
 * the server (e.g. `shared_preload_libraries = 'pg_stat_statements'`); tests pass none.
 */
export async function startCluster(bin: PgBinaries, extraSettings: string[] = []): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), "vsearch-pg-"));
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  if (asRoot()) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const exe = (name: string) => join(bin.bindir, name);
  const watchdog = startWatchdog(dir, data, exe("pg_ctl"));
  try {
    const t0 = performance.now();
    await run(
      ...asOwner(exe("initdb"), [
        "-D",
        data,
        "-U",
        SUPERUSER,
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
        "--no-sync",
        "--no-instructions",
      ]),
    );
    const initdbMs = performance.now() - t0;
    const settings = [
      "listen_addresses = '127.0.0.1'",
      "unix_socket_directories = ''",
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "shared_buffers = 32MB",
      "max_connections = 100",
      "deadlock_timeout = 100ms",
      "log_min_messages = warning",
      ...extraSettings,
    ];
    let port = 0;
    let startMs = 0;
    // The port is free when picked; another process may take it before the server binds: try again.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      appendFileSync(join(data, "postgresql.conf"), `\n${settings.join("\n")}\nport = ${port}\n`);
      const t1 = performance.now();
      try {
        await run(...asOwner(exe("pg_ctl"), ["-D", data, "-l", log, "-w", "-t", "120", "start"]));
        startMs = performance.now() - t1;
        break;
      } catch (err) {
        if (attempt >= 3) throw new Error(`postgres did not start: ${tail(log)}`, { cause: err });
      }
    }
    const base = `postgres://${SUPERUSER}@127.0.0.1:${port}`;
    return {
      dir,
      port,
      adminUrl: `${base}/postgres`,
      urlFor: (database, user = SUPERUSER) => `postgres://${user}@127.0.0.1:${port}/${database}`,
      timings: { initdbMs, startMs },
      async stop() {
        try {
          await run(...asOwner(exe("pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"]));
        } finally {
          watchdog.kill();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    await run(...asOwner(exe("pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])).catch(() => {});
    watchdog.kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A detached shell that stops the server and removes `dir` once this process is gone. */
function startWatchdog(dir: string, data: string, pgCtl: string) {
  const stop = asRoot() ? `runuser -u postgres -- "${pgCtl}"` : `"${pgCtl}"`;
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 2; done; ${stop} -D "${data}" -m immediate stop >/dev/null 2>&1; rm -rf "${dir}"`;
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  child.unref();
  return {
    kill() {
      if (child.pid) {
        try {
          process.kill(-child.pid); // the shell and its sleep (detached: their own process group)
        } catch {
          // already gone
        }
      }
    },
  };
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-15).join("\n");
  } catch {
    return "(no server log)";
  }
}
