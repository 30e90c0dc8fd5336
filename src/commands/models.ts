import { DEFAULT_MAX_UNKNOWN_BYTES } from "../models/download.ts";
import { SingleBar } from "cli-progress";
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { App } from "../app.ts";
import { type CliContext, table } from "../cli/context.ts";
import type { Config } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import type { WeightDtype } from "../inference/dtype.ts";
import { builtinManifest } from "../models/manifest.ts";
import { checkEndpoint, DEFAULT_HF_ENDPOINT } from "../models/hub.ts";
import type { PullProgress } from "../models/pull.ts";
import { type InstallResult, ModelService, type VerifyLoad } from "../models/service.ts";
import { MODEL_ROLES, type ModelRole, parseRole } from "../models/types.ts";

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/**
 * Runs an install with the app when there is one to use: the app's model service runs the load
 * check (the staged model loaded and run once in the inference worker pool, wired by createApp),
 * and an existing database is where the videos that `vsearch reindex` would enrich are counted.
 * Without either (`--no-load-check` on a fresh data dir) no app is built and no database created.
 */
async function withInstallApp<T>(
  ctx: CliContext,
  cmd: Command,
  loadCheck: boolean,
  fn: (svc: ModelService, v: VerifyLoad | false | undefined, app: App | null) => Promise<T>,
): Promise<T> {
  const fileOnly = () => new ModelService({ modelsDir: ctx.config(cmd).modelsDir });
  // PostgreSQL (database_url) is a database that exists; the embedded one may not yet.
  const hasDb = Boolean(ctx.config(cmd).databaseUrl) || existsSync(join(ctx.config(cmd).dataDir, "vsearch.db"));
  if (!loadCheck && !hasDb) return fn(fileOnly(), false, null);
  return ctx.withApp(cmd, (app) => (loadCheck ? fn(app.services.models, undefined, app) : fn(fileOnly(), false, app)));
}

/** What `vsearch reindex` would do now: videos indexed without (or with other versions of) the active models. */
export interface ReindexHint {
  videos: number;
  command: "vsearch reindex";
}

export async function reindexHint(app: App | null): Promise<ReindexHint> {
  if (!app) return { videos: 0, command: "vsearch reindex" };
  const system = app.services.system;
  const active = {
    imageText: system.activeModel("image-text")?.modelId ?? null,
    speech: system.activeModel("speech")?.modelId ?? null,
  };
  return { videos: (await app.services.videos.staleForModels(active)).length, command: "vsearch reindex" };
}

export function reindexLine(h: ReindexHint): string {
  return h.videos === 0
    ? "No indexed video is missing what the active models add; nothing to reindex."
    : `\`vsearch reindex\` would enrich ${h.videos} video${h.videos === 1 ? "" : "s"} indexed without the active models (or with older ones).`;
}

/** Where `pull` fetches from: `--base-url` / VSEARCH_MODELS_BASE_URL (a mirror), else the hub (HF_ENDPOINT). */
function pullSource(
  ctx: CliContext,
  config: Config,
  flag: string | undefined,
): { baseUrl?: string; hubEndpoint: string } {
  const baseUrl = flag ?? config.modelsBaseUrl;
  if (baseUrl !== undefined && baseUrl.trim() === "") throw new AppError("INVALID_BASE_URL", "--base-url is empty");
  const hubEndpoint = ctx.env.HF_ENDPOINT?.trim() || DEFAULT_HF_ENDPOINT;
  if (baseUrl === undefined) checkEndpoint(hubEndpoint); // before a worker pool is started for nothing
  return { baseUrl, hubEndpoint };
}

/**
 * A cli-progress bar on stderr, only on a terminal and never with --json. The model's total is
 * known from a mirror manifest; from the hub each file's size arrives with its HEAD, so the bar
 * follows the current file. Elsewhere (logs, CI) one line per finished file.
 */
function pullBar(ctx: CliContext, json: boolean) {
  if (json) return { update: (_p: PullProgress) => {}, stop: () => {} };
  if (!process.stderr.isTTY) {
    let last = "";
    return {
      update: (p: PullProgress) => {
        const key = `${p.model}/${p.file}`;
        if (p.fileTotal !== null && p.fileBytes === p.fileTotal && key !== last) {
          last = key;
          ctx.stderr(`${p.model}: ${p.file} ${mib(p.fileBytes)}\n`);
        }
      },
      stop: () => {},
    };
  }
  const bar = new SingleBar({
    stream: process.stderr,
    format: "{model} [{bar}] {percentage}% {have} / {size} {file}",
    barsize: 30,
    hideCursor: true,
    clearOnComplete: false,
  });
  let started = false;
  return {
    update: (p: PullProgress) => {
      const [value, total] =
        p.total !== null ? [p.bytes, p.total] : [p.fileBytes, p.fileTotal ?? Math.max(p.fileBytes, 1)];
      const payload = { model: p.model, file: p.file, have: mib(value), size: mib(total) };
      if (!started) {
        bar.start(total, value, payload);
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(value, payload);
      }
    },
    stop: () => {
      if (started) bar.stop();
      started = false;
    },
  };
}

