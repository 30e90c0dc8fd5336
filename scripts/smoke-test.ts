/**
 * Smoke test of the compiled binary, as an operator would run it: copies only ./vsearch into an
 * empty folder and, from there, with a minimal environment (no node_modules, no source tree, a
 * fresh HOME and TMPDIR):
 *   1. `doctor --json --model-dir …` on a fresh data dir: the vec0 query and an ONNX session in a
 *      worker thread pass (this start extracts the native runtime);
 *   2. `doctor --json` again: the runtime files are not rewritten (same inode and mtime);
 *   3. `accounts create --name smoke --json` returns an id;
 *   4. `serve --port 0`: /healthz answers 200; a second `serve` on the same data dir exits non-zero
 *      with a clear message; SIGTERM stops the server (exit 0);
 *   5. two `doctor` processes started at once on another fresh data dir both pass;
 *   6. end to end: the tiny CLIP model imported (`models import`) and the tiny Whisper pulled from a
 *      loopback Hugging Face hub (`models pull`, HF_ENDPOINT), both load-checked in the binary's workers, a 20 s clip with 2 s keyframes and a cut (made by the binary's own
 *      ffmpeg) indexed by `ingest`, and a 24 s clip with x264's 250-frame keyframe interval whose
 *      full decode runs split over two of the binary's ffmpeg processes at a keyframe (its
 *      stages say so, and its cut is found), then, through `serve`: the first video's stages (one decode for
 *      frames, shots and thumbnails; the transcript beside it), its thumbnails and poster on disk,
 *      nothing temporary left, signed int8 weights where the CPU has VNNI, and a search answering;
 *      Playback: the rendition worker marks that H.264 clip `not_needed`, and a clip export is cut
 *      with the embedded ffmpeg and served from its presigned URL with a byte range;
 *   7. `vsearch mcp --account …` beside that server: the SDK's stdio client initializes, lists the
 *      nine agent tools, searches (the query encoder in the binary's workers) and gets a frame.
 *   8. `backup --include-models` beside that running server, `restore` into an empty dir, `check`.
 *   9. on-screen text with NO model imported, on a fresh data dir: a clip with a Latin and (with
 *      the fonts-wqy-microhei font) a Chinese caption burned in (the binary's ffmpeg, `drawtext`)
 *      ingested with PP-OCR (its worker pool on the embedded ONNX Runtime, the models extracted
 *      beside the native files), another with tesseract.js (worker, wasm core and English data
 *      extracted likewise), and `POST /v1/search modes=ocr` finding a word of each caption —
 *      "预算" inside "季度预算会议", written without spaces.
 *  10. the same binary on PostgreSQL (scripts/smoke-pg.ts): a throw-away cluster, the first start
 *      migrating it, doctor, an account and key, serve, an upload indexed and found by a text
 *      search, backup naming pg_dump; skipped, saying so, without PostgreSQL 15+ and pgvector 0.8+
 *      (a failure with VSEARCH_REQUIRE_PG=1).
 *  11. README's five-minute tour (scripts/smoke-tour.ts): its shell blocks run literally by bash in a
 *      folder holding only ./vsearch, beside `./vsearch serve` there (the hub's model blocks left out).
 *  12. the media in an S3 bucket (scripts/smoke-s3.ts): s3rver run by `node`, doctor reaching it, an
 *      upload put there and indexed, thumbnail and ranged playback answered from presigned URLs.
 * Every wait is bounded. Prints each check; exits 1 if any failed.
 *
 *   bun scripts/smoke-test.ts [--binary ./vsearch] [--model-dir test/fixtures/models/tiny-random-clip] [--only pg|tour|s3]
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startHub } from "../test/models/hub.ts";
import { postgresPass } from "./smoke-pg.ts";
import { objectStoragePass } from "./smoke-s3.ts";
import { readmeTourPass } from "./smoke-tour.ts";

const REPO = resolve(import.meta.dirname, "..");
const { values: args } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    binary: { type: "string", default: join(REPO, "vsearch") },
    "model-dir": { type: "string", default: join(REPO, "test", "fixtures", "models", "tiny-random-clip") },
    keep: { type: "boolean", default: false },
    /** "pg": only the PostgreSQL pass (step 10); "tour": only README's tour (step 11); "s3": only the bucket's (step 12). */
    only: { type: "string" },
  },
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

