import type { Command } from "commander";
import { clusterSecretFile } from "../signing/cluster-secret.ts";
import { bucketFromConfig } from "../media/object-store-s3.ts";
import { memoryBudgetBytes } from "../config/memory-budget.ts";
import { modelWarnings } from "../system/health.ts";
import { runSelfTest, type RuntimePaths } from "../runtime/index.ts";
import { readAdmissionStatus } from "../search/memory-admission.ts";
import { VERSION } from "../version.ts";
import { VideoFiles } from "../videos/files.ts";
import type { CacheState } from "../videos/media-cache.ts";
import type { CliContext } from "../cli/context.ts";
import type { Config } from "../config/config.ts";
import { migrationLine, storeLine } from "../store/describe.ts";
import { StoreError } from "../store/errors.ts";
import { SchemaTooNewError } from "../store/pg/migrate.ts";
import { describeUrl } from "../store/pg/open.ts";

export function registerSystemCommands(program: Command, ctx: CliContext) {
  program
    .command("openapi")
    .description("Print the OpenAPI 3.1 document")
    .action(async (_o: unknown, cmd: Command) => {
      const doc = await ctx.withApp(cmd, async (app) =>
        (await app.fetch(new Request("http://local/v1/openapi.json"))).json(),
      );
      ctx.stdout(JSON.stringify(doc, null, 2) + "\n");
    });

  program
    .command("doctor")
    .description("Check the native runtime, the store, the models and which accelerator is used (and why)")
    .option(
      "--model-dir <dir>",
      "also run this model folder once in a worker (default: the installed image-text model)",
    )
    .action(async (opts: { modelDir?: string }, cmd: Command) => {
      const config = ctx.config(cmd);
      const postgres = Boolean(config.databaseUrl);
      const report = await ctx
        .withApp(cmd, async (app) => {
          const system = app.services.system;
          const clip = system.activeModel("image-text");
          const speech = system.activeModel("speech");
          const modelDir = opts.modelDir ?? clip?.dir ?? speech?.dir;
          const device = await system.device().catch((e: Error) => ({ device: "unavailable", reason: e.message }));
          const runtime = await runSelfTest(app.runtime as RuntimePaths, {
            modelDir,
            device: device.device === "unavailable" ? "cpu" : (device.device as "cpu"),
            // On PostgreSQL neither SQLite nor sqlite-vec holds anything: their checks would prove nothing.
            sqliteVec: !postgres,
          });
          // Not failures (the service runs without models) but each missing piece, with its fix.
          const coverage = await app.services.videos.modelCoverage({
            imageText: clip?.modelId ?? null,
            speech: speech?.modelId ?? null,
          });
          // The models' warnings (as GET /v1/system/status gives them), then the search index's.
          const warnings: { role: string; code: string; message: string; videos: number; fix: string }[] =
            modelWarnings({ "image-text": clip, speech }, coverage);
          // The in-memory vector index against vector_memory_budget: what the running server wrote
          // (index/status.json), else an estimate from the stored vectors (~200 B a row).
          const budget = memoryBudgetBytes(app.config.vectorMemoryBudget);
          const served = readAdmissionStatus(app.config.dataDir);
          const store = await system.storeCounts();
          const estimate = store.frames * 200;
          // pgvector: no in-memory index (no budget, no warm-up); its HNSW indexes and whether each is usable.
          const pgvector = app.config.vectorBackend === "pgvector";
          const searchIndex = {
            backend: app.config.vectorBackend,
            hnsw_indexes: pgvector ? await system.databaseVectorIndexes() : [],
            budget_mb: budget > 0 ? Math.round(budget / 2 ** 20) : null,
            estimated_mb: Math.round(estimate / 2 ** 20),
            over_budget_accounts: served?.degraded ?? [],
            reported_by_server: served ? { pid: served.pid, at: served.writtenAt, budget: served.budgetReason } : null,
          };
          if (!pgvector && (searchIndex.over_budget_accounts.length || (budget > 0 && estimate > budget)))
            warnings.push({
              role: "search",
              code: "VECTOR_MEMORY_BUDGET",
              message: searchIndex.over_budget_accounts.length
                ? `${searchIndex.over_budget_accounts.length} account(s) over vector_memory_budget (${served!.budgetReason}): searched with exact scans from the database, slower`
                : `the vector index needs ~${searchIndex.estimated_mb} MiB, over vector_memory_budget (${searchIndex.budget_mb} MiB): some accounts will be searched from the database`,
              videos: 0,
              fix: "raise vector_memory_budget (or give the machine more memory), then restart vsearch serve",
            });
          // Media in a bucket: reachable with these keys (one listing of at most one key)?
          const bucket = bucketFromConfig(app.config);
          const mediaStore = bucket
            ? {
                kind: "s3" as const,
                bucket: bucket.description,
                error: await bucket.probe().then(
                  () => null,
                  (e: unknown) => s3Problem(e),
                ),
                // This node's cache as the media root holds it now, against media_cache_mb.
                cache: cacheOnDisk(
                  await new VideoFiles(
                    app.config.mediaRoot,
                    undefined,
                    bucket,
                    app.config.mediaCacheMb === undefined ? undefined : app.config.mediaCacheMb * 2 ** 20,
                  ).cacheState(),
                ),
              }
            : { kind: "filesystem" as const, bucket: null, error: null, cache: null };
          return {
            ok: runtime.ok && device.device !== "unavailable" && mediaStore.error === null,
            warnings,
            search_index: searchIndex,
            version: VERSION,
            data_dir: app.config.dataDir,
            // Where the media and the cluster secret are (docs/SCALE-OUT.md): every node must agree.
            media_root: app.config.mediaRoot,
            media_store: mediaStore,
            secret_file: clusterSecretFile(app.config),
            store_backend: system.storeBackend(),
            device: { requested: app.config.device, in_use: device.device, reason: device.reason },
            int8_weights: system.signedWeights(),
            models: {
              "image-text": clip ? { name: clip.name, model_id: clip.modelId, dtype: clip.dtype } : null,
              speech: speech ? { name: speech.name, model_id: speech.modelId, dtype: speech.dtype } : null,
              text: system.activeModel("text")?.modelId ?? null,
            },
            runtime,
            store,
          };
        })
        .catch(async (e: unknown) => {
          // An unreachable server, a missing pgvector, a schema too new: doctor's answer, not a crash.
          if (!postgres || !(e instanceof StoreError || e instanceof SchemaTooNewError)) throw e;
          await storeUnavailable(ctx, cmd, config, e.message);
          return null;
        });
      if (!report) return;
      const backend = report.store_backend;
      ctx.print(cmd, report, () =>
        [
          `vsearch ${report.version} — ${report.ok ? "all checks passed" : "PROBLEMS FOUND"}${report.warnings.length ? `, ${report.warnings.length} warning${report.warnings.length === 1 ? "" : "s"}` : ""}`,
          `data dir      ${report.data_dir}`,
          `media root    ${report.media_root === report.data_dir ? "the data dir" : report.media_root}${report.media_store.kind === "s3" ? " (this node's cache)" : ""}; secret ${report.secret_file}`,
          `media store   ${report.media_store.kind === "s3" ? `${report.media_store.bucket}: ${report.media_store.error ? `UNREACHABLE: ${report.media_store.error}` : "reachable"}` : "files on the media root"}`,
          ...(report.media_store.cache ? [`media cache   ${cacheLine(report.media_store.cache)}`] : []),
          `store backend ${storeLine(backend)}`,
          ...(backend.kind === "postgres" ? [`migrations    ${migrationLine(backend)}`] : []),
          `device        ${report.device.in_use} (requested ${report.device.requested}): ${report.device.reason}`,
          `int8 weights  ${report.int8_weights.reason}`,
          backend.kind === "postgres"
            ? "sqlite        not used (PostgreSQL store): SQLite, sqlite-vec and vec0 not checked"
            : `sqlite        ${report.runtime.sqlite_version}, sqlite-vec ${report.runtime.vec_version}, vec0 query ${report.runtime.vec_query_ok ? "ok" : "FAILED"}`,
          `ffmpeg        ${report.runtime.ffmpeg_version ?? "MISSING"}`,
          `ffprobe       ${report.runtime.ffprobe_version ?? "MISSING"}`,
          `onnx          ${report.runtime.onnx_ok === undefined ? "not checked (no model installed)" : report.runtime.onnx_ok ? `ok (${report.runtime.onnx?.model_id} in worker thread)` : "FAILED"}`,
          `image-text    ${report.models["image-text"]?.model_id ?? "not installed"}`,
          `speech        ${report.models.speech?.model_id ?? "not installed"}`,
          `store         ${report.store.accounts} accounts, ${report.store.videos} videos, ${report.store.frames} frames, ${report.store.jobs_waiting} jobs waiting, ${report.store.jobs_failed} failed`,
          report.search_index.backend === "pgvector"
            ? `vector index  pgvector in PostgreSQL (no in-memory index): ${report.search_index.hnsw_indexes.map((i) => `${i.name}${i.valid ? "" : i.building ? " (building: searches scan exactly until it is done)" : " INVALID (a build failed: DROP INDEX CONCURRENTLY it; the next search makes it again)"}`).join(", ") || "no HNSW index yet (made when a dimension is first searched or indexed)"}`
            : `vector index  ~${report.search_index.estimated_mb} MiB of vector_memory_budget ${report.search_index.budget_mb === null ? "(no limit)" : `${report.search_index.budget_mb} MiB`}${report.search_index.over_budget_accounts.length ? `; ${report.search_index.over_budget_accounts.length} account(s) over it, searched from the database` : ""}`,
          ...report.runtime.errors.map((e) => `error         ${e}`),
          ...report.warnings.flatMap((w) => [`warning       ${w.role}: ${w.message}`, `              fix: ${w.fix}`]),
        ].join("\n"),
      );
      if (!report.ok) process.exitCode = 1;
    });
}

