import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, idParam, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { jobSchema, listJobsQuery } from "../jobs/schema.ts";

export function registerJobRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.jobs;
  const base = { tags: ["Jobs"], access: "read_only" as const, rateGroup: "jobs" as const };

  app.openapi(
    defineRoute(deps, {
      ...base,
      method: "get",
      path: "/v1/jobs",
      operationId: "listJobs",
      summary: "List indexing jobs, newest first",
      request: { query: listJobsQuery },
      responses: { 200: dataResponse("Jobs", z.array(jobSchema)) },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const { items, total } = await svc.list(
        c.get("principal").accountId,
        { status: q.status, videoId: q.video_id },
        { page: q.page, perPage: q.per_page },
      );
      return ok(c, items, 200, { total, page: q.page, per_page: q.per_page });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      method: "get",
      path: "/v1/jobs/{job_id}",
      operationId: "getJob",
      summary: "Get a job: status, stage, progress and error",
      request: { params: idParam("job_id", "job_T4n8Yq2wE6rU0iO3pA5s") },
      responses: {
        200: dataResponse("Job", jobSchema),
        404: jsonError("No such job in this account (JOB_NOT_FOUND)"),
      },
    }),
    async (c) => ok(c, await svc.get(c.get("principal").accountId, c.req.valid("param").job_id)),
  );

  // A failed job runs again (SPEC §5; CRASHED_REPEATEDLY names this route).
  app.openapi(
    defineRoute(deps, {
      ...base,
      access: "all",
      method: "post",
      path: "/v1/jobs/{job_id}/retry",
      operationId: "retryJob",
      summary: "Run a failed job again from the start",
      description:
        "For a job that failed (e.g. `CRASHED_REPEATEDLY`, `INSUFFICIENT_STORAGE`, a model error) once the cause is fixed. The job goes back to `queued` with its crash count reset; its video to `queued`. `job.completed` or `job.failed` fires again when it ends.",
      request: { params: idParam("job_id", "job_T4n8Yq2wE6rU0iO3pA5s") },
      responses: {
        202: dataResponse("Queued again", jobSchema),
        404: jsonError("No such job in this account (JOB_NOT_FOUND)"),
        409: jsonError("The job is not failed (JOB_NOT_RETRYABLE)"),
      },
    }),
    async (c) => ok(c, await svc.retry(c.get("principal").accountId, c.req.valid("param").job_id), 202),
  );
}