const checks: { name: string; ok: boolean; detail: string }[] = [];
function check(name: string, ok: boolean, detail = ""): boolean {
  checks.push({ name, ok, detail });
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ` — ${detail}` : ""}`);
  return ok;
}

const work = mkdtempSync(join(tmpdir(), "vsearch-smoke-"));
const bin = join(work, "vsearch");
const env = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: join(work, "home"),
  TMPDIR: join(work, "tmp"),
  LANG: "C.UTF-8",
};

/** Runs `./vsearch …` in the work folder; kills it after `timeoutMs`. */
async function vsearch(argv: string[], timeoutMs = 120_000, extraEnv: Record<string, string> = {}): Promise<Run> {
  const t0 = performance.now();
  const proc = Bun.spawn([bin, ...argv], { cwd: work, env: { ...env, ...extraEnv }, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code: proc.signalCode ? null : code, stdout, stderr, ms: performance.now() - t0 };
}

function json(r: Run): any {
  try {
    return JSON.parse(r.stdout);
  } catch {
    return null;
  }
}

const brief = (r: Run) =>
  `exit ${r.code}, ${Math.round(r.ms)} ms${r.stderr.trim() ? `, stderr: ${r.stderr.trim().split("\n").slice(-3).join(" | ").slice(0, 400)}` : ""}`;

/** inode + mtime of every file under a folder: equal snapshots mean nothing was rewritten. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  for (const rel of readdirSync(dir, { recursive: true }).map(String)) {
    const st = statSync(join(dir, rel));
    if (st.isFile()) out.set(rel, `${st.ino}:${st.mtimeMs}:${st.size}`);
  }
  return out;
}

/** `doctor --json` prints {ok, device, models, runtime: runSelfTest's report, store, …}. */
function doctorOk(name: string, r: Run, withModel: boolean): boolean {
  const rep = json(r);
  const rt = rep?.runtime;
  const ok =
    r.code === 0 &&
    rep?.ok === true &&
    rt?.ok === true &&
    rt.vec_query_ok === true &&
    typeof rt.ffmpeg_version === "string" &&
    typeof rt.ffprobe_version === "string" &&
    (!withModel || (rt.onnx_ok === true && rt.onnx?.worker_thread_id > 0));
  return check(
    name,
    ok,
    rt
      ? `vec_query_ok=${rt.vec_query_ok} onnx_ok=${rt.onnx_ok} (${rt.onnx?.model_id} on ${rt.device}, worker thread ${rt.onnx?.worker_thread_id}) ffmpeg=${rt.ffmpeg_version} sqlite=${rt.sqlite_version} vec=${rt.vec_version}${rt.errors?.length ? ` errors: ${rt.errors.join("; ")}` : ""}, ${brief(r)}`
      : `no JSON report: ${brief(r)}; stdout: ${r.stdout.slice(0, 300)}`,
  );
}

async function waitForUrl(proc: Bun.Subprocess<"ignore", "pipe", "pipe">, timeoutMs: number): Promise<string | null> {
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + timeoutMs;
  let text = "";
  while (Date.now() < deadline) {
    const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
    if (next === null || next.done) break;
    text += new TextDecoder().decode(next.value);
    const m = /"url":\s*"([^"]+)"/.exec(text) ?? /(http:\/\/[\d.]+:\d+)/.exec(text);
    if (m) {
      reader.releaseLock();
      return m[1];
    }
  }
  reader.releaseLock();
  return null;
}

/** `vsearch serve` of the binary over `data`, on a free loopback port (waitForUrl reads which). */
function spawnServe(data: string, extraEnv: Record<string, string> = {}, extraArgs: string[] = []) {
  return Bun.spawn([bin, "--data-dir", data, "--json", "serve", "--host", "127.0.0.1", "--port", "0", ...extraArgs], {
    cwd: work,
    env: { ...env, ...extraEnv },
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** `vsearch worker` of the binary over `data` (issue 26): it prints one JSON document once it claims. */
function spawnWorker(data: string, extraEnv: Record<string, string> = {}) {
  return Bun.spawn([bin, "--data-dir", data, "--json", "worker"], {
    cwd: work,
    env: { ...env, ...extraEnv },
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** One sample of a served instance's /metrics (Prometheus text, no labels); null when absent. */
async function metricOf(url: string, name: string): Promise<number | null> {
  const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : null;
}

/** SIGTERM, and SIGKILL when it has not exited 15 s later; its exit code, or "timeout". */
async function stopServe(server: Bun.Subprocess): Promise<number | "timeout"> {
  server.kill("SIGTERM");
  const code = await Promise.race([server.exited, Bun.sleep(15_000).then(() => "timeout" as const)]);
  if (code === "timeout") server.kill("SIGKILL");
  return code;
}

/** Requests to a served instance with `key`, each bounded to 30 s: the status and the JSON body (null when there is none). */
function keyedRequests(url: string, key: string | undefined) {
  return async (path: string, init?: RequestInit) => {
    const res = await fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init?.headers ?? {}) },
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
}

async function healthz(url: string, timeoutMs: number): Promise<number | string> {
  const deadline = Date.now() + timeoutMs;
  let last: number | string = "no answer";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      last = res.status;
      if (res.status === 200) return 200;
    } catch (e) {
      last = (e as Error).message;
    }
    await Bun.sleep(100);
  }
  return last;
}

async function main(): Promise<number> {
  const modelDir = resolve(args["model-dir"]!);
  if (!check("binary exists", existsSync(args.binary!), args.binary)) return 1;
  if (!check("model fixture exists", existsSync(join(modelDir, "config.json")), modelDir)) return 1;
  mkdirSync(env.HOME);
  mkdirSync(env.TMPDIR);
  copyFileSync(args.binary!, bin);
  console.log(
    `work folder ${work} holds only ${readdirSync(work)
      .filter((f) => f === "vsearch")
      .join(", ")} (+ empty home/, tmp/); binary ${(statSync(bin).size / 2 ** 20).toFixed(1)} MiB`,
  );

  if (args.only === "pg" || args.only === "tour" || args.only === "s3") {
    if (args.only === "pg") await postgresPass(harness(modelDir));
    else if (args.only === "s3") await objectStoragePass(harness(modelDir));
    else await readmeTourPass({ ...harness(modelDir), bin, env });
    return checks.every((c) => c.ok) ? 0 : 1;
  }

  const version = await vsearch(["--version"], 30_000);
  check(
    "--version",
    version.code === 0 && /\d+\.\d+\.\d+/.test(version.stdout),
    `${version.stdout.trim()}, ${brief(version)}`,
  );

  // 1 + 2: doctor twice on one data dir.
  const data = join(work, "data");
  const runtimeDir = join(data, "runtime");
  const first = await vsearch(["--data-dir", data, "doctor", "--json", "--model-dir", modelDir]);
  doctorOk("doctor on a fresh data dir (extracts the runtime; ONNX in a worker thread)", first, true);
  const before = snapshot(runtimeDir);
  check(
    "runtime extracted under <data-dir>/runtime/<version>/",
    before.size >= 5,
    `${before.size} files: ${[...before.keys()].join(", ")}`,
  );
  const second = await vsearch(["--data-dir", data, "doctor", "--json", "--model-dir", modelDir]);
  doctorOk("doctor again", second, true);
  const after = snapshot(runtimeDir);
  const rewritten = [...before].filter(([k, v]) => after.get(k) !== v).map(([k]) => k);
  check(
    "second start did not re-extract (same inode/mtime for every runtime file)",
    rewritten.length === 0 && after.size === before.size,
    rewritten.length
      ? `rewritten: ${rewritten.join(", ")}`
      : `first ${Math.round(first.ms)} ms, second ${Math.round(second.ms)} ms`,
  );

  // 3: a CLI command.
  const acct = await vsearch(["--data-dir", data, "accounts", "create", "--name", "smoke", "--json"], 60_000);
  const id = json(acct)?.id;
  check(
    "accounts create --name smoke --json returns an id",
    acct.code === 0 && typeof id === "string" && id.length > 0,
    `id=${id}, ${brief(acct)}`,
  );

  // 4: serve, healthz, a second serve refused, SIGTERM.
  const t0 = performance.now();
  const server = spawnServe(data);
  try {
    const url = await waitForUrl(server, 60_000);
    if (check("serve prints its URL", url !== null, url ?? `exit ${server.exitCode}`)) {
      const status = await healthz(url!, 30_000);
      check("GET /healthz answers 200", status === 200, `${status} after ${Math.round(performance.now() - t0)} ms`);
      // Issue 9's guards are wired in the binary's serve path too (src/http/serve-options.ts).
      const deep = await fetch(`${url}/v1/auth/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "[".repeat(50_000) + "]".repeat(50_000),
      });
      const deepBody = await deep.json().catch(() => null);
      check(
        "a 50 000-deep JSON body is a 422 json_too_deep",
        deep.status === 422 && deepBody?.detail?.[0]?.type === "json_too_deep",
        `${deep.status} ${JSON.stringify(deepBody)?.slice(0, 120)}`,
      );
      const put = await fetch(`${url}/v1/collections`, { method: "PUT" });
      check(
        "a wrong method is 405 with Allow",
        put.status === 405 && put.headers.get("allow") === "GET, HEAD, POST",
        `${put.status} Allow: ${put.headers.get("allow")}`,
      );
      const dup = await vsearch(["--data-dir", data, "serve", "--host", "127.0.0.1", "--port", "0"], 60_000);
      check(
        "a second serve on the same data dir exits non-zero with a clear message",
        dup.code !== null && dup.code !== 0 && /already|another/i.test(dup.stderr),
        `exit ${dup.code}: ${dup.stderr.trim().split("\n")[0]}`,
      );
    }
  } finally {
    const code = await stopServe(server);
    check("SIGTERM stops the server cleanly", code === 0, `exit ${code}`);
  }

  // 5: two processes extracting into one fresh data dir at once.
  const raceDir = join(work, "race");
  const [a, b] = await Promise.all([
    vsearch(["--data-dir", raceDir, "doctor", "--json", "--model-dir", modelDir]),
    vsearch(["--data-dir", raceDir, "doctor", "--json", "--model-dir", modelDir]),
  ]);
  doctorOk("race: first of two doctors started at once on a fresh data dir", a, true);
  doctorOk("race: second of two doctors started at once on a fresh data dir", b, true);
  const leftovers = [...snapshot(join(raceDir, "runtime")).keys()].filter((k) => k.includes(".tmp-"));
  check("race: no temp files left behind", leftovers.length === 0, leftovers.join(", "));

  // 6: index a video end to end with the compiled binary.
  await endToEnd(data, id, resolve(modelDir, "..", "tiny-random-whisper"));

  // 9: on-screen text, no model imported.
  await onScreenText(join(work, "ocr-data"));

  // 10: the same binary on PostgreSQL.
  await postgresPass(harness(modelDir));

  // 11: README's tour, its shell blocks run literally.
  await readmeTourPass({ ...harness(modelDir), bin, env });

  // 12: the media in an S3 bucket.
  await objectStoragePass(harness(modelDir));

  // Where else the binary wrote is a note, not a failure — except ONNX Runtime's telemetry files:
  // the binary switches that off at start (src/runtime/ort-telemetry.ts); no run here sets the switch.
  const strays = [...snapshot(env.HOME).keys()]
    .map((k) => `$HOME/${k}`)
    .concat([...snapshot(env.TMPDIR).keys()].map((k) => `$TMPDIR/${k}`));
  const telemetry = strays.filter((f) => /^\$HOME\/\.cache\/Microsoft\/|^\$TMPDIR\/(mat-debug-|\.ses$)/.test(f));
  check("ONNX Runtime's telemetry wrote nothing under $HOME or $TMPDIR", telemetry.length === 0, telemetry.join(", "));
  if (strays.length) console.log(`note: files written outside the data dir: ${strays.join(", ")}`);
  return checks.every((c) => c.ok) ? 0 : 1;
}