function installedLine(r: InstallResult): string {
  const m = r.model;
  const size = m.files.reduce((a, f) => a + f.size, 0);
  const lines = [
    `Installed ${m.name} (${m.role}, ${m.dtype}) as ${m.model_id}${r.activated ? ", now the active " + m.role + " model" : ""}: ${m.files.length} files, ${mib(size)}`,
  ];
  if (r.skipped.length)
    lines.push(`  skipped ${r.skipped.length} ONNX file(s) not used at ${m.dtype}: ${r.skipped.join(", ")}`);
  if (r.replaced) lines.push(`  replaces ${r.replaced}: videos indexed with it need \`vsearch reindex\``);
  return lines.join("\n");
}

export function registerModelCommands(program: Command, ctx: CliContext) {
  const models = program.command("models").description("Install, check and move the ONNX models (CLIP, Whisper)");
  const service = (cmd: Command) => new ModelService({ modelsDir: ctx.config(cmd).modelsDir });

  models
    .command("list")
    .description("Each role's active model, all installed models, and built-in models not installed")
    .action((_o: unknown, cmd: Command) => {
      const l = service(cmd).list();
      ctx.print(cmd, l, () => {
        const roles = MODEL_ROLES.map((role) => {
          const m = l.installed.find((x) => x.role === role && x.active);
          return { role, active: m ? `${m.model_id} (${m.dtype})` : null };
        });
        const rows = l.installed.map((m) => ({
          name: m.name,
          role: m.role,
          dtype: m.dtype,
          model_id: m.model_id,
          active: m.active ? "yes" : "",
          size: mib(m.files.reduce((a, f) => a + f.size, 0)),
          license: m.license,
          installed_at: m.installed_at,
        }));
        const avail = l.available.map((a) => `${a.name} (${a.role}${a.default ? ", default" : ""})`).join(", ");
        return [
          table(roles, ["role", "active"]),
          "",
          "Installed:",
          table(rows, ["name", "role", "dtype", "model_id", "active", "size", "license", "installed_at"]),
          ...(avail ? ["", `Available to pull: ${avail}`] : []),
        ].join("\n");
      });
    });

  models
    .command("import <source>")
    .description("Install a model folder or a .tar/.tar.gz of one (copied, hashed, load-checked, activated)")
    .option("--role <role>", `${MODEL_ROLES.join(" | ")} (optional for a tar made by models export)`)
    .option("--name <name>", "name to install under (default: from the manifest, the folder or the file)")
    .option("--dtype <dtype>", "q8 | fp32, when the folder has both (default q8)")
    .option("--no-activate", "install without making it the role's active model")
    .option("--no-load-check", "skip loading the model in the inference pool before installing")
    .action(
      async (
        source: string,
        o: { role?: string; name?: string; dtype?: string; activate: boolean; loadCheck: boolean },
        cmd: Command,
      ) => {
        const role = o.role === undefined ? undefined : parseRole(o.role);
        if (o.dtype !== undefined && o.dtype !== "q8" && o.dtype !== "fp32")
          throw new AppError("INVALID_MODEL", `--dtype must be q8 or fp32, got "${o.dtype}"`);
        const r = await withInstallApp(ctx, cmd, o.loadCheck, async (svc, verifyLoad, app) => {
          const installed = await svc.importModel(source, {
            role,
            name: o.name,
            dtype: o.dtype as WeightDtype | undefined,
            activate: o.activate,
            verifyLoad,
          });
          return { ...installed, reindex: await reindexHint(app) };
        });
        ctx.print(cmd, r, () => `${installedLine(r)}\n${reindexLine(r.reindex)}`);
      },
    );

  models
    .command("pull [names...]")
    .description(
      "Download models from the Hugging Face hub (or a mirror): the default set unless named; hash-checked and resumable",
    )
    .option(
      "--base-url <url>",
      "a mirror serving <url>/<name>/<file> instead of the hub (env VSEARCH_MODELS_BASE_URL); {name} is replaced when present",
    )
    .option("--retries <n>", "extra attempts per file after a dropped connection", "3")
    .option(
      "--max-file-bytes <n>",
      "stop a file whose size neither the manifest nor the server gives once it passes this many bytes",
      String(DEFAULT_MAX_UNKNOWN_BYTES),
    )
    .option("--no-activate", "install without making them the active models")
    .option("--no-load-check", "skip loading each model in the inference pool before installing")
    .action(
      async (
        names: string[],
        o: { baseUrl?: string; retries: string; maxFileBytes: string; activate: boolean; loadCheck: boolean },
        cmd: Command,
      ) => {
        const from = pullSource(ctx, ctx.config(cmd), o.baseUrl);
        const retries = Number(o.retries);
        if (!Number.isInteger(retries) || retries < 0 || retries > 100)
          throw new AppError("INVALID_MODEL", `--retries must be 0-100, got "${o.retries}"`);
        const maxFileBytes = /^\d{1,16}$/.test(o.maxFileBytes) ? Number(o.maxFileBytes) : NaN;
        if (!(maxFileBytes >= 1))
          throw new AppError("INVALID_MODEL", `--max-file-bytes must be a positive integer, got "${o.maxFileBytes}"`);
        const list = names.length > 0 ? names : builtinManifest().default;
        const json = Boolean(ctx.globals(cmd).json);
        const { results, reindex } = await withInstallApp(ctx, cmd, o.loadCheck, async (svc, verifyLoad, app) => {
          const out = [];
          for (const name of list) {
            const bar = pullBar(ctx, json);
            try {
              const r = await svc.pull(name, {
                ...from,
                retries,
                maxFileBytes,
                activate: o.activate,
                verifyLoad,
                onProgress: (p) => bar.update(p),
              });
              out.push(r);
              bar.stop();
              if (!json)
                ctx.stdout(installedLine(r) + `\n  from ${r.from}${r.commit ? ` (commit ${r.commit})` : ""}\n`);
              if (!json && r.unverified.length)
                ctx.stderr(
                  `warning: ${name}: no sha256 published for ${r.unverified.join(", ")}; recorded as downloaded (trust on first use)\n`,
                );
            } finally {
              bar.stop();
            }
          }
          return { results: out, reindex: await reindexHint(app) };
        });
        // JSON stays a list of installs (one per model); each carries the reindex count after all of them.
        if (json)
          ctx.print(
            cmd,
            results.map((r) => ({ ...r, reindex })),
            "",
          );
        else ctx.stdout(reindexLine(reindex) + "\n");
      },
    );

  models
    .command("verify [name]")
    .description("Re-hash installed files against the registry (all models, or one)")
    .action(async (name: string | undefined, _o: unknown, cmd: Command) => {
      const reports = await service(cmd).verify(name);
      ctx.print(cmd, reports, () =>
        reports.length === 0
          ? "No models installed."
          : reports
              .map((r) =>
                [
                  `${r.ok ? "ok  " : "FAIL"}  ${r.model_id}  (${r.checked} files checked)`,
                  ...r.missing.map((p) => `      missing   ${p}`),
                  ...r.mismatched.map(
                    (m) =>
                      `      changed   ${m.path} (sha256 ${m.actual_sha256.slice(0, 12)}…, expected ${m.expected_sha256.slice(0, 12)}…)`,
                  ),
                ].join("\n"),
              )
              .join("\n"),
      );
      const bad = reports.filter((r) => !r.ok);
      if (bad.length) {
        throw new AppError(
          "MODEL_VERIFY_FAILED",
          `${bad.map((r) => r.name).join(", ")} failed verification; re-import or pull ${bad.length === 1 ? "it" : "them"} again`,
        );
      }
    });

  models
    .command("export <name> <file>")
    .description("Write an installed model and its manifest to a .tar (or .tar.gz) for another machine or a mirror")
    .action(async (name: string, file: string, _o: unknown, cmd: Command) => {
      const r = await service(cmd).exportModel(name, file);
      ctx.print(cmd, r, `Exported ${r.model_id} to ${r.file}: ${r.files} files, ${mib(r.bytes)}`);
    });

  models
    .command("activate <name>")
    .description("Make an installed model its role's active model")
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const m = await service(cmd).activate(name);
      ctx.print(cmd, m, `${m.model_id} is now the active ${m.role as ModelRole} model`);
    });

  models
    .command("remove <name>")
    .description("Uninstall a model (its role has no active model afterwards if it was the active one)")
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const m = await service(cmd).remove(name);
      ctx.print(cmd, m, `Removed ${m.model_id}`);
    });
}
