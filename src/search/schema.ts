import { fromDecimal, pageField, perPageField } from "../core/numbers.ts";
import { z } from "@hono/zod-openapi";
import { parseInput } from "../core/validate.ts";
import { MODES, type Mode } from "./thresholds.ts";

/**
 * A list field, sent however a client sends lists: repeated (`modes=video&modes=scene`), as one
 * comma-separated value (`modes=video,scene`, as the CLI takes it), mixed, or as a JSON array.
 */
const repeated = <T extends z.ZodType>(item: T, max: number) =>
  z
    .preprocess((v) => {
      if (v === undefined) return v;
      const values = Array.isArray(v) ? v : [v];
      return values.flatMap((x) =>
        typeof x === "string"
          ? x
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean)
          : [x],
      );
    }, z.array(item).max(max))
    .optional();

/** A form's boolean words, or a JSON boolean. */
const formBool = z
  .union([z.boolean(), z.enum(["true", "false", "1", "0", "yes", "no", "on", "off"])])
  .transform((v) => v === true || ["true", "1", "yes", "on"].includes(v as string))
  .openapi({ type: "boolean" });

/** Seconds as a form/query field: a number ≥ 0; an empty value is missing, not 0. */
const secs = () => fromDecimal(z.number().finite().min(0));

const id = (example: string) => z.string().min(1).max(64).openapi({ example });

/**
 * The search form's fields, checked once: the HTTP route validates its form (multipart or
 * urlencoded) and its JSON body with them, and the CLI its options (`parseSearchRequest`); the
 * agent tool has its own input schema. The rules across fields (one of query/image/image_url, …)
 * are SearchService's, checked once for every caller.
 */
const searchFields = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .max(1000)
    .optional()
    .openapi({ description: "Natural-language text", example: "a dog catching a frisbee" }),
  image: z.any().optional().openapi({
    type: "string",
    format: "binary",
    description: "Reference image: JPEG or PNG, ≤ 10 MB, ≥ 64×64 (multipart only)",
  }),
  image_url: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .openapi({ description: "Public http(s) URL of a JPEG/PNG reference image" }),
  collection_id: id("col_8Hq2mZ0aP4xR7tY1uW3e")
    .optional()
    .openapi({ description: "Search one collection (default: the whole account)" }),
  video_id: id("vid_Qm3x9T0bL2vK7cP5sN1a").optional().openapi({ description: "Search one video" }),
  modes: repeated(z.enum(MODES as [Mode, ...Mode[]]), MODES.length).openapi({
    description: "Repeatable; default all four (`ocr` = text shown on screen)",
    type: "array",
    items: { type: "string", enum: [...MODES] },
  }),
  labels: repeated(z.string().trim().min(1).max(100), 20).openapi({
    description: "Repeatable scene-label filter (any of)",
    type: "array",
    items: { type: "string" },
  }),
  page: pageField(10_000),
  per_page: perPageField(50, 10),
  min_score: fromDecimal(z.number().finite().min(0).max(1)).optional().openapi({
    type: "number",
    minimum: 0,
    maximum: 1,
    description:
      "Replaces every per-mode threshold for this request: segments scoring at least this are kept. 0 returns the best matches whatever their score, ranked",
    example: 0.3,
  }),
  include_hidden: formBool
    .default(false)
    .openapi({ description: "Also return segments hidden by `down` feedback (with hidden: true)" }),
  include_thumbnail_base64: formBool
    .default(false)
    .openapi({ description: "Add each segment's thumbnail as base64 JPEG" }),
  exact: formBool.default(false).openapi({
    description:
      "Read every vector of the scope instead of the inverted lists nearest the query: the recall of a full scan (recall@10 ~0.97 against exact cosine on the bench) at its cost, which grows with the library (docs/SEARCH.md)",
  }),
});

export const searchFormSchema = searchFields.strict().superRefine((f, ctx) => {
  if (f.image !== undefined && !(f.image instanceof Blob)) {
    ctx.addIssue({
      code: "custom",
      path: ["image"],
      message: "image must be one uploaded file (multipart/form-data)",
    });
  }
});

/** The same fields as JSON (SPEC §6: "every other write takes JSON"); a reference image needs multipart. */
export const searchJsonSchema = searchFields.omit({ image: true }).strict().openapi("SearchRequest");

export type SearchForm = z.output<typeof searchFormSchema>;

/** A validated form as the service's request; `image` is the uploaded file's bytes. */
export function toSearchRequest(f: SearchForm, image?: Uint8Array): SearchRequest {
  return {
    query: f.query,
    image,
    imageUrl: f.image_url,
    collectionId: f.collection_id,
    videoId: f.video_id,
    modes: f.modes,
    labels: f.labels,
    page: f.page,
    perPage: f.per_page,
    minScore: f.min_score,
    includeHidden: f.include_hidden,
    includeThumbnailBase64: f.include_thumbnail_base64,
    exact: f.exact,
  };
}

/** Form-shaped input (field names as in the HTTP form) → a valid request, or a 422 ValidationError. */
export function parseSearchRequest(input: Record<string, unknown>): SearchRequest {
  return toSearchRequest(parseInput(searchFormSchema, input));
}