/** What the PostgreSQL pass (scripts/smoke-pg.ts) uses of this script. */
function harness(modelDir: string) {
  return {
    work,
    modelDir,
    check,
    vsearch,
    json,
    brief,
    spawnServe,
    spawnWorker,
    waitForUrl,
    healthz,
    stopServe,
    keyedRequests,
  };
}

async function endToEnd(data: string, accountId: string, whisperDir: string): Promise<void> {
  const clipDir = resolve(args["model-dir"]!);
  const imp = async (dir: string, role: string) => {
    const r = await vsearch(
      ["--data-dir", data, "--json", "models", "import", dir, "--role", role, "--dtype", "q8"],
      120_000,
    );
    return check(
      `models import ${role} (load-checked in a worker)`,
      r.code === 0 && !!json(r)?.model?.model_id,
      `${json(r)?.model?.model_id ?? r.stderr.trim().split("\n")[0]}, ${brief(r)}`,
    );
  };
  if (!(await imp(clipDir, "image-text")) || !existsSync(whisperDir)) return;
  // Whisper comes from a loopback Hugging Face hub (302 to a second "CDN" origin, X-Linked-Etag):
  // the binary's default pull path, its hash checks and the load check in its workers.
  const hub = startHub({ "Xenova/whisper-tiny.en@main": resolve(whisperDir) });
  try {
    const pull = await vsearch(["--data-dir", data, "--json", "models", "pull", "whisper-tiny.en"], 120_000, {
      HF_ENDPOINT: hub.url,
    });
    const got = json(pull)?.[0];
    const viaCdn = hub.requests.some((q) => q.origin === "cdn" && q.method === "GET");
    if (
      !check(
        "models pull whisper-tiny.en from the hub (HF_ENDPOINT; CDN redirect, hashes checked, load-checked)",
        pull.code === 0 && got?.source === "hub" && got?.unverified?.length === 0 && viaCdn,
        `${got?.model?.model_id ?? pull.stderr.trim().split("\n")[0]}, ${brief(pull)}`,
      )
    )
      return;
  } finally {
    await hub.stop();
  }

  const ffmpeg = readdirSync(join(data, "runtime"))
    .map((v) => join(data, "runtime", v, "ffmpeg"))
    .find(existsSync);
  if (!check("the extracted ffmpeg is there", !!ffmpeg, String(ffmpeg))) return;
  const clip = join(work, "smoke-clip.mp4");
  const gen = Bun.spawn(
    [
      ffmpeg!,
      "-hide_banner",
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=s=320x240:r=25:d=10",
      "-f",
      "lavfi",
      "-i",
      "color=c=red:s=320x240:r=25:d=10",
      "-f",
      "lavfi",
      "-i",
      "sine=f=440:d=20",
      "-filter_complex",
      "[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p[v]",
      "-map",
      "[v]",
      "-map",
      "2:a",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-g",
      "50",
      "-keyint_min",
      "50",
      "-sc_threshold",
      "0",
      "-c:a",
      "aac",
      clip,
    ],
    { env, stdout: "ignore", stderr: "pipe" },
  );
  const genCode = await Promise.race([gen.exited, Bun.sleep(60_000).then(() => "timeout" as const)]);
  if (!check("a 20 s test clip made with the binary's ffmpeg", genCode === 0 && existsSync(clip), `exit ${genCode}`))
    return;

  const ingest = await vsearch(
    ["--data-dir", data, "--json", "ingest", clip, "--account", accountId, "--collection", "smoke"],
    180_000,
  );
  const videoId = json(ingest)?.files?.[0]?.video_id as string | undefined;
  if (
    !check(
      "ingest indexes the clip in-process",
      ingest.code === 0 && !!videoId && json(ingest)?.summary?.indexed === 1,
      `${JSON.stringify(json(ingest)?.summary)}, ${brief(ingest)}`,
    )
  )
    return;
  // A long-keyframe-interval clip (x264's default 250 frames, at 24 fps: keyframes every 10.42 s,
  // off the 1 s sampling grid as real frame rates put them): its full decode is split over two
  // ffmpeg processes at a keyframe (src/media/split-decode.ts).
  const longGop = join(work, "smoke-long-gop.mp4");
  const genLong = Bun.spawn(
    [
      ffmpeg!,
      "-hide_banner",
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=s=320x240:r=24:d=12",
      "-f",
      "lavfi",
      "-i",
      "color=c=blue:s=320x240:r=24:d=12",
      "-filter_complex",
      "[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p[v]",
      "-map",
      "[v]",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-g",
      "250",
      longGop,
    ],
    { env, stdout: "ignore", stderr: "pipe" },
  );
  const genLongCode = await Promise.race([genLong.exited, Bun.sleep(60_000).then(() => "timeout" as const)]);
  if (
    !check(
      "a 24 s long-GOP clip made with the binary's ffmpeg",
      genLongCode === 0 && existsSync(longGop),
      `exit ${genLongCode}`,
    )
  )
    return;
  const ingestLong = await vsearch(
    ["--data-dir", data, "--json", "ingest", longGop, "--account", accountId, "--collection", "smoke"],
    180_000,
    { VSEARCH_FRAME_DECODE_PROCESSES: "2" },
  );
  const longVideoId = json(ingestLong)?.files?.[0]?.video_id as string | undefined;
  if (
    !check(
      "ingest indexes the long-GOP clip",
      ingestLong.code === 0 && !!longVideoId && json(ingestLong)?.summary?.indexed === 1,
      `${JSON.stringify(json(ingestLong)?.summary)}, ${brief(ingestLong)}`,
    )
  )
    return;
  const key = json(
    await vsearch(["--data-dir", data, "--json", "keys", "create", "--account", accountId, "--name", "smoke"], 60_000),
  )?.key as string | undefined;
  if (!check("keys create returns a key", typeof key === "string", "")) return;

  // Models unload after 2 s idle here, so the idle memory pass runs inside the binary (below).
  const server = spawnServe(data, { VSEARCH_MODEL_IDLE_UNLOAD_SECS: "2" });
  try {
    const url = await waitForUrl(server, 60_000);
    if (!check("serve starts again with the models installed", url !== null, url ?? `exit ${server.exitCode}`)) return;
    const get = keyedRequests(url!, key);
    const video = (await get(`/v1/videos/${videoId}`)).body?.data;
    const st = video?.stages ?? {};
    check("video is ready", video?.status === "ready", `status ${video?.status}`);
    check(
      "one decode for frames and shots (keyframe mode, the cut found)",
      st.shots?.reason === "keyframe decode, scored on the sampled frames" &&
        st.shots?.count === 2 &&
        st.embeddings?.status === "ran",
      JSON.stringify({ shots: st.shots, embeddings: st.embeddings?.count }),
    );
    check(
      "shot thumbnails and the poster came from that decode",
      /^2 shots and the poster from the frame decode$/.test(st.thumbnails?.reason ?? ""),
      JSON.stringify(st.thumbnails),
    );
    check("the transcript stage ran (speech worker)", st.transcript?.status === "ran", JSON.stringify(st.transcript));
    const longStages = (await get(`/v1/videos/${longVideoId}`)).body?.data?.stages ?? {};
    check(
      "the long-GOP clip's full decode ran in 2 ffmpeg processes split at a keyframe, and found the cut",
      /^full decode .*, in 2 processes split at keyframes \d+\.\d+ s/.test(longStages.frames?.reason ?? "") &&
        longStages.shots?.count === 2,
      JSON.stringify({ frames: longStages.frames, shots: longStages.shots }),
    );
    const vdir = join(data, "videos", videoId!);
    const files = existsSync(vdir) ? readdirSync(vdir).sort() : [];
    const shots = existsSync(join(vdir, "shots")) ? readdirSync(join(vdir, "shots")) : [];
    check(
      "poster and 2 shot thumbnails on disk, no temp folder left",
      files.join(",") === "poster.jpg,shots,source.mp4" && shots.length === 2,
      `${files.join(", ")}; shots: ${shots.join(", ")}`,
    );
    const vnni = /\bavx(512)?_vnni\b/.test(
      await Bun.file("/proc/cpuinfo")
        .text()
        .catch(() => ""),
    );
    const signed = join(data, "runtime", "signed-models");
    const derived = existsSync(signed) ? readdirSync(signed).filter((d) => !d.startsWith(".")) : [];
    check(
      vnni
        ? "signed int8 weights derived for the models (CPU has VNNI)"
        : "models load as installed (no VNNI on this CPU)",
      vnni
        ? derived.some((d) => d.startsWith("tiny-random-clip")) &&
            derived.some((d) => d.startsWith("whisper-tiny.en")) /* pulled above under its built-in name */
        : derived.length === 0,
      derived.join(", "),
    );
    // The vector index loads in the background after start (bounded wait: a few rows here).
    // "warm", or "warm (from its snapshot, N changed video(s) read again)" after a restart.
    let ready: any = null;
    const isWarm = () => String(ready?.checks?.search_index ?? "").startsWith("warm");
    for (let i = 0; i < 100 && !isWarm(); i++) {
      ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) })
        .then((r) => r.json())
        .catch(() => null);
      if (!isWarm()) await Bun.sleep(100);
    }
    check(
      "the search index warmed up in the background after start (/readyz)",
      isWarm() && (await metricOf(url!, "vsearch_search_index_loaded_ratio")) === 1,
      JSON.stringify(ready?.checks),
    );
    const searchRed = () =>
      get("/v1/search", {
        method: "POST",
        body: new URLSearchParams({ query: "a red screen", min_score: "0" }),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
    const search = await searchRed();
    check(
      "POST /v1/search answers 200 with the documented shape",
      search.status === 200 && Array.isArray(search.body?.data) && typeof search.body?.meta?.total === "number",
      `${search.status}, total ${search.body?.meta?.total}`,
    );
    // Idle: the query encoder's pool closes after 2 s, then the idle memory pass (malloc_trim and
    // madvise through bun:ffi, SQLite's shrink) runs in the binary; a later search loads it again.
    let passes: number | null = 0;
    for (let i = 0; i < 150 && !passes; i++) {
      passes = await metricOf(url!, "vsearch_idle_memory_passes");
      if (!passes) await Bun.sleep(200);
    }
    const running = await metricOf(url!, "vsearch_inference_running");
    check(
      "idle: the model pool unloaded and the idle memory pass ran",
      (passes ?? 0) >= 1 && running === 0,
      `passes ${passes}, inference_running ${running}`,
    );
    const again = await searchRed();
    check(
      "a search after the idle unload loads the model again, same answer",
      again.status === 200 &&
        again.body?.meta?.total >= 1 &&
        JSON.stringify(again.body?.data?.map((v: any) => v.video_id)) ===
          JSON.stringify(search.body?.data?.map((v: any) => v.video_id)),
      `${again.status}, total ${again.body?.meta?.total}`,
    );
    await playbackAndExports(get, url!, videoId!);
    await mcpOverStdio(data, accountId, videoId!);

    // 8: backup beside the running server (tar-stream and VACUUM INTO in the binary), restore, check.
    const archive = join(work, "smoke-backup.tar");
    const backup = await vsearch(["--data-dir", data, "--json", "backup", archive, "--include-models"], 120_000);
    check(
      "backup while serve runs",
      backup.code === 0 && json(backup)?.videos === 2 && existsSync(archive),
      `${json(backup)?.files} files, ${brief(backup)}`,
    );
    const restoredDir = join(work, "restored");
    const restore = await vsearch(["--data-dir", restoredDir, "--json", "restore", archive], 120_000);
    check("restore into an empty dir", restore.code === 0 && json(restore)?.videos === 2, brief(restore));
    const verify = await vsearch(["--data-dir", restoredDir, "--json", "check"], 60_000);
    check("the restored data dir passes vsearch check", verify.code === 0 && json(verify)?.ok === true, brief(verify));
  } finally {
    await stopServe(server);
  }
}