/**
 * doctor when the PostgreSQL store cannot be opened: the problem in one line (what open.ts says:
 * unreachable, too old, pgvector missing or not enabled, a schema newer than this binary), beside
 * the checks that need no store (ffmpeg, ffprobe). Exit code 1.
 */
async function storeUnavailable(ctx: CliContext, cmd: Command, config: Config, problem: string): Promise<void> {
  const location = describeUrl(config.databaseUrl!);
  const runtime = await runSelfTest((await ctx.runtime(config)) as RuntimePaths, { sqliteVec: false });
  const report = {
    ok: false,
    version: VERSION,
    data_dir: config.dataDir,
    store_backend: { kind: "postgres" as const, location, error: problem },
    problems: [problem, ...runtime.errors],
    runtime,
  };
  ctx.print(cmd, report, () =>
    [
      `vsearch ${VERSION} — PROBLEMS FOUND`,
      `data dir      ${config.dataDir}`,
      `store backend PostgreSQL at ${location}: UNAVAILABLE`,
      `problem       ${problem}`,
      "sqlite        not used (PostgreSQL store): SQLite, sqlite-vec and vec0 not checked",
      `ffmpeg        ${runtime.ffmpeg_version ?? "MISSING"}`,
      `ffprobe       ${runtime.ffprobe_version ?? "MISSING"}`,
      ...runtime.errors.map((e) => `error         ${e}`),
    ].join("\n"),
  );
  process.exitCode = 1;
}

/** What a failed bucket call says, in one line, without the keys. */
function s3Problem(e: unknown): string {
  const err = e as { code?: string; message?: string };
  const said = [err?.code, err?.message].filter(Boolean).join(": ") || String(e);
  return `${said.slice(0, 300)} (check s3_endpoint, s3_bucket, s3_region and the keys)`;
}

/** What a separate process can say of the cache: what is on disk (evictions are the running node's). */
function cacheOnDisk(c: CacheState | null): Omit<CacheState, "evicted_files"> | null {
  return c && { used_bytes: c.used_bytes, bound_bytes: c.bound_bytes, videos: c.videos };
}

/** `12.3 GiB of 50.0 GiB (media_cache_mb), 140 videos`: this node's cache of the bucket. */
function cacheLine(c: { used_bytes: number; bound_bytes: number; videos: number }): string {
  const gib = (n: number) =>
    n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(1)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${n} B`;
  return `${gib(c.used_bytes)} of ${gib(c.bound_bytes)} (media_cache_mb), ${c.videos} video${c.videos === 1 ? "" : "s"}; least recently used evicted first`;
}
