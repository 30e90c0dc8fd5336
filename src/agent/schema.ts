import { z } from "@hono/zod-openapi";
import { collectionDetailSchema, collectionSchema } from "../collections/schema.ts";
import { jobSchema } from "../jobs/schema.ts";
import { MODES, type Mode } from "../search/thresholds.ts";
import { VIDEO_STATUSES, videoDetailSchema, videoSchema } from "../videos/schema.ts";

/**
 * Inputs and outputs of the agent tools (SPEC §9). These zod schemas are the contract three ways:
 * they validate `POST /v1/agent/call`, they generate `GET /v1/agent/schema.json`, and the MCP SDK
 * lists and validates them as each tool's inputSchema / outputSchema. Inputs are JSON (no string
 * coercion) and strict: an unknown field is a 422 naming it, so a model's typo is not ignored.
 */

const id = (what: string, example: string) => z.string().min(1).max(64).describe(`${what}, e.g. ${example}`);
const seconds = (what: string) => z.number().finite().min(0).describe(what);

export const MAX_SEARCH_LIMIT = 20;
/** Largest side of a `get_frame` JPEG: enough for a vision model to check a hit, small to send. */
export const FRAME_MAX_SIDE = 768;
/** Width cap of a clip's inline thumbnail. */
export const THUMB_MAX_WIDTH = 320;

export const searchVideosInput = z
  .object({
    query: z
      .string()
      .trim()
      .min(1)
      .max(1000)
      .optional()
      .describe('What to find, in words: what is seen or said, e.g. "a dog catching a frisbee"'),
    image_url: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .describe("http(s) URL of a JPEG/PNG reference image (the server's network rules apply)"),
    collection_id: id("Search only this collection", "col_8Hq2mZ0aP4xR7tY1uW3e").optional(),
    video_id: id("Search only this video", "vid_Qm3x9T0bL2vK7cP5sN1a").optional(),
    modes: z
      .array(z.enum(MODES as [Mode, ...Mode[]]))
      .min(1)
      .max(3)
      .optional()
      .describe(
        "video = what frames show, scene = shots (picture, labels, caption), transcript = what is said. Default: all that can run",
      ),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_SEARCH_LIMIT)
      .default(10)
      .describe(`Clips to return, best first (1-${MAX_SEARCH_LIMIT})`),
    min_score: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        "Replaces the per-mode relevance thresholds for this search (0-1, as REST search): 0 returns the best matches ranked whatever their score; higher is stricter",
      ),
  })
  .strict();

export const clipSchema = z.object({
  video_id: z.string(),
  filename: z.string(),
  collection_id: z.string(),
  start_secs: z.number(),
  end_secs: z.number(),
  relevance_score: z
    .number()
    .min(0)
    .max(1)
    .describe("Calibrated per mode (0-1): one cut means the same across queries"),
  raw_score: z.number().describe("The mode's own similarity (cosine, BM25, word coverage)"),
  type: z.enum(["frame", "transcript", "scene", "ocr"]),
  text_snippet: z.string().nullable().describe("What is said, or the shot's caption / labels"),
  clip_url: z.string().describe("Presigned playback URL ending in #t=start,end"),
  thumbnail_url: z.string().nullable().describe("Presigned JPEG URL (expires)"),
  thumbnail_base64: z
    .string()
    .nullable()
    .describe(
      `The clip's thumbnail as a base64 JPEG at most ${THUMB_MAX_WIDTH} px wide (over MCP it is sent as image content instead)`,
    ),
});
export type Clip = z.infer<typeof clipSchema>;

export const searchVideosOutput = z.object({
  clips: z.array(clipSchema),
  total_videos: z.number().int().describe("Videos with at least one matching clip (before limit)"),
  modes: z.array(z.string()).describe("Modes that ran"),
  skipped_modes: z.record(z.string(), z.string()).describe("Modes that could not run, with why"),
  suggestions: z.array(z.string()).describe("What to try next when nothing (or little) matched"),
});
export type SearchVideosOutput = z.infer<typeof searchVideosOutput>;

