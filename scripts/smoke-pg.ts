/**
 * The smoke test's PostgreSQL pass (scripts/smoke-test.ts, step 10): the same compiled binary with
 * VSEARCH_DATABASE_URL on a throw-away cluster (test/pg/cluster.ts: initdb into a temp dir, one
 * server on a free loopback port, durability off; as root through runuser), proving that the binary
 * carries postgres.js and the PostgreSQL migrations (`*.sql` imported as text): its first start
 * applies every migration it knows to an empty database. Then, as an operator would: `doctor`
 * names the backend (without the URL's password), an account and a key, the tiny CLIP model,
 * `serve` (/healthz, /readyz with the database and the warmed index), a generated clip with a
 * burned-in caption uploaded and indexed, a text search finding its moment by what is seen (the
 * vector index warmed from PostgreSQL) and by the caption (PostgreSQL full-text search), `backup`
 * naming pg_dump, and SIGTERM.
 *
 * Without PostgreSQL 15+ and pgvector 0.8+ the pass is skipped, saying so; with VSEARCH_REQUIRE_PG=1
 * (as .ci/run sets) that is a failed check instead.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { findPostgres, startCluster } from "../test/pg/cluster.ts";

export interface SmokeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** What the pass borrows from scripts/smoke-test.ts. */
export interface SmokeHarness {
  work: string;
  modelDir: string;
  check(name: string, ok: boolean, detail?: string): boolean;
  vsearch(argv: string[], timeoutMs?: number, extraEnv?: Record<string, string>): Promise<SmokeRun>;
  json(r: SmokeRun): any;
  brief(r: SmokeRun): string;
  spawnServe(
    data: string,
    extraEnv?: Record<string, string>,
    extraArgs?: string[],
  ): Bun.Subprocess<"ignore", "pipe", "pipe">;
  spawnWorker(data: string, extraEnv?: Record<string, string>): Bun.Subprocess<"ignore", "pipe", "pipe">;
  waitForUrl(proc: Bun.Subprocess<"ignore", "pipe", "pipe">, timeoutMs: number): Promise<string | null>;
  healthz(url: string, timeoutMs: number): Promise<number | string>;
  stopServe(server: Bun.Subprocess): Promise<number | "timeout">;
  keyedRequests(
    url: string,
    key: string | undefined,
  ): (path: string, init?: RequestInit) => Promise<{ status: number; body: any }>;
}

const FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf";
/** Never sent (the cluster trusts loopback) and never to be printed by the binary. */
const PASSWORD = "smoke-pg-password-never-shown";

export async function postgresPass(h: SmokeHarness): Promise<void> {
  const { check } = h;
  const found = findPostgres();
  if ("missing" in found) {
    const why = `no PostgreSQL 15+ with pgvector 0.8+ (${found.missing})`;
    if (process.env.VSEARCH_REQUIRE_PG === "1") check("pg: PostgreSQL is there (VSEARCH_REQUIRE_PG=1)", false, why);
    else console.log(`PostgreSQL pass skipped: ${why}; VSEARCH_REQUIRE_PG=1 makes this a failure`);
    return;
  }
  const t0 = performance.now();
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster(found.bin);
  } catch (e) {
    check("pg: a throw-away cluster starts", false, e instanceof Error ? e.message : String(e));
    return;
  }
  const timings: Record<string, number> = {};
  try {
    const admin = postgres(cluster.adminUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe("CREATE DATABASE vsearch_smoke");
    } finally {
      await admin.end({ timeout: 5 });
    }
    timings.cluster_ms = performance.now() - t0;
    check(
      "pg: a throw-away cluster starts",
      true,
      `PostgreSQL ${found.bin.major} (${found.bin.bindir}), pgvector ${found.bin.pgvector}, port ${cluster.port}; initdb ${Math.round(cluster.timings.initdbMs)} ms, start ${Math.round(cluster.timings.startMs)} ms`,
    );
    const url = `postgres://vsearch:${PASSWORD}@127.0.0.1:${cluster.port}/vsearch_smoke`;
    await withDatabase(h, url, `127.0.0.1:${cluster.port}/vsearch_smoke`, timings);
  } finally {
    await cluster.stop().catch((e) => console.log(`note: stopping the cluster: ${e}`));
    check("pg: the cluster is stopped and its folder removed", !existsSync(cluster.dir), cluster.dir);
    timings.total_ms = performance.now() - t0;
    console.log(
      `PostgreSQL pass: ${Object.entries(timings)
        .map(([k, v]) => `${k} ${Math.round(v)}`)
        .join(", ")}`,
    );
  }
}