/** 6b: SPEC §11 in the binary: the rendition queue (migration 007) decides, a clip is cut with the embedded ffmpeg. */
async function playbackAndExports(
  get: (path: string) => Promise<{ status: number; body: any }>,
  url: string,
  videoId: string,
): Promise<void> {
  let rendition: any = null;
  for (let i = 0; i < 100 && !["ready", "not_needed", "failed"].includes(rendition?.status); i++) {
    rendition = (await get(`/v1/videos/${videoId}`)).body?.data?.rendition;
    if (!["ready", "not_needed", "failed"].includes(rendition?.status)) await Bun.sleep(300);
  }
  check(
    "an H.264/AAC MP4 needs no web rendition (decided by the rendition worker)",
    rendition?.status === "not_needed",
    JSON.stringify(rendition),
  );
  const clip = await get(`/v1/videos/${videoId}/clip?start=9&end=11.5`);
  const link = clip.body?.data?.url as string | undefined;
  const file = link
    ? await fetch(link.replace(/^https?:\/\/[^/]+/, url), {
        headers: { range: "bytes=0-7" },
        signal: AbortSignal.timeout(30_000),
      })
    : null;
  const head = file ? new Uint8Array(await file.arrayBuffer()) : new Uint8Array();
  check(
    "GET /v1/videos/{id}/clip cuts an MP4 with the embedded ffmpeg; its presigned URL serves ranges",
    clip.status === 200 && file?.status === 206 && new TextDecoder().decode(head.subarray(4, 8)) === "ftyp",
    `${clip.status} ${JSON.stringify(clip.body?.data ?? clip.body)}; media ${file?.status}`,
  );
}

