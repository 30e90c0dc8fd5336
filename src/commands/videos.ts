import type { Command } from "commander";
import { readdirSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import type { App } from "../app.ts";
import { AppError } from "../core/errors.ts";
import { type CliContext, table } from "../cli/context.ts";
import { InstanceLock } from "../cli/instance-lock.ts";
import { ProgressBar } from "../cli/progress.ts";
import { ACCOUNT_HELP } from "./accounts.ts";

const VIDEO_EXTENSIONS = new Set([
  ".mp4",
  ".m4v",
  ".mov",
  ".avi",
  ".webm",
  ".mkv",
  ".mpg",
  ".mpeg",
  ".ts",
  ".m2ts",
  ".3gp",
]);

/** Files given, plus video files found by walking folders (sorted, so runs are reproducible). */
export function collectVideoFiles(paths: string[]): { files: string[]; missing: string[] } {
  const files: string[] = [];
  const missing: string[] = [];
  const walk = (p: string) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      missing.push(p);
      return;
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(p).sort()) {
        const child = join(p, name);
        const cst = statSync(child, { throwIfNoEntry: false });
        if (cst?.isDirectory()) walk(child);
        else if (cst?.isFile() && VIDEO_EXTENSIONS.has(extname(name).toLowerCase())) files.push(child);
      }
    } else files.push(p);
  };
  paths.forEach((p) => walk(resolve(p)));
  return { files, missing };
}

interface IngestRow {
  path: string;
  account_id?: string;
  video_id: string | null;
  job_id: string | null;
  status: string;
  error: string | null;
  /** Stages that did not run for this video, with why (e.g. a missing model and its fix). */
  skipped_stages?: Record<string, string>;
  /** Stages that stopped at a bound before the end of the video (e.g. OCR's time budget), with why. */
  partial_stages?: Record<string, string>;
}

/** Skipped stages of the indexed rows, read from each video's stage record. */
async function noteSkipped(app: App, accountId: string, rows: IngestRow[]): Promise<void> {
  // The rows the operator listed, one look-up each (a CLI table).
  for (const r of rows) {
    if (r.status !== "indexed" || !r.video_id) continue;
    const stages = (await app.services.videos.get(r.account_id ?? accountId, r.video_id)).stages;
    const withStatus = (status: string) =>
      Object.fromEntries(
        Object.entries(stages).flatMap(([k, v]) => (v.status === status ? [[k, v.reason ?? status]] : [])),
      );
    r.skipped_stages = withStatus("skipped");
    const partial = withStatus("partial");
    if (Object.keys(partial).length) r.partial_stages = partial;
  }
}

/** One line per reason: "skipped frames, embeddings on 2 videos: no image-text model installed; fix: …". */
export function skippedLines(rows: IngestRow[]): string[] {
  const byReason = new Map<string, { stages: Set<string>; videos: Set<string> }>();
  for (const r of rows) {
    for (const [stage, reason] of Object.entries(r.skipped_stages ?? {})) {
      let g = byReason.get(reason);
      if (!g) byReason.set(reason, (g = { stages: new Set(), videos: new Set() }));
      g.stages.add(stage);
      g.videos.add(r.video_id!);
    }
  }
  return [
    ...[...byReason].map(
      ([reason, g]) =>
        `skipped ${[...g.stages].join(", ")} on ${g.videos.size} video${g.videos.size === 1 ? "" : "s"}: ${reason}`,
    ),
    ...rows.flatMap((r) =>
      Object.entries(r.partial_stages ?? {}).map(([stage, reason]) => `${stage} stopped early on ${r.path}: ${reason}`),
    ),
  ];
}

