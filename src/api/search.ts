import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ValidationError } from "../core/errors.ts";
import { dataResponse, defineRoute, idParam, jsonError, ok, RETRY_AFTER_HEADER } from "../http/index.ts";
import { type MetaExtra, metaSchema } from "../http/envelope.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { MAX_IMAGE_BYTES } from "../search/image-input.ts";
import { emptySearchHints, searchScope } from "../search/empty-hints.ts";
import { MODES, type Mode } from "../search/thresholds.ts";
import {
  feedbackDeleteQuery,
  feedbackFormSchema,
  momentQuery,
  momentSchema,
  type SearchForm,
  searchFormSchema,
  searchJsonSchema,
  type SearchRequest,
  searchVideoSchema,
  toSearchRequest,
} from "../search/schema.ts";

// Lives with the route, not in search/schema.ts: it extends the HTTP envelope's meta (a kit schema).
export const searchMetaSchema = metaSchema
  .extend({
    modes: z
      .array(z.enum(MODES as [Mode, ...Mode[]]))
      .optional()
      .openapi({ description: "Modes that ran" }),
    skipped_modes: z
      .record(z.string(), z.string())
      .optional()
      .openapi({
        description:
          "Defaulted modes that did not run, each with why. A mode skipped for a missing model reads `MODEL_NOT_INSTALLED: no <role> model installed; fix: <command>` — the role it needs and the command that installs one (e.g. `vsearch models pull whisper-tiny.en`); then `vsearch reindex` indexes the videos already there",
        example: {
          transcript:
            "MODEL_NOT_INSTALLED: no speech model installed; fix: vsearch models pull whisper-tiny.en (air-gapped: vsearch models import <dir|tar> --role speech)",
        },
      }),
    hints: z
      .array(z.object({ code: z.string(), message: z.string() }))
      .optional()
      .openapi({
        description:
          "When no video matched: what to try (lower min_score, more modes, a wider scope, other words, or wait for indexing)",
      }),
  })
  .openapi("SearchMeta");

/** The image (≤ 10 MB) plus the other fields and multipart framing. */
const SEARCH_MAX_BODY = MAX_IMAGE_BYTES + 1024 * 1024;

/**
 * A form body in both encodings. `repeated` names the array fields, sent as one field per value
 * (`modes=video&modes=scene`), which `encoding` tells generated clients.
 */
const form = <S extends z.ZodType>(schema: S, repeated: string[] = [], files: Record<string, string> = {}) => {
  const multipart = Object.fromEntries([
    ...repeated.map((k) => [k, { contentType: "text/plain", explode: true }]),
    ...Object.entries(files).map(([k, type]) => [k, { contentType: type }]),
  ]);
  const urlencoded = Object.fromEntries(repeated.map((k) => [k, { style: "form", explode: true }]));
  return {
    required: true as const,
    content: {
      "multipart/form-data": { schema, ...(Object.keys(multipart).length ? { encoding: multipart } : {}) },
      "application/x-www-form-urlencoded": { schema, ...(repeated.length ? { encoding: urlencoded } : {}) },
    },
  };
};

const isJsonBody = (c: Context) => /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(c.req.header("content-type") ?? "");

/**
 * A form body that is also accepted as JSON (same fields but files; the same validation and 422s).
 * Not `required`: a required body makes @hono/zod-openapi run every declared validator on every
 * request, so the form's would check a JSON request's (absent) form fields and refuse it. Each
 * encoding is validated when the request is sent in it; `sentBody` refuses a request in neither.
 */
const withJson = <B extends ReturnType<typeof form>, S extends z.ZodType>({ required: _, ...body }: B, json: S) => ({
  ...body,
  content: { ...body.content, "application/json": { schema: json } },
});

const isFormBody = (c: Context) =>
  /^(multipart\/form-data|application\/x-www-form-urlencoded)\s*(;|$)/i.test(c.req.header("content-type") ?? "");

/** Which encoding the body came in; a request with neither gets the 422 an empty form would. */
function sentBody(c: Context): "json" | "form" {
  if (isJsonBody(c)) return "json";
  if (isFormBody(c)) return "form";
  throw new ValidationError([
    { loc: ["body"], msg: "Send the fields as JSON or as a form (multipart or urlencoded)", type: "missing" },
  ]);
}

/** The validated form (searchFormSchema checked every field and rule) with the image's bytes. */
async function toRequest(f: SearchForm): Promise<SearchRequest> {
  // Size, format and pixel checks happen once, in the service (the same ones as for image_url).
  return toSearchRequest(f, f.image instanceof Blob ? new Uint8Array(await f.image.arrayBuffer()) : undefined);
}

