import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { modelWarnings } from "../system/health.ts";
import { JOB_STATUSES } from "../jobs/schema.ts";
import { VERSION } from "../version.ts";

const activeModel = z
  .object({ name: z.string(), model_id: z.string(), dtype: z.string() })
  .nullable()
  .openapi({ description: "null: none installed (the modes that need it answer MODEL_NOT_INSTALLED)" });

const statusSchema = z
  .object({
    version: z.string(),
    device: z.object({
      requested: z.string(),
      in_use: z.string().openapi({ description: "`pending` until the first model run has chosen one" }),
      reason: z.string(),
    }),
    models: z.object({ "image-text": activeModel, speech: activeModel, text: activeModel }),
    warnings: z
      .array(
        z.object({
          role: z.string(),
          code: z.enum(["MODEL_NOT_INSTALLED", "REINDEX_NEEDED"]),
          message: z.string(),
          videos: z.number().int(),
          fix: z.string().openapi({ description: "The command that fixes it, run on the server" }),
        }),
      )
      .openapi({ description: "What `vsearch doctor` warns about, for this account's videos" }),
    jobs: z.record(z.enum(JOB_STATUSES), z.number().int()).openapi({ description: "This account's jobs by status" }),
  })
  .openapi("SystemStatus");

/** How long the page waits for the accelerator choice before saying it is still being made. */
const DEVICE_WAIT_MS = 1500;

/**
 * The dashboard's system page (issue 22): what `vsearch doctor` says — models per role, the
 * accelerator, and each missing piece with the command that fixes it — for an admin, scoped to
 * the admin's account. The runtime self-test stays doctor's (it runs a model).
 */
export function registerSystemRoutes(app: Api, deps: HttpDeps) {
  app.openapi(
    defineRoute(deps, {
      method: "get",
      path: "/v1/system/status",
      operationId: "getSystemStatus",
      tags: ["System"],
      summary: "Models, accelerator and what to fix (what `vsearch doctor` reports), for admins",
      access: "admin_session",
      rateGroup: "admin",
      responses: { 200: dataResponse("Status", statusSchema) },
    }),
    async (c) => {
      const s = deps.services;
      const accountId = c.get("principal").accountId;
      const clip = s.system.activeModel("image-text");
      const speech = s.system.activeModel("speech");
      const text = s.system.activeModel("text");
      const model = (m: typeof clip) =>
        m
          ? {
              name: m.name,
              model_id: m.modelId,
              dtype: typeof m.dtype === "string" ? m.dtype : JSON.stringify(m.dtype),
            }
          : null;
      const coverage = await s.videos.modelCoverage(
        { imageText: clip?.modelId ?? null, speech: speech?.modelId ?? null },
        accountId,
      );
      const device = await Promise.race([
        s.system.device().then(
          (d) => ({ in_use: d.device as string, reason: d.reason }),
          (e: Error) => ({ in_use: "unavailable", reason: e.message }),
        ),
        Bun.sleep(DEVICE_WAIT_MS).then(() => ({ in_use: "pending", reason: "being chosen (first model run)" })),
      ]);
      const jobs = Object.fromEntries(
        await Promise.all(
          JOB_STATUSES.map(async (status) => [
            status,
            (await s.jobs.list(accountId, { status }, { page: 1, perPage: 1 })).total,
          ]),
        ),
      );
      return ok(c, {
        version: VERSION,
        device: { requested: deps.config.device, ...device },
        models: { "image-text": model(clip), speech: model(speech), text: model(text) },
        warnings: modelWarnings({ "image-text": clip, speech }, coverage),
        jobs: jobs as Record<(typeof JOB_STATUSES)[number], number>,
      });
    },
  );

  app.openapi(
    defineRoute(deps, {
      method: "get",
      path: "/v1/system/nodes",
      operationId: "listNodes",
      tags: ["System"],
      summary:
        "The serve and worker processes on this database: last heartbeat, device, models, what they run (`vsearch nodes`), for admins",
      access: "admin_session",
      rateGroup: "admin",
      responses: { 200: dataResponse("Nodes", z.array(nodeSchema)) },
    }),
    async (c) => ok(c, await deps.services.nodes.list()),
  );
}

const nodeSchema = z
  .object({
    id: z.string(),
    role: z.enum(["all", "serve", "worker"]),
    status: z.enum(["running", "stopped", "lost"]).openapi({
      description: "`lost`: no heartbeat for three periods (killed, or cut off from the database)",
    }),
    kinds: z.array(z.string()).openapi({ description: "The task kinds it claims (none: a `serve` node)" }),
    concurrency: z.number().int(),
    device: z.string(),
    models: z.object({ "image-text": z.string().nullable(), speech: z.string().nullable() }),
    version: z.string(),
    host: z.string(),
    pid: z.number().int(),
    started_at: z.string(),
    last_heartbeat: z.string(),
    heartbeat_age_secs: z.number().int(),
    refused: z.string().nullable().openapi({
      description:
        "Why it claims nothing (its vsearch version or models differ from the running servers'); null: it claims",
    }),
  })
  .openapi("Node");
