import type { Command } from "commander";
import { modelWarnings } from "../system/health.ts";
import { runSelfTest, type RuntimePaths } from "../runtime/index.ts";
import { VERSION } from "../version.ts";
import type { CliContext } from "../cli/context.ts";

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
      const report = await ctx.withApp(cmd, async (app) => {
        const system = app.services.system;
        const clip = system.activeModel("image-text");
        const speech = system.activeModel("speech");
        const modelDir = opts.modelDir ?? clip?.dir ?? speech?.dir;
        const device = await system.device().catch((e: Error) => ({ device: "unavailable", reason: e.message }));
        const runtime = await runSelfTest(app.runtime as RuntimePaths, {
          modelDir,
          device: device.device === "unavailable" ? "cpu" : (device.device as "cpu"),
        });
        // Not failures (the service runs without models) but each missing piece, with its fix.
        const coverage = app.services.videos.modelCoverage({
          imageText: clip?.modelId ?? null,
          speech: speech?.modelId ?? null,
        });
        const warnings = modelWarnings({ "image-text": clip, speech }, coverage);
        return {
          ok: runtime.ok && device.device !== "unavailable",
          warnings,
          version: VERSION,
          data_dir: app.config.dataDir,
          device: { requested: app.config.device, in_use: device.device, reason: device.reason },
          int8_weights: system.signedWeights(),
          models: {
            "image-text": clip ? { name: clip.name, model_id: clip.modelId, dtype: clip.dtype } : null,
            speech: speech ? { name: speech.name, model_id: speech.modelId, dtype: speech.dtype } : null,
            text: system.activeModel("text")?.modelId ?? null,
          },
          runtime,
          store: system.storeCounts(),
        };
      });
      ctx.print(cmd, report, () =>
        [
          `vsearch ${report.version} — ${report.ok ? "all checks passed" : "PROBLEMS FOUND"}${report.warnings.length ? `, ${report.warnings.length} warning${report.warnings.length === 1 ? "" : "s"}` : ""}`,
          `data dir      ${report.data_dir}`,
          `device        ${report.device.in_use} (requested ${report.device.requested}): ${report.device.reason}`,
          `int8 weights  ${report.int8_weights.reason}`,
          `sqlite        ${report.runtime.sqlite_version}, sqlite-vec ${report.runtime.vec_version}, vec0 query ${report.runtime.vec_query_ok ? "ok" : "FAILED"}`,
          `ffmpeg        ${report.runtime.ffmpeg_version ?? "MISSING"}`,
          `ffprobe       ${report.runtime.ffprobe_version ?? "MISSING"}`,
          `onnx          ${report.runtime.onnx_ok === undefined ? "not checked (no model installed)" : report.runtime.onnx_ok ? `ok (${report.runtime.onnx?.model_id} in worker thread)` : "FAILED"}`,
          `image-text    ${report.models["image-text"]?.model_id ?? "not installed"}`,
          `speech        ${report.models.speech?.model_id ?? "not installed"}`,
          `store         ${report.store.accounts} accounts, ${report.store.videos} videos, ${report.store.frames} frames, ${report.store.jobs_waiting} jobs waiting, ${report.store.jobs_failed} failed`,
          ...report.runtime.errors.map((e) => `error         ${e}`),
          ...report.warnings.flatMap((w) => [`warning       ${w.role}: ${w.message}`, `              fix: ${w.fix}`]),
        ].join("\n"),
      );
      if (!report.ok) process.exitCode = 1;
    });
}