export function registerVideoCommands(program: Command, ctx: CliContext) {
  program
    .command("ingest <paths...>")
    .description("Index local video files or folders into a collection (created if missing)")
    .option("--account <account>", ACCOUNT_HELP)
    .requiredOption("--collection <name>", "collection name")
    .option("--no-wait", "queue the jobs and return without waiting for indexing")
    .option("--force", "index files the collection already holds again (same content hash); default: skip them")
    .option("--timeout <secs>", "give up waiting after this many seconds", (v) => Number(v), 24 * 3600)
    .action(
      async (
        paths: string[],
        opts: { account?: string; collection: string; wait: boolean; force?: boolean; timeout: number },
        cmd: Command,
      ) => {
        const config = ctx.config(cmd);
        const json = ctx.globals(cmd).json;
        const { files, missing } = collectVideoFiles(paths);
        if (files.length === 0)
          throw new AppError(
            "NO_FILES",
            `no video files found in ${paths.join(", ")}${missing.length ? ` (missing: ${missing.join(", ")})` : ""}`,
          );
        // Without a running server this process must do the indexing itself, so it takes the lock.
        const lock = new InstanceLock(config.dataDir);
        const rows: IngestRow[] = missing.map((p) => ({
          path: p,
          video_id: null,
          job_id: null,
          status: "skipped",
          error: "not found",
        }));
        const result = await ctx.withApp(cmd, async (app) => {
          const account = (await app.services.accounts.resolve(opts.account)).id;
          const col =
            (await app.services.collections.findByName(account, opts.collection)) ??
            (await app.services.collections.create(account, { name: opts.collection }));
          const bar = new ProgressBar(ctx.stderr, !json && process.stderr.isTTY);
          // Files one after another: each ingest reads a whole file (the disk, not the store, is the cost).
          for (const [i, path] of files.entries()) {
            bar.update(i, files.length, `queueing ${path}`);
            try {
              const r = await app.services.uploads.ingestFile(account, col.id, path, { force: opts.force });
              rows.push({ path, video_id: r.video_id, job_id: r.job_id, status: r.status, error: null });
            } catch (e) {
              // Another ingest added the same bytes between our check and our insert.
              if (e instanceof AppError && e.code === "DUPLICATE_CONTENT") {
                rows.push({ path, video_id: null, job_id: null, status: "unchanged", error: null });
                continue;
              }
              rows.push({
                path,
                video_id: null,
                job_id: null,
                status: "skipped",
                error: e instanceof AppError ? `${e.code}: ${e.message}` : String(e),
              });
            }
          }
          bar.done();
          if (opts.wait) {
            await waitForJobs(app, account, rows, lock, opts.timeout, bar);
            await noteSkipped(app, account, rows);
          }
          return { collection_id: col.id, files: rows };
        });
        const counts = rows.reduce<Record<string, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {});
        ctx.print(cmd, { ...result, summary: counts }, () =>
          [
            table(rows as never, ["path", "status", "video_id", "error"]),
            "",
            Object.entries(counts)
              .map(([k, v]) => `${v} ${k}`)
              .join(", "),
            ...skippedLines(rows),
          ].join("\n"),
        );
        if (rows.some((r) => r.status === "failed" || r.status === "skipped")) process.exitCode = 1;
      },
    );

  program
    .command("reindex")
    .description(
      "Re-run indexing for videos built with other models than the active ones (after `models import`/`pull`)",
    )
    .option("--account <account>", "only this account (name or id)")
    .option("--all", "re-index every video, not only the stale ones")
    .option("--no-wait", "queue the jobs and return")
    .action(async (opts: { account?: string; all?: boolean; wait: boolean }, cmd: Command) => {
      const config = ctx.config(cmd);
      const json = ctx.globals(cmd).json;
      const lock = new InstanceLock(config.dataDir);
      const rows: IngestRow[] = [];
      await ctx.withApp(cmd, async (app) => {
        const active = {
          imageText: app.services.system.activeModel("image-text")?.modelId ?? null,
          speech: app.services.system.activeModel("speech")?.modelId ?? null,
        };
        const account = opts.account === undefined ? undefined : (await app.services.accounts.resolve(opts.account)).id;
        const ids = opts.all
          ? await app.services.videos.allIds(account)
          : await app.services.videos.staleForModels(active, account);
        // The ids the operator named, one after another.
        for (const q of await app.services.videos.requeue(ids))
          rows.push({
            path: q.video_id,
            account_id: q.account_id,
            video_id: q.video_id,
            job_id: q.job_id,
            status: "queued",
            error: null,
          });
        if (opts.wait && rows.length)
          await waitForJobs(
            app,
            opts.account ?? "",
            rows,
            lock,
            24 * 3600,
            new ProgressBar(ctx.stderr, !json && process.stderr.isTTY),
          );
      });
      ctx.print(cmd, { requeued: rows.length, videos: rows }, () =>
        rows.length
          ? table(rows as never, ["video_id", "job_id", "status", "error"])
          : "Every video is indexed with the active models; nothing to do.",
      );
      if (rows.some((r) => r.status === "failed")) process.exitCode = 1;
    });
}

export async function waitForJobs(
  app: App,
  accountId: string,
  rows: IngestRow[],
  lock: InstanceLock,
  timeoutSecs: number,
  bar: ProgressBar,
) {
  const pending = rows.filter((r) => r.job_id);
  if (!pending.length) return;
  const own = lock.acquire({});
  if (own.ok) await app.start(); // no server: index here
  try {
    const deadline = Date.now() + timeoutSecs * 1000;
    while (Date.now() < deadline) {
      let done = 0;
      let pct = 0;
      // A CLI wait on the jobs one asked for, polled in turn (a handful of ids).
      for (const r of pending) {
        const job = await app.services.jobs.get(r.account_id ?? accountId, r.job_id!);
        r.status = job.status === "done" ? "indexed" : job.status;
        r.error = job.error ? `${job.error.code}: ${job.error.message}` : null;
        if (job.status === "done" || job.status === "failed") done++;
        pct += job.status === "done" || job.status === "failed" ? 100 : job.progress_pct;
      }
      bar.update(
        pct / 100,
        pending.length,
        `${done}/${pending.length} indexed${own.ok ? "" : " (by the running server)"}`,
      );
      if (done === pending.length) break;
      await Bun.sleep(500);
    }
    bar.done();
  } finally {
    if (own.ok) lock.release();
  }
}
