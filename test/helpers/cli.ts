import { join } from "node:path";
import { backendEnv } from "../pg/backend.ts";

const ROOT = join(import.meta.dirname, "..", "..");
export const BUN = join(ROOT, "node_modules", ".bin", "bun");
export const MAIN = join(ROOT, "src", "main.ts");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Hang bounds of the harness's processes. Not speed targets: a `bun src/main.ts` start (parsing
 * the app, opening the store) took over 20 s at load ~40 on the 2-core test machine, so the
 * bounds sit at a minute; a process that never finishes still fails the test.
 */
const PROCESS_BOUND_MS = 60_000;

/** The data dir a CLI run works on: its `--data-dir` flag, else VSEARCH_DATA_DIR. */
function dataDirOf(args: string[], env: Record<string, string>): string | undefined {
  const i = args.indexOf("--data-dir");
  return i >= 0 ? args[i + 1] : (env.VSEARCH_DATA_DIR ?? process.env.VSEARCH_DATA_DIR);
}

/** Runs the real CLI (`bun src/main.ts …`) as a subprocess, with a time limit. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = PROCESS_BOUND_MS,
): Promise<CliResult> {
  const proc = Bun.spawn([BUN, MAIN, ...args], {
    env: { ...process.env, VSEARCH_LOG_LEVEL: "silent", ...(await backendEnv(dataDirOf(args, env))), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export async function runCliJson<T = any>(args: string[], env: Record<string, string> = {}): Promise<T> {
  const r = await runCli([...args, "--json"], env);
  if (r.code !== 0) throw new Error(`vsearch ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/**
 * The JSON document (flat: no nested object) a `--json` serve or worker prints once it runs, read
 * from its stdout within the harness's bound; the process is killed and the test fails otherwise.
 */
async function startLine(proc: Bun.Subprocess<"ignore", "pipe", "pipe">, what: string): Promise<string> {
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + PROCESS_BOUND_MS;
  while (!text.includes("}") && Date.now() < deadline) {
    const { done, value } = await Promise.race([
      reader.read(),
      Bun.sleep(Math.max(0, deadline - Date.now())).then(() => ({ done: true, value: undefined })),
    ]);
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  if (!text.includes("}")) {
    proc.kill();
    throw new Error(`${what} did not start: ${text} ${await new Response(proc.stderr).text()}`);
  }
  return text;
}

/** Starts `serve` on a free port and waits (bounded) for it to print its URL. */
export async function startServer(dataDir: string, env: Record<string, string> = {}, serveArgs: string[] = []) {
  const proc = Bun.spawn([BUN, MAIN, "--data-dir", dataDir, "--json", "serve", "--port", "0", ...serveArgs], {
    env: { ...process.env, VSEARCH_LOG_LEVEL: "silent", ...(await backendEnv(dataDir)), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const info = JSON.parse(await startLine(proc, "server")) as {
    url: string;
    pid: number;
    setup_url?: string | null;
    also_at?: string[];
  };
  return {
    url: info.url,
    /** The one-time first-run link (null once an account exists). */
    setupUrl: info.setup_url ?? null,
    /** On 0.0.0.0: the URLs of the machine's other addresses. */
    alsoAt: info.also_at ?? [],
    proc,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      proc.kill(signal);
      await Promise.race([proc.exited, Bun.sleep(10_000)]);
    },
  };
}

/** POST /v1/collections on a served instance (startServer) with `key`; the new collection's id. */
export async function postCollection(url: string, key: string, name = "c"): Promise<string> {
  const res = await fetch(`${url}/v1/collections`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  return ((await res.json()) as any).data.id;
}

/** POST /v1/upload of the file at `path` (sent as `filename`) into a collection of a served instance; the answer's data. */
export async function postUpload(
  url: string,
  key: string,
  collectionId: string,
  path: string,
  filename: string,
): Promise<{ job_id: string; video_id: string }> {
  const fd = new FormData();
  fd.append("collection_id", collectionId);
  fd.append("file", Bun.file(path), filename);
  return (
    (await (
      await fetch(`${url}/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: fd })
    ).json()) as any
  ).data;
}

/**
 * Starts `vsearch worker` (issue 26) over `dataDir` and waits (bounded) for its JSON start line.
 * `env` must name the shared database (VSEARCH_DATABASE_URL): a worker has a data dir of its own
 * and works on the servers' database, not on a database of its data dir.
 */
export async function startWorker(dataDir: string, env: Record<string, string>, workerArgs: string[] = []) {
  const proc = Bun.spawn([BUN, MAIN, "--data-dir", dataDir, "--json", "worker", ...workerArgs], {
    env: { ...process.env, VSEARCH_LOG_LEVEL: "silent", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const info = JSON.parse(await startLine(proc, "worker")) as {
    pid: number;
    kinds: string[];
    concurrency: number;
    refused: string | null;
  };
  return {
    ...info,
    proc,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      proc.kill(signal);
      await Promise.race([proc.exited, Bun.sleep(20_000)]);
    },
  };
}
