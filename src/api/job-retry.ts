import { defineRoute, envelopeOf, idParam, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { jobSchema } from "../jobs/schema.ts";

/** POST /v1/jobs/{job_id}/retry: a failed job runs again (SPEC §5; CRASHED_REPEATEDLY names it). */
export function registerJobRetryRoute(app: Api, deps: HttpDeps) {
  app.openapi(
    defineRoute(deps, {
      tags: ["Jobs"],
      access: "all",
      rateGroup: "jobs",
      method: "post",
      path: "/v1/jobs/{job_id}/retry",
      summary: "Run a failed job again from the start",
      description:
        "For a job that failed (e.g. `CRASHED_REPEATEDLY`, `INSUFFICIENT_STORAGE`, a model error) once the cause is fixed. The job goes back to `queued` with its crash count reset; its video to `queued`. `job.completed` or `job.failed` fires again when it ends.",
      request: { params: idParam("job_id", "job_T4n8Yq2wE6rU0iO3pA5s") },
      responses: {
        202: { description: "Queued again", content: { "application/json": { schema: envelopeOf(jobSchema) } } },
        404: jsonError("No such job in this account (JOB_NOT_FOUND)"),
        409: jsonError("The job is not failed (JOB_NOT_RETRYABLE)"),
      },
    }),
    (c) => ok(c, deps.services.jobs.retry(c.get("principal").accountId, c.req.valid("param").job_id), 202),
  );
}