/** What SearchService takes (HTTP form and CLI both map onto it). */
export interface SearchRequest {
  query?: string;
  /** Raw bytes of an uploaded image (JPEG/PNG). */
  image?: Uint8Array;
  imageUrl?: string;
  collectionId?: string;
  videoId?: string;
  /** Explicitly requested modes; undefined = the default (all four). */
  modes?: Mode[];
  labels?: string[];
  /** 0–1: replaces the per-mode thresholds for this request (SPEC §6). */
  minScore?: number;
  page: number;
  perPage: number;
  includeHidden: boolean;
  includeThumbnailBase64: boolean;
  /** Read every vector of the scope (no inverted-list probing); absent = false. */
  exact?: boolean;
}

export const SEGMENT_TYPES = ["frame", "transcript", "scene", "ocr"] as const;

export const segmentSchema = z
  .object({
    timestamp_start: z.number().openapi({ description: "Seconds" }),
    timestamp_end: z.number(),
    score: z
      .number()
      .min(0)
      .max(1)
      .openapi({ description: "Calibrated per mode: one cut means the same across queries" }),
    type: z.enum(SEGMENT_TYPES),
    text_content: z.string().nullable().openapi({ description: "Transcript text, or the shot's caption / labels" }),
    video_url: z.string().openapi({ description: "Presigned playback URL ending in #t=start,end" }),
    thumbnail_url: z.string().nullable(),
    thumbnail_base64: z
      .string()
      .optional()
      .openapi({ description: "JPEG, base64; only with include_thumbnail_base64" }),
    hidden: z.boolean(),
    rank: z
      .number()
      .int()
      .openapi({ description: "Position in the fused ranking of all matching segments (1 = best)" }),
    raw_score: z
      .number()
      .openapi({ description: "The mode's own similarity (cosine, BM25, label/caption word coverage)" }),
    threshold_key: z.string().openapi({ example: "video:default" }),
  })
  .openapi("SearchSegment");

export const searchVideoSchema = z
  .object({
    video_id: z.string(),
    filename: z.string(),
    collection_id: z.string(),
    status: z.string(),
    segments: z.array(segmentSchema),
  })
  .openapi("SearchResultVideo");

export type SearchSegment = z.infer<typeof segmentSchema>;
export type SearchVideo = z.infer<typeof searchVideoSchema>;

export interface SearchResult {
  videos: SearchVideo[];
  total: number;
  page: number;
  perPage: number;
  facets: { scene_labels: Record<string, number>; types: Record<string, number> };
  modes: Mode[];
  skippedModes: Record<string, string>;
}

const thresholdKey = z
  .string()
  .max(64)
  .regex(/^(video|scene|transcript|ocr):[a-z0-9_-]{1,32}$/, "threshold_key looks like mode:name, e.g. video:default");

const optionalText = (max: number) =>
  z
    .string()
    .max(max)
    .optional()
    .transform((v) => (v === undefined || v.trim() === "" ? null : v));

export const feedbackFormSchema = z
  .object({
    video_id: id("vid_Qm3x9T0bL2vK7cP5sN1a"),
    timestamp_start: secs().openapi({ type: "number", description: "Seconds, as returned by search" }),
    signal: z.enum(["up", "down"]),
    query: optionalText(1000).openapi({ type: "string" }),
    raw_score: z
      .union([z.literal(""), fromDecimal(z.number().finite())])
      .optional()
      .transform((v) => (v === "" || v === undefined ? null : v))
      .openapi({ type: "number" }),
    threshold_key: z
      .union([z.literal(""), thresholdKey])
      .optional()
      .transform((v) => (v ? v : null))
      .openapi({ type: "string", example: "video:default" }),
  })
  .strict();

export type FeedbackInput = z.output<typeof feedbackFormSchema>;

export const feedbackDeleteQuery = z.object({
  video_id: id("vid_Qm3x9T0bL2vK7cP5sN1a"),
  // `required` by hand: the preprocess step makes the generator think the field may be absent.
  timestamp_start: secs().openapi({ type: "number", param: { name: "timestamp_start", in: "query", required: true } }),
});

export const momentQuery = z.object({
  timestamp: secs().openapi({
    type: "number",
    description: "Seconds into the video",
    example: 12.5,
    param: { name: "timestamp", in: "query", required: true },
  }),
});

export const onScreenLineSchema = z
  .object({
    text: z.string(),
    start: z.number().openapi({ description: "Seconds: when the line appeared" }),
    end: z.number(),
    confidence: z.number().openapi({ description: "0–100" }),
    box: z
      .object({ x: z.number(), y: z.number(), w: z.number(), h: z.number() })
      .openapi({ description: "Fractions of the frame (0–1) from the top left" }),
  })
  .openapi("OnScreenLine");

export const momentSchema = z
  .object({
    video_id: z.string(),
    timestamp: z.number(),
    caption: z.string().nullable(),
    labels: z.array(z.string()),
    transcript: z.string().nullable().openapi({ description: "What is said during the shot" }),
    on_screen_text: z.array(onScreenLineSchema).openapi({
      description:
        "Text shown during the shot (OCR), in order of appearance, each text once; empty when none was read (or OCR is still pending)",
    }),
    scene_start: z.number().nullable(),
    scene_end: z.number().nullable(),
    thumbnail_url: z.string().nullable(),
  })
  .openapi("Moment");

export type Moment = z.infer<typeof momentSchema>;
