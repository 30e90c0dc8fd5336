import { pageField, perPageField } from "../core/numbers.ts";
import { z } from "@hono/zod-openapi";

export const JOB_STATUSES = ["queued", "pending", "processing", "done", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const jobSchema = z
  .object({
    id: z.string().openapi({ example: "job_T4n8Yq2wE6rU0iO3pA5s" }),
    job_id: z.string().openapi({ description: "Same value as id" }),
    video_id: z.string(),
    user_id: z.string(),
    status: z.enum(JOB_STATUSES),
    stage: z.string().nullable(),
    progress_pct: z.number(),
    stages_pending: z.array(z.string()).openapi({
      description:
        "Stages still to run after the video became searchable (progressive indexing, e.g. `ocr`); empty when none are left",
    }),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Job");
export type Job = z.infer<typeof jobSchema>;

export interface JobRow {
  id: string;
  account_id: string;
  video_id: string;
  status: JobStatus;
  stage: string | null;
  progress_pct: number;
  /** JSON array of stage names (migration 006). */
  stages_pending: string;
  error_code: string | null;
  error_message: string | null;
  /** Claims of its ingest task so far (a claim whose worker died counts). */
  attempts: number;
  created_at: string;
  updated_at: string;
}

export const listJobsQuery = z.object({
  page: pageField(),
  per_page: perPageField(100, 20),
  status: z.enum(JOB_STATUSES).optional(),
  video_id: z.string().min(1).max(64).optional(),
});

export const toJob = (r: JobRow): Job => ({
  id: r.id,
  job_id: r.id,
  video_id: r.video_id,
  user_id: r.account_id,
  status: r.status,
  stage: r.stage,
  progress_pct: Math.round(r.progress_pct * 10) / 10,
  stages_pending: JSON.parse(r.stages_pending ?? "[]") as string[],
  error: r.error_code ? { code: r.error_code, message: r.error_message ?? "" } : null,
  created_at: r.created_at,
  updated_at: r.updated_at,
});