export function registerSearchRoutes(app: Api, deps: HttpDeps) {
  const s = deps.services;

  app.openapi(
    defineRoute(deps, {
      method: "post",
      path: "/v1/search",
      operationId: "search",
      tags: ["Search"],
      summary: "Find moments by text, image or both",
      description:
        'Form body (multipart or urlencoded) or the same fields as JSON (a reference image needs multipart); list fields (`modes`, `labels`) repeated or comma-separated. Modes `video` (frames), `scene` (shots: embedding, labels, caption), `transcript` (what was said, BM25 with "phrases" and prefix*) and `ocr` (text shown on screen, BM25; needs no model), fused with Reciprocal Rank Fusion (k = 60). Results are videos, best first, each with its matching clips. See docs/SEARCH.md for scores and thresholds.',
      access: "read_only",
      rateGroup: "search",
      maxBody: SEARCH_MAX_BODY,
      request: {
        body: withJson(
          form(searchFormSchema, ["modes", "labels"], { image: "image/jpeg, image/png" }),
          searchJsonSchema,
        ),
      },
      responses: {
        200: {
          description: "Matching videos and their clips",
          content: {
            "application/json": { schema: z.object({ data: z.array(searchVideoSchema), meta: searchMetaSchema }) },
          },
        },
        402: jsonError("Out of credits (INSUFFICIENT_CREDITS)"),
        429: jsonError(
          "Rate limit exceeded, or this account already has 4 query images being decoded or waiting (RATE_LIMIT_EXCEEDED); see Retry-After",
        ),
        404: jsonError("collection_id / video_id not in this account (COLLECTION_NOT_FOUND, VIDEO_NOT_FOUND)"),
        503: {
          ...jsonError(
            "A requested mode's model is not installed (MODEL_NOT_INSTALLED); or SEARCH_UNAVAILABLE: the model failed, or the in-memory index is still loading after a restart (the message says how far; vector modes wait up to 2 s for it first), or too many query images of all accounts wait to be decoded — retry after Retry-After",
          ),
          headers: RETRY_AFTER_HEADER,
        },
      },
    }),
    async (c) => {
      // Only the validator of the body's own encoding ran (the other holds an empty object).
      const input =
        sentBody(c) === "json"
          ? toSearchRequest(c.req.valid("json") as SearchForm)
          : await toRequest(c.req.valid("form"));
      const accountId = c.get("principal").accountId;
      const r = await s.search.search(accountId, input);
      const hints =
        r.total === 0 ? emptySearchHints(input, r, await searchScope(s.videos, accountId, input)) : undefined;
      const meta = {
        total: r.total,
        page: r.page,
        per_page: r.perPage,
        facets: r.facets,
        modes: r.modes,
        skipped_modes: r.skippedModes,
        ...(hints ? { hints } : {}),
      };
      return ok(c, r.videos, 200, meta as MetaExtra);
    },
  );

  app.openapi(
    defineRoute(deps, {
      method: "post",
      path: "/v1/search/feedback",
      operationId: "submitSearchFeedback",
      tags: ["Search"],
      summary: "Thumbs up/down on a search result",
      description:
        "`down` hides the segment (video + timestamp_start within 0.01 s) from later searches unless include_hidden=true; both signals move the threshold named by threshold_key one small bounded step.",
      access: "read_only",
      rateGroup: "search",
      request: { body: withJson(form(feedbackFormSchema), feedbackFormSchema) },
      responses: {
        200: dataResponse("Recorded", z.null()),
        404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
      },
    }),
    async (c) => {
      const body = sentBody(c) === "json" ? c.req.valid("json") : c.req.valid("form");
      await s.searchFeedback.submit(c.get("principal").accountId, body);
      return ok(c, null);
    },
  );

  app.openapi(
    defineRoute(deps, {
      method: "delete",
      path: "/v1/search/feedback",
      operationId: "clearSearchFeedback",
      tags: ["Search"],
      summary: "Clear feedback on a segment (unhides it, takes its threshold step back)",
      access: "read_only",
      rateGroup: "search",
      request: { query: feedbackDeleteQuery },
      responses: {
        204: { description: "Cleared (also when there was none)" },
        404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
      },
    }),
    async (c) => {
      const q = c.req.valid("query");
      await s.searchFeedback.clear(c.get("principal").accountId, q.video_id, q.timestamp_start);
      return c.body(null, 204);
    },
  );

  app.openapi(
    defineRoute(deps, {
      method: "get",
      path: "/v1/videos/{video_id}/moment",
      operationId: "getMoment",
      tags: ["Search"],
      summary: "The shot covering a time: caption, labels, transcript, on-screen text, span, thumbnail",
      access: "read_only",
      rateGroup: "moment",
      request: { params: idParam("video_id", "vid_Qm3x9T0bL2vK7cP5sN1a"), query: momentQuery },
      responses: {
        200: dataResponse("Moment (empty fields are normal)", momentSchema),
        404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
      },
    }),
    async (c) =>
      ok(
        c,
        await s.moments.moment(
          c.get("principal").accountId,
          c.req.valid("param").video_id,
          c.req.valid("query").timestamp,
        ),
      ),
  );
}
