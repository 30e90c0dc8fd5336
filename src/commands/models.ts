import type { Command } from "commander";
import { type CliContext, table } from "../cli/context.ts";
import { ProgressBar } from "../cli/progress.ts";
import type { Config } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import type { WeightDtype } from "../inference/dtype.ts";
import { builtinManifest } from "../models/manifest.ts";
import { type InstallResult, ModelService, type VerifyLoad } from "../models/service.ts";
import { MODEL_ROLES, type ModelRole, parseRole } from "../models/types.ts";

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/**
 * Runs `fn` with the app's model service, whose load check runs the staged model once in the
 * inference worker pool (the same code path the server uses; wired by createApp), or with a
 * file-only service and no load check (`--no-load-check`: no app, no worker threads).
 */
async function withLoadCheck<T>(ctx: CliContext, cmd: Command, on: boolean, fn: (svc: ModelService, v: VerifyLoad | false | undefined) => Promise<T>): Promise<T> {
  if (!on) return fn(new ModelService({ modelsDir: ctx.config(cmd).modelsDir }), false);
  return ctx.withApp(cmd, (app) => fn(app.services.models, undefined));
}

function baseUrlFor(ctx: CliContext, config: Config, flag: string | undefined): string {
  const url = flag ?? config.modelsBaseUrl;
  if (!url) throw new AppError(400, "INVALID_BASE_URL", "no model mirror: pass --base-url URL or set VSEARCH_MODELS_BASE_URL (see docs/MODELS.md)");
  return url;
}

function installedLine(r: InstallResult): string {
  const m = r.model;
  const size = m.files.reduce((a, f) => a + f.size, 0);
  const lines = [
    `Installed ${m.name} (${m.role}, ${m.dtype}) as ${m.model_id}${r.activated ? ", now the active " + m.role + " model" : ""}: ${m.files.length} files, ${mib(size)}`,
  ];
  if (r.skipped.length) lines.push(`  skipped ${r.skipped.length} ONNX file(s) not used at ${m.dtype}: ${r.skipped.join(", ")}`);
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
    .action(async (source: string, o: { role?: string; name?: string; dtype?: string; activate: boolean; loadCheck: boolean }, cmd: Command) => {
      const role = o.role === undefined ? undefined : parseRole(o.role);
      if (o.dtype !== undefined && o.dtype !== "q8" && o.dtype !== "fp32") throw new AppError(400, "INVALID_MODEL", `--dtype must be q8 or fp32, got "${o.dtype}"`);
      const r = await withLoadCheck(ctx, cmd, o.loadCheck, (svc, verifyLoad) =>
        svc.importModel(source, { role, name: o.name, dtype: o.dtype as WeightDtype | undefined, activate: o.activate, verifyLoad }),
      );
      ctx.print(cmd, r, () => installedLine(r));
    });

  models
    .command("pull [names...]")
    .description("Download models from a mirror (default: the built-in default set), hash-checked and resumable")
    .option("--base-url <url>", "mirror serving <url>/<name>/<file> (env VSEARCH_MODELS_BASE_URL); {name} is replaced when present")
    .option("--retries <n>", "extra attempts per file after a dropped connection", "3")
    .option("--no-activate", "install without making them the active models")
    .option("--no-load-check", "skip loading each model in the inference pool before installing")
    .action(async (names: string[], o: { baseUrl?: string; retries: string; activate: boolean; loadCheck: boolean }, cmd: Command) => {
      const baseUrl = baseUrlFor(ctx, ctx.config(cmd), o.baseUrl);
      const retries = Number(o.retries);
      if (!Number.isInteger(retries) || retries < 0 || retries > 100) throw new AppError(400, "INVALID_MODEL", `--retries must be 0-100, got "${o.retries}"`);
      const list = names.length > 0 ? names : builtinManifest().default;
      const json = Boolean(ctx.globals(cmd).json);
      const results = await withLoadCheck(ctx, cmd, o.loadCheck, async (svc, verifyLoad) => {
        const out = [];
        for (const name of list) {
          const bar = json ? null : new ProgressBar(ctx.stderr, process.stderr.isTTY);
          try {
            const r = await svc.pull(name, {
              baseUrl,
              retries,
              activate: o.activate,
              verifyLoad,
              onProgress: (p) => bar?.update(p.bytes, p.total ?? 0, `${p.model} ${mib(p.bytes)}${p.total !== null ? ` / ${mib(p.total)}` : ""} ${p.file}`),
            });
            out.push(r);
            bar?.done();
            if (!json) ctx.stdout(installedLine(r) + "\n");
            if (!json && r.unverified.length) ctx.stderr(`warning: ${name}: no sha256 published for ${r.unverified.join(", ")}; recorded as downloaded (trust on first use)\n`);
          } catch (e) {
            bar?.done();
            throw e;
          }
        }
        return out;
      });
      if (json) ctx.print(cmd, results, "");
    });

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
                  ...r.mismatched.map((m) => `      changed   ${m.path} (sha256 ${m.actual_sha256.slice(0, 12)}…, expected ${m.expected_sha256.slice(0, 12)}…)`),
                ].join("\n"),
              )
              .join("\n"),
      );
      const bad = reports.filter((r) => !r.ok);
      if (bad.length) {
        throw new AppError(409, "MODEL_VERIFY_FAILED", `${bad.map((r) => r.name).join(", ")} failed verification; re-import or pull ${bad.length === 1 ? "it" : "them"} again`);
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