/** The paging fields of the list tools' input: `page` (from 1) of `limit` items. */
const pageInput = {
  page: z.number().int().min(1).max(10_000).default(1),
  limit: z.number().int().min(1).max(100).default(20),
};
/** What a list tool returns after its items: how many there are in all and the next page (null on the last). */
const pageOutput = {
  total: z.number().int(),
  page: z.number().int(),
  next_page: z.number().int().nullable(),
};

export const listCollectionsInput = z.object({ ...pageInput }).strict();
export const listCollectionsOutput = z.object({ collections: z.array(collectionSchema), ...pageOutput });

export const getCollectionInput = z
  .object({ collection_id: id("The collection", "col_8Hq2mZ0aP4xR7tY1uW3e") })
  .strict();
export const getCollectionOutput = z.object({ collection: collectionDetailSchema });

export const listVideosInput = z
  .object({
    collection_id: id("Only videos of this collection", "col_8Hq2mZ0aP4xR7tY1uW3e").optional(),
    status: z.array(z.enum(VIDEO_STATUSES)).min(1).max(4).optional().describe('Only these statuses, e.g. ["ready"]'),
    ...pageInput,
  })
  .strict();
export const listVideosOutput = z.object({ videos: z.array(videoSchema), ...pageOutput });

export const getVideoInput = z.object({ video_id: id("The video", "vid_Qm3x9T0bL2vK7cP5sN1a") }).strict();
export const getVideoOutput = z.object({ video: videoDetailSchema });

export const getJobStatusInput = z
  .object({ job_id: id("The indexing job (from an upload)", "job_T4n8Yq2wE6rU0iO3pA5s") })
  .strict();
export const getJobStatusOutput = z.object({ job: jobSchema });

/** A moment of a video: what get_moment describes and get_frame shows. */
const videoMomentInput = z
  .object({ video_id: id("The video", "vid_Qm3x9T0bL2vK7cP5sN1a"), timestamp: seconds("Seconds into the video") })
  .strict();

/** Which moment an answer of get_moment or get_frame is about. */
const videoMomentOutput = {
  video_id: z.string(),
  filename: z.string(),
  timestamp: z.number(),
};

export const getMomentInput = videoMomentInput;
export const getMomentOutput = z.object({
  ...videoMomentOutput,
  caption: z.string().nullable(),
  labels: z.array(z.string()),
  transcript: z.string().nullable().describe("What is said during the shot (or ±2.5 s without shots)"),
  on_screen_text: z
    .array(z.object({ text: z.string(), start: z.number(), end: z.number(), confidence: z.number() }))
    .describe("Text shown on screen during the shot (OCR), in order of appearance; empty when none was read"),
  scene_start: z.number().nullable(),
  scene_end: z.number().nullable(),
  thumbnail_url: z.string().nullable(),
});

export const MAX_TRANSCRIPT_SEGMENTS = 500;
export const getTranscriptInput = z
  .object({
    video_id: id("The video", "vid_Qm3x9T0bL2vK7cP5sN1a"),
    start: seconds("Only segments that end after this time (seconds)").optional(),
    end: seconds("Only segments that start before this time (seconds)").optional(),
  })
  .strict();
export const transcriptSegmentSchema = z.object({ start_secs: z.number(), end_secs: z.number(), text: z.string() });
export const getTranscriptOutput = z.object({
  video_id: z.string(),
  filename: z.string(),
  segments: z.array(transcriptSegmentSchema),
  truncated: z
    .boolean()
    .describe(`More than ${MAX_TRANSCRIPT_SEGMENTS} segments matched; ask again with start = the last end_secs`),
});

export const getFrameInput = videoMomentInput;
export const getFrameOutput = z.object({
  ...videoMomentOutput,
  width: z.number().int(),
  height: z.number().int(),
  mime_type: z.literal("image/jpeg"),
  image_base64: z
    .string()
    .nullable()
    .describe(
      `The frame as a base64 JPEG, at most ${FRAME_MAX_SIDE} px on its longer side (over MCP it is sent as image content instead)`,
    ),
});