/** 7: MCP over stdio from the compiled binary, beside the running server on the same data dir. */
async function mcpOverStdio(data: string, accountId: string, videoId: string): Promise<void> {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const transport = new StdioClientTransport({
    command: bin,
    args: ["--data-dir", data, "mcp", "--account", accountId],
    cwd: work,
    env,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
  const client = new Client({ name: "smoke", version: "1" });
  const bounded = <T>(p: Promise<T>, ms: number) =>
    Promise.race([
      p,
      Bun.sleep(ms).then(() => {
        throw new Error(`no answer in ${ms} ms; stderr: ${stderr.slice(-300)}`);
      }),
    ]);
  try {
    await bounded(client.connect(transport), 60_000);
    check(
      "vsearch mcp (stdio) initializes beside the running server",
      true,
      `server ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`,
    );
    const tools = (await bounded(client.listTools(), 30_000)).tools.map((t) => t.name);
    check(
      "tools/list names the nine agent tools",
      tools.length === 9 && tools.includes("search_videos") && tools.includes("get_frame"),
      tools.join(", "),
    );
    const found: any = await bounded(
      client.callTool({ name: "search_videos", arguments: { query: "a red screen", limit: 3 } }),
      120_000,
    );
    check(
      "search_videos over stdio answers (query encoder in the binary's workers)",
      !found.isError && Array.isArray(found.structuredContent?.clips),
      String(found.content?.[0]?.text).split("\n")[0],
    );
    const frame: any = await bounded(
      client.callTool({ name: "get_frame", arguments: { video_id: videoId, timestamp: 15 } }),
      60_000,
    );
    const img = frame.content?.find((c: any) => c.type === "image");
    check(
      "get_frame over stdio returns a JPEG image",
      !frame.isError && img?.mimeType === "image/jpeg" && Buffer.from(img.data, "base64")[0] === 0xff,
      String(frame.content?.[0]?.text),
    );
  } catch (e) {
    check("vsearch mcp over stdio", false, e instanceof Error ? e.message : String(e));
  } finally {
    await client.close().catch(() => {});
  }
}

/** 9: on-screen text with no model imported. */
const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
const CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc";

/** A 6 s 720p clip made by the binary's ffmpeg with `captions` (drawtext option strings) burned in. */
async function captionClip(ffmpeg: string, out: string, captions: string[]): Promise<boolean> {
  const gen = Bun.spawn(
    [
      ffmpeg,
      ...["-hide_banner", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=darkgreen:s=1280x720:r=10:d=6"],
      ...["-vf", captions.map((c) => `drawtext=${c}`).join(",")],
      ...["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", out],
    ],
    { env, stdout: "ignore", stderr: "pipe" },
  );
  const code = await Promise.race([gen.exited, Bun.sleep(60_000).then(() => "timeout" as const)]);
  return code === 0 && existsSync(out);
}

async function onScreenText(data: string): Promise<void> {
  const acct = json(await vsearch(["--data-dir", data, "accounts", "create", "--name", "ocr", "--json"], 60_000))?.id as
    | string
    | undefined;
  if (!check("ocr: account on a fresh data dir (no models)", typeof acct === "string", "")) return;
  const extractedIn = (sub: string) =>
    readdirSync(join(data, "runtime"))
      .map((v) => join(data, "runtime", v, sub))
      .filter(existsSync)
      .flatMap((d) => readdirSync(d))
      .sort()
      .join(",");
  check(
    "ocr: wasm cores and English data extracted to <data-dir>/runtime/<version>/tesseract/",
    extractedIn("tesseract") === "eng.traineddata.gz,tesseract-core-lstm.wasm,tesseract-core-simd-lstm.wasm",
    extractedIn("tesseract"),
  );
  check(
    "ocr: PP-OCR's detector, recognizer and key list extracted to <data-dir>/runtime/<version>/ppocr/",
    extractedIn("ppocr") === "ch_PP-OCRv4_det_infer.onnx,ch_PP-OCRv4_rec_infer.onnx,ppocr_keys_v1.txt",
    extractedIn("ppocr"),
  );
  if (!check("ocr: a system font for drawtext", existsSync(FONT), FONT)) return;
  const cjk = existsSync(CJK_FONT);
  if (!cjk) console.log(`  (no ${CJK_FONT}: the Chinese caption check is skipped; Debian: fonts-wqy-microhei)`);
  const ffmpeg = readdirSync(join(data, "runtime"))
    .map((v) => join(data, "runtime", v, "ffmpeg"))
    .find(existsSync)!;
  const clip = join(work, "caption.mp4");
  const tessClip = join(work, "caption-tesseract.mp4");
  const made =
    (await captionClip(ffmpeg, clip, [
      `fontfile=${FONT}:text='Welcome to the observatory':fontsize=44:fontcolor=white:x=(w-tw)/2:y=h-140`,
      ...(cjk ? [`fontfile=${CJK_FONT}:text='季度预算会议':fontsize=44:fontcolor=white:x=(w-tw)/2:y=120`] : []),
    ])) &&
    (await captionClip(ffmpeg, tessClip, [
      `fontfile=${FONT}:text='Lighthouse opening hours':fontsize=44:fontcolor=white:x=(w-tw)/2:y=h-140`,
    ]));
  if (!check("ocr: 6 s clips with burned-in captions", made, "")) return;
  // The default engine (PP-OCR, in its own worker pool on the embedded ONNX Runtime), then tesseract.js.
  const ingested: Record<string, string | undefined> = {};
  for (const [engine, file] of [
    ["ppocr", clip],
    ["tesseract", tessClip],
  ] as const) {
    const ingest = await vsearch(
      ["--data-dir", data, "--json", "ingest", file, "--account", acct!, "--collection", `ocr-${engine}`],
      180_000,
      { VSEARCH_OCR_ENGINE: engine },
    );
    ingested[engine] = json(ingest)?.files?.[0]?.video_id as string | undefined;
    if (
      !check(
        `ocr: ingest with no model installed (ocr_engine ${engine})`,
        ingest.code === 0 && !!ingested[engine] && json(ingest)?.summary?.indexed === 1,
        `${JSON.stringify(json(ingest)?.summary)}, ${brief(ingest)}`,
      )
    )
      return;
  }
  const key = json(
    await vsearch(["--data-dir", data, "--json", "keys", "create", "--account", acct!, "--name", "ocr"], 60_000),
  )?.key as string | undefined;
  const server = spawnServe(data);
  try {
    const url = await waitForUrl(server, 60_000);
    if (!check("ocr: serve starts", url !== null, url ?? `exit ${server.exitCode}`)) return;
    const get = keyedRequests(url!, key);
    const stages = async (id: string | undefined) => (await get(`/v1/videos/${id}`)).body?.data?.stages ?? {};
    const pp = await stages(ingested.ppocr);
    check(
      "ocr: the ocr stage ran in the binary with PP-OCR (embeddings skipped: no model)",
      pp.ocr?.status === "ran" &&
        pp.ocr?.count >= (cjk ? 2 : 1) &&
        /lines? recognized/.test(pp.ocr?.reason ?? "") &&
        pp.embeddings?.status === "skipped",
      JSON.stringify(pp.ocr),
    );
    const tess = await stages(ingested.tesseract);
    check(
      "ocr: … and with tesseract.js",
      tess.ocr?.status === "ran" && tess.ocr?.count >= 1 && !/recognized/.test(tess.ocr?.reason ?? ""),
      JSON.stringify(tess.ocr),
    );
    const find = async (query: string) => {
      const search = await get("/v1/search", {
        method: "POST",
        body: new URLSearchParams({ query, modes: "ocr" }),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      const seg = search.body?.data?.[0]?.segments?.[0];
      return {
        ok: search.status === 200 && seg?.type === "ocr",
        text: String(seg?.text_content ?? ""),
        detail: `${search.status}: ${JSON.stringify(seg ? { type: seg.type, text: seg.text_content, start: seg.timestamp_start, end: seg.timestamp_end } : search.body)}`,
      };
    };
    for (const [query, want, what] of [
      ["observatory", /observatory/i, "a word of the caption (PP-OCR)"],
      ["lighthouse", /lighthouse/i, "a word of the caption (tesseract)"],
      ...(cjk ? [["预算", /季度预算会议/, "预算 inside the Chinese caption 季度预算会议 (no spaces)"]] : []),
    ] as [string, RegExp, string][]) {
      const r = await find(query);
      check(`ocr: POST /v1/search modes=ocr finds ${what}`, r.ok && want.test(r.text), r.detail);
    }
  } finally {
    await stopServe(server);
  }
}

let code = 1;
try {
  code = await main();
} catch (e) {
  check("smoke test ran to the end", false, e instanceof Error ? (e.stack ?? e.message) : String(e));
} finally {
  if (!args.keep) rmSync(work, { recursive: true, force: true });
}
const failed = checks.filter((c) => !c.ok).length;
console.log(
  `smoke test: ${checks.length - failed}/${checks.length} checks passed${
    failed
      ? `; FAILED: ${checks
          .filter((c) => !c.ok)
          .map((c) => c.name)
          .join("; ")}`
      : ""
  }`,
);
process.exit(code);
