import { pageField, perPageField } from "../core/numbers.ts";
import { z } from "@hono/zod-openapi";

export const VIDEO_STATUSES = ["queued", "processing", "ready", "failed"] as const;
export type VideoStatus = (typeof VIDEO_STATUSES)[number];

export const STAGE_NAMES = [
  "probe",
  "shots",
  "frames",
  "embeddings",
  "scenes",
  "audio",
  "transcript",
  "thumbnails",
  "ocr",
] as const;
export type StageName = (typeof STAGE_NAMES)[number];

export const stageOutcomeSchema = z
  .object({
    status: z.enum(["ran", "partial", "skipped", "failed", "pending"]).openapi({
      description:
        "`pending`: a stage that runs after the video is already searchable (e.g. `ocr`) and has not run yet; " +
        "`partial`: it ran but stopped at a bound before the end of the video (`reason` says which and how far it got; what it found is kept)",
    }),
    reason: z.string().optional(),
    took_ms: z.number().optional(),
    count: z.number().optional(),
    model_id: z.string().optional(),
  })
  .openapi("StageOutcome");
export type StageOutcome = z.infer<typeof stageOutcomeSchema>;

export const videoSchema = z
  .object({
    id: z.string().openapi({ example: "vid_Qm3x9T0bL2vK7cP5sN1a" }),
    filename: z.string(),
    collection_id: z.string(),
    user_id: z.string(),
    status: z.enum(VIDEO_STATUSES),
    progress_pct: z.number().nullable(),
    duration_secs: z.number().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    fps: z.number().nullable(),
    codec: z.string().nullable(),
    mime_type: z.string().nullable(),
    file_size_bytes: z.number().int(),
    storage_bytes: z.number().int(),
    has_audio: z.boolean(),
    thumbnail_url: z.string().nullable(),
    warning: z.string().nullable().openapi({
      description:
        "Indexed with a caveat, e.g. `partial: decoded 0:00–0:03 of 0:10` for a truncated or damaged file (only what decodes is searchable)",
      example: null,
    }),
    created_at: z.string(),
  })
  .openapi("Video");

export const RENDITION_STATUSES = ["pending", "processing", "ready", "failed", "not_needed"] as const;

export const renditionSchema = z
  .object({
    status: z.enum(RENDITION_STATUSES).openapi({
      description:
        "`not_needed`: browsers play the source as it is; `pending`/`processing`: queued or encoding (the source is served meanwhile); `ready`: `playback_url` is the rendition; `failed`: see `reason`",
    }),
    reason: z
      .string()
      .nullable()
      .openapi({ description: "Why the source does (not) need a rendition, or why it failed" }),
    size_bytes: z.number().int().nullable(),
  })
  .openapi("WebRendition");
export type WebRendition = z.infer<typeof renditionSchema>;

export const videoDetailSchema = videoSchema
  .extend({
    playback_url: z
      .string()
      .openapi({ description: "Presigned; the web rendition when there is one, else the source" }),
    has_web_rendition: z
      .boolean()
      .openapi({ description: "true when `playback_url` is an H.264 + AAC MP4 made for browsers (SPEC §11)" }),
    rendition: renditionSchema
      .nullable()
      .openapi({ description: "The web rendition's state; null until the video is searchable" }),
    segments_count: z
      .number()
      .int()
      .openapi({ description: "Searchable segments: frames + shots + transcript segments + on-screen text lines" }),
    stages: z.record(z.string(), stageOutcomeSchema),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .openapi("VideoDetail");

export type Video = z.infer<typeof videoSchema>;
export type VideoDetail = z.infer<typeof videoDetailSchema>;

export interface VideoRow {
  id: string;
  account_id: string;
  collection_id: string;
  filename: string;
  status: VideoStatus;
  progress_pct: number;
  container: string | null;
  mime_type: string | null;
  duration_secs: number | null;
  width: number | null;
  height: number | null;
  fps: number | null;
  codec: string | null;
  audio_codec: string | null;
  has_audio: number;
  file_size_bytes: number;
  storage_bytes: number;
  source_path: string;
  poster_path: string | null;
  stages: string;
  error_code: string | null;
  error_message: string | null;
  /** SHA-256 (hex) of the source as `vsearch ingest` read it; unique per collection; NULL for HTTP uploads. */
  content_hash?: string | null;
  /** A caveat of the last indexing, e.g. `partial: decoded 0:00–0:03 of 0:10`. */
  warning?: string | null;
  created_at: string;
  updated_at: string;
}

export const listVideosQuery = z.object({
  page: pageField(),
  per_page: perPageField(100, 20),
  collection_id: z.string().min(1).max(64).optional(),
  status: z
    .string()
    .optional()
    .openapi({ description: "Comma-separated statuses, e.g. `ready,failed`" })
    .refine((s) => !s || s.split(",").every((v) => (VIDEO_STATUSES as readonly string[]).includes(v.trim())), {
      message: `each status must be one of ${VIDEO_STATUSES.join(", ")}`,
    }),
});
