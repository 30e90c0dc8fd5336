/**
 * The smoke test's README pass (scripts/smoke-test.ts, step 11): the shell blocks of README.md's
 * "Five-minute tour", run literally by bash in an empty folder that holds only `./vsearch`, beside a
 * `./vsearch serve` started there as the README says (its default data dir `./vsearch-data`, port
 * 8080; another free port, rewritten into the blocks, only when 8080 is taken on this machine).
 * What each block printed is then checked: the account, user and key made; the title card drawn
 * with the binary's own ffmpeg, ingested and found by its on-screen text; a collection, an upload,
 * its job, an HTTP search, a session token and the key list; the clip link it prints plays.
 *
 * The blocks that pull, export or import models need the Hugging Face hub (or tars made from it):
 * they are left out, named in the output. The rest needs `bash`, `curl`, `jq` and the DejaVu font
 * (README's prerequisites; .ci/run installs them).
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import type { SmokeHarness } from "./smoke-pg.ts";

const REPO = resolve(import.meta.dirname, "..");
const NEEDS_THE_HUB = /\bmodels (pull|export|import)\b/;

/** The ```sh blocks of README's tour section, in order. */
export function tourBlocks(readme: string): string[] {
  const start = readme.indexOf("\n## Five-minute tour");
  if (start < 0) throw new Error('README.md has no "## Five-minute tour" section');
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

async function portFree(port: number): Promise<boolean> {
  return await new Promise((done) => {
    const s = createServer();
    s.once("error", () => done(false));
    s.listen(port, "127.0.0.1", () => s.close(() => done(true)));
  });
}

async function freePort(): Promise<number> {
  return await new Promise((done) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => done(port));
    });
  });
}

export async function readmeTourPass(h: SmokeHarness & { bin: string; env: Record<string, string> }): Promise<void> {
  const { check } = h;
  const blocks = tourBlocks(readFileSync(join(REPO, "README.md"), "utf8"));
  const run = blocks.filter((b) => !NEEDS_THE_HUB.test(b));
  const skipped = blocks.length - run.length;
  if (
    !check("tour: README's tour has shell blocks to run", run.length >= 4, `${run.length} run, ${skipped} need the hub`)
  )
    return;
  const missing = ["bash", "curl", "jq"].filter((t) => !Bun.which(t, { PATH: h.env.PATH }));
  if (
    !check("tour: bash, curl and jq are installed (README's prerequisites)", missing.length === 0, missing.join(", "))
  )
    return;

  const dir = mkdtempSync(join(h.work, "tour-"));
  symlinkSync(h.bin, join(dir, "vsearch"));
  const port = (await portFree(8080)) ? 8080 : await freePort();
  const literal = (b: string) => (port === 8080 ? b : b.replaceAll("localhost:8080", `localhost:${port}`));
  // Each block's output between markers; the variables the blocks set, at the end.
  const script = [
    "set -euo pipefail",
    // curl prints no final newline: each marker starts a line of its own.
    ...run.map((b, i) => `printf '\\n=== tour block ${i}\\n'\n${literal(b)}`),
    "printf '\\n=== tour block end\\n'",
    'printf "ACCOUNT=%s\\nKEY=%s\\nCOL=%s\\nJOB=%s\\nVID=%s\\nTOKEN=%s\\n" "$ACCOUNT" "$KEY" "$COL" "$JOB" "$VID" "$TOKEN"',
  ].join("\n");
  writeFileSync(join(dir, "tour.sh"), script);

  const serveArgs = port === 8080 ? ["serve"] : ["serve", "--port", String(port)];
  const server = Bun.spawn([join(dir, "vsearch"), "--json", ...serveArgs], {
    cwd: dir,
    env: h.env,
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    const url = await h.waitForUrl(server, 60_000);
    if (!check(`tour: ./vsearch ${serveArgs.join(" ")} listens`, url !== null, url ?? `exit ${server.exitCode}`))
      return;
    const t0 = performance.now();
    const tour = Bun.spawn(["bash", "tour.sh"], { cwd: dir, env: h.env, stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => tour.kill("SIGKILL"), 300_000);
    const [out, err, code] = await Promise.all([
      new Response(tour.stdout).text(),
      new Response(tour.stderr).text(),
      tour.exited,
    ]);
    clearTimeout(timer);
    if (process.env.TOUR_OUT) writeFileSync(process.env.TOUR_OUT, out);
    const secs = ((performance.now() - t0) / 1000).toFixed(1);
    check(
      `tour: the ${run.length} blocks run as written (${skipped} hub blocks left out)`,
      code === 0,
      `exit ${code} after ${secs} s${err.trim() ? `; stderr: ${err.trim().split("\n").slice(-4).join(" | ").slice(0, 500)}` : ""}`,
    );
    const parts = out.split(/^=== tour block /m);
    const block = (i: number) => parts.find((p) => p.startsWith(`${i}\n`))?.slice(String(i).length + 1) ?? "";
    const vars = Object.fromEntries(
      (parts.find((p) => p.startsWith("end\n")) ?? "")
        .split("\n")
        .map((l) => /^([A-Z]+)=(.*)$/.exec(l))
        .filter((m) => m !== null)
        .map((m) => [m![1], m![2]]),
    );
    check(
      "tour: an account, its admin and a key",
      /^[a-z]+_\w+$/.test(vars.ACCOUNT ?? "") && (vars.KEY ?? "").length > 20 && /admin@acme\.test/.test(block(0)),
      `ACCOUNT=${vars.ACCOUNT} key ${vars.KEY ? `${vars.KEY.length} chars` : "missing"}`,
    );
    const ocr = block(1);
    check(
      "tour: the title card made with the binary's ffmpeg is ingested and found by its on-screen text",
      /budget\.mp4/.test(ocr) && /quarterly budget review/i.test(ocr),
      ocr.trim().split("\n").slice(-6).join(" | ").slice(0, 500),
    );
    const api = block(2);
    check(
      "tour: HTTP: a collection, an upload and its job, a search, a session and the key list",
      /^col_/.test(vars.COL ?? "") &&
        /^job_/.test(vars.JOB ?? "") &&
        /^vid_/.test(vars.VID ?? "") &&
        /"status":\s*"/.test(api) &&
        /"data":\s*\[/.test(api) &&
        (vars.TOKEN ?? "null") !== "null" &&
        /"name":\s*"laptop"/.test(api),
      `COL=${vars.COL} JOB=${vars.JOB} VID=${vars.VID} token ${vars.TOKEN && vars.TOKEN !== "null" ? "issued" : "missing"}`,
    );
    // The transcript of a clip without audio is an empty SRT: the block's exit status covers it.
    const clipUrl = /"url":\s*"(http[^"]+)"/.exec(block(3))?.[1];
    const clip = clipUrl ? await fetch(clipUrl, { signal: AbortSignal.timeout(30_000) }).catch(() => null) : null;
    const bytes = clip?.ok ? (await clip.arrayBuffer()).byteLength : 0;
    check(
      "tour: the clip link it prints plays (an MP4 from the presigned URL)",
      clip?.status === 200 && /video\/mp4/.test(clip.headers.get("content-type") ?? "") && bytes > 1000,
      clipUrl ? `${clip?.status} ${clip?.headers.get("content-type")} ${bytes} bytes` : block(3).slice(0, 300),
    );
  } finally {
    const code = await h.stopServe(server);
    check("tour: the tour's server stops on SIGTERM", code === 0, `exit ${code}`);
    rmSync(dir, { recursive: true, force: true });
  }
}