async function withDatabase(h: SmokeHarness, url: string, location: string, timings: Record<string, number>) {
  const { check, json, brief } = h;
  const data = join(h.work, "pg-data");
  const pg = { VSEARCH_DATABASE_URL: url };
  const noPassword = (...r: SmokeRun[]) => r.every((x) => !x.stdout.includes(PASSWORD) && !x.stderr.includes(PASSWORD));

  // The first start on an empty database applies every migration the binary carries.
  const first = await h.vsearch(["--data-dir", data, "--json", "doctor"], 120_000, pg);
  timings.first_doctor_ms = first.ms;
  const sb = json(first)?.store_backend;
  const known = sb?.binary_schema_version;
  check(
    "pg: doctor --json on an empty database migrates it with the SQL inside the binary (postgres.js, *.sql as text)",
    first.code === 0 &&
      json(first)?.ok === true &&
      sb?.kind === "postgres" &&
      sb.location === location &&
      known > 0 &&
      sb.schema_version === known &&
      sb.pending_migrations?.length === 0 &&
      JSON.stringify(sb.migrated_at_open) === JSON.stringify(Array.from({ length: known }, (_, i) => i + 1)) &&
      json(first)?.runtime?.vec_query_ok === null &&
      noPassword(first),
    `${JSON.stringify(sb)}, ${brief(first)}`,
  );

  const acct = await h.vsearch(["--data-dir", data, "--json", "accounts", "create", "--name", "smoke-pg"], 60_000, pg);
  const accountId = json(acct)?.id as string | undefined;
  const keys = await h.vsearch(
    ["--data-dir", data, "--json", "keys", "create", "--account", String(accountId), "--name", "smoke-pg"],
    60_000,
    pg,
  );
  const key = json(keys)?.key as string | undefined;
  if (
    !check(
      "pg: accounts create and keys create on PostgreSQL",
      typeof accountId === "string" && typeof key === "string",
      `${brief(acct)}; ${brief(keys)}`,
    )
  )
    return;
  const imp = await h.vsearch(
    ["--data-dir", data, "--json", "models", "import", h.modelDir, "--role", "image-text", "--dtype", "q8"],
    120_000,
    pg,
  );
  if (!check("pg: models import image-text", imp.code === 0 && !!json(imp)?.model?.model_id, brief(imp))) return;

  const ffmpeg = readdirSync(join(data, "runtime"))
    .map((v) => join(data, "runtime", v, "ffmpeg"))
    .find(existsSync);
  const caption = existsSync(FONT);
  if (!caption) console.log(`  (no ${FONT}: the caption search on PostgreSQL is skipped; Debian: fonts-dejavu-core)`);
  const clip = join(h.work, "smoke-pg-clip.mp4");
  const draw = caption
    ? `,drawtext=fontfile=${FONT}:text='Welcome to the observatory':fontsize=40:fontcolor=white:x=(w-tw)/2:y=h-90`
    : "";
  const gen = ffmpeg
    ? Bun.spawn(
        [
          ffmpeg,
          ...["-hide_banner", "-v", "error", "-y"],
          ...[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=640x360:r=10:d=4",
            "-f",
            "lavfi",
            "-i",
            "color=c=red:s=640x360:r=10:d=4",
          ],
          ...["-filter_complex", `[0:v][1:v]concat=n=2:v=1:a=0,format=yuv420p${draw}[v]`, "-map", "[v]"],
          ...["-c:v", "libx264", "-preset", "veryfast", clip],
        ],
        { stdout: "ignore", stderr: "pipe" },
      )
    : null;
  const genCode = gen
    ? await Promise.race([gen.exited, Bun.sleep(60_000).then(() => "timeout" as const)])
    : "no ffmpeg";
  if (!check("pg: an 8 s clip made with the binary's ffmpeg", genCode === 0 && existsSync(clip), `exit ${genCode}`))
    return;

  // The jobs run on the binary as a `vsearch worker` (issue 26): `serve --role serve` claims
  // nothing; the worker has a data dir of its own and mounts the server's media as a deployment
  // does (VSEARCH_MEDIA_ROOT: the videos and the cluster secret, whose fingerprint the database
  // holds: a worker with a secret of its own is refused).
  const tServe = performance.now();
  const server = h.spawnServe(data, pg, ["--role", "serve"]);
  const workerData = join(h.work, "pg-worker");
  mkdirSync(workerData, { recursive: true });
  const worker = h.spawnWorker(workerData, {
    ...pg,
    VSEARCH_MEDIA_ROOT: data,
    VSEARCH_MODELS_DIR: join(data, "models"),
  });
  try {
    const started = await firstJson(worker, 60_000);
    check(
      "pg: the binary runs as a worker (vsearch worker: all kinds, claiming)",
      Array.isArray(started?.kinds) && started.kinds.length === 3 && started.refused === null,
      JSON.stringify(started) ?? `exit ${worker.exitCode}`,
    );
    const base = await h.waitForUrl(server, 60_000);
    if (!check("pg: serve on PostgreSQL prints its URL", base !== null, base ?? `exit ${server.exitCode}`)) return;
    const status = await h.healthz(base!, 30_000);
    timings.serve_healthz_ms = performance.now() - tServe;
    check("pg: GET /healthz answers 200", status === 200, `${status}`);
    let ready: any = null;
    for (let i = 0; i < 100 && !String(ready?.checks?.search_index ?? "").startsWith("warm"); i++) {
      ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) })
        .then((r) => r.json())
        .catch(() => null);
      if (!String(ready?.checks?.search_index ?? "").startsWith("warm")) await Bun.sleep(100);
    }
    check(
      "pg: GET /readyz: the database answers, the search index warmed",
      ready?.status === "ready" &&
        ready?.checks?.database === "ok" &&
        String(ready?.checks?.search_index).startsWith("warm"),
      JSON.stringify(ready?.checks),
    );

    const get = h.keyedRequests(base!, key);
    const col = await get("/v1/collections", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "smoke-pg" }),
    });
    const fd = new FormData();
    fd.append("collection_id", String(col.body?.data?.id));
    fd.append("file", Bun.file(clip), "smoke-pg.mp4");
    const tUpload = performance.now();
    const up = await get("/v1/upload", { method: "POST", body: fd });
    const jobId = up.body?.data?.job_id as string | undefined;
    const videoId = up.body?.data?.video_id as string | undefined;
    if (!check("pg: POST /v1/upload accepts the clip", !!jobId && !!videoId, `${up.status} ${JSON.stringify(up.body)}`))
      return;
    let job: any = null;
    for (let i = 0; i < 900 && !["done", "failed"].includes(job?.status); i++) {
      job = (await get(`/v1/jobs/${jobId}`)).body?.data;
      if (!["done", "failed"].includes(job?.status)) await Bun.sleep(200);
    }
    timings.upload_to_indexed_ms = performance.now() - tUpload;
    if (!check("pg: the ingest job finishes", job?.status === "done", JSON.stringify(job)?.slice(0, 300))) return;

    const search = async (params: Record<string, string>) =>
      await get("/v1/search", {
        method: "POST",
        body: new URLSearchParams(params),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
    // The worker indexed it: the server's in-memory index learns of it through the database
    // (a cross-process video.content_changed), within a second or so; bounded at 15 s.
    let seen = await search({ query: "a red screen", min_score: "0" });
    for (let i = 0; i < 30 && seen.status === 200 && !seen.body?.data?.length; i++) {
      await Bun.sleep(500);
      seen = await search({ query: "a red screen", min_score: "0" });
    }
    const hit = seen.body?.data?.[0];
    const seg = hit?.segments?.[0];
    check(
      "pg: a text search returns the clip's moment (vector index warmed from PostgreSQL)",
      seen.status === 200 &&
        hit?.video_id === videoId &&
        typeof seg?.timestamp_start === "number" &&
        seg.timestamp_end >= seg.timestamp_start,
      `${seen.status}: ${JSON.stringify(seg ? { video: hit.video_id, type: seg.type, start: seg.timestamp_start, end: seg.timestamp_end } : seen.body)?.slice(0, 300)}`,
    );
    if (caption) {
      const read = await search({ query: "observatory", modes: "ocr" });
      const ocr = read.body?.data?.[0]?.segments?.[0];
      check(
        "pg: a text search finds the burned-in caption (PostgreSQL full-text search)",
        read.status === 200 &&
          read.body?.data?.[0]?.video_id === videoId &&
          ocr?.type === "ocr" &&
          /observatory/i.test(ocr?.text_content ?? ""),
        `${read.status}: ${JSON.stringify(ocr ? { type: ocr.type, text: ocr.text_content, start: ocr.timestamp_start } : read.body)?.slice(0, 300)}`,
      );
    }

    const doctor = await h.vsearch(["--data-dir", data, "doctor"], 120_000, pg);
    check(
      "pg: doctor names the backend, its versions and migration state; SQLite not used",
      doctor.code === 0 &&
        /store backend PostgreSQL (1[5-9]|[2-9]\d)\.\S* at /.test(doctor.stdout) &&
        doctor.stdout.includes(` at ${location} (role vsearch), pgvector `) &&
        /migrations +schema version (\d+) of \1, up to date/.test(doctor.stdout) &&
        /sqlite +not used/.test(doctor.stdout) &&
        /store +1 accounts, 1 videos, [1-9]\d* frames/.test(doctor.stdout) &&
        noPassword(doctor),
      doctor.stdout
        .split("\n")
        .filter((l) => /^(store|migrations|sqlite)/.test(l))
        .join(" | ") || brief(doctor),
    );
    const archive = join(h.work, "smoke-pg-backup.tar");
    const backup = await h.vsearch(["--data-dir", data, "--json", "backup", archive], 120_000, pg);
    const rows = json(backup)?.rows;
    check(
      "pg: backup beside serve archives the files and names pg_dump for the rows",
      backup.code === 0 &&
        json(backup)?.videos === 1 &&
        rows?.in_archive === false &&
        typeof rows?.pg_dump === "string" &&
        rows.pg_dump.startsWith("pg_dump --format=custom") &&
        rows.pg_dump.includes("--dbname=vsearch_smoke") &&
        noPassword(backup),
      `${rows?.pg_dump}, ${brief(backup)}`,
    );
    const nodes = json(await h.vsearch(["--data-dir", data, "--json", "nodes"], 60_000, pg))?.nodes ?? [];
    check(
      "pg: vsearch nodes lists the server (role serve) and the worker, both running",
      nodes.some((n: any) => n.role === "serve" && n.status === "running") &&
        nodes.some((n: any) => n.role === "worker" && n.status === "running" && n.device),
      JSON.stringify(nodes.map((n: any) => [n.role, n.status, n.device])),
    );
  } finally {
    const workerCode = await h.stopServe(worker);
    check("pg: SIGTERM stops the worker cleanly", workerCode === 0, `exit ${workerCode}`);
    const code = await h.stopServe(server);
    check("pg: SIGTERM stops the server cleanly", code === 0, `exit ${code}`);
  }
}

/** The first JSON document a process prints on stdout (bounded); null if none came. */
async function firstJson(proc: Bun.Subprocess<"ignore", "pipe", "pipe">, timeoutMs: number): Promise<any> {
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + timeoutMs;
  let text = "";
  try {
    while (Date.now() < deadline && !text.trimEnd().endsWith("}")) {
      const next = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
      if (next === null || next.done) break;
      text += new TextDecoder().decode(next.value);
    }
    return JSON.parse(text);
  } catch {
    return null;
  } finally {
    reader.releaseLock();
  }
}
