import { readFileSync } from "node:fs";
import type { z } from "@hono/zod-openapi";
import { AppError, ValidationError } from "../core/errors.ts";
import type { CollectionService } from "../collections/service.ts";
import type { JobService } from "../jobs/service.ts";
import type { MediaItem, MediaService } from "../media-serving/service.ts";
import type { ExportService } from "../playback/exports.ts";
import type { MomentService } from "../search/moment-service.ts";
import { secs } from "../search/links.ts";
import type { SearchService } from "../search/service.ts";
import type { SearchSegment } from "../search/schema.ts";
import type { VideoFiles } from "../videos/files.ts";
import type { VideoService } from "../videos/service.ts";
import type { FrameGrabber } from "./frames.ts";
import { jpegSize } from "./frames.ts";
import * as S from "./schema.ts";
import { cite, clock, searchSummary, suggestionsFor } from "./summary.ts";

/** The services the tools call: the same ones the REST routes call (no second implementation). */
export interface AgentDeps {
  collections: Pick<CollectionService, "list" | "get">;
  videos: Pick<VideoService, "list" | "get" | "require">;
  jobs: Pick<JobService, "get">;
  search: Pick<SearchService, "search">;
  moments: Pick<MomentService, "moment">;
  exports: Pick<ExportService, "segments">;
  media: Pick<MediaService, "open">;
  files: Pick<VideoFiles, "local" | "withLocal" | "holdVideo">;
  frames: FrameGrabber;
}

/** The call around a tool run: its signal aborts when the caller leaves or the request runs out of time. */
export interface ToolContext {
  signal?: AbortSignal;
}

/** A picture an answer carries; over MCP it becomes image content, over /call it stays base64 in the JSON. */
export interface ToolImage {
  data: string;
  caption: string;
}

export interface AgentTool<I extends z.ZodType = z.ZodType, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  run(d: AgentDeps, accountId: string, input: z.output<I>, ctx: ToolContext): Promise<z.output<O>>;
  /** The short text an MCP answer leads with. */
  summary(out: z.output<O>): string;
  /** Moves the answer's inline JPEGs out of the structured part (MCP sends them as image content). */
  images?(out: z.output<O>): { structured: z.output<O>; images: ToolImage[] };
}

const tool = <I extends z.ZodType, O extends z.ZodObject>(t: AgentTool<I, O>) => t as unknown as AgentTool;

const SNIPPET_CHARS = 300;
const snippet = (t: string | null) => (t && t.length > SNIPPET_CHARS ? `${t.slice(0, SNIPPET_CHARS - 1)}…` : t);
const nextPage = (page: number, limit: number, total: number) => (page * limit < total ? page + 1 : null);

/** Another layer's 422 (`body.x`, `query.x`) points into the tool's input instead. */
function asInputError(e: unknown): unknown {
  if (!(e instanceof ValidationError)) return e;
  return new ValidationError(
    e.issues.map((i) => ({
      ...i,
      loc: ["input", ...(["body", "query", "path", "input"].includes(String(i.loc[0])) ? i.loc.slice(1) : i.loc)],
    })),
  );
}

const timeIssue = (timestamp: number, duration: number) =>
  new ValidationError([
    {
      loc: ["input", "timestamp"],
      msg: `timestamp is past the end of the video (${duration} s)`,
      type: "less_than_equal",
      input: timestamp,
      ctx: { max: duration },
    },
  ]);

/** A clip's stored thumbnail (shot, or the poster) at most THUMB_MAX_WIDTH wide, base64; null when there is none. */
async function clipThumbnail(
  d: AgentDeps,
  accountId: string,
  url: string | null,
  ctx: ToolContext,
): Promise<string | null> {
  if (!url) return null;
  const u = new URL(url);
  const m = /^\/media\/videos\/([^/]+)\/(?:poster\.jpg|shots\/(\d+)\.jpg)$/.exec(u.pathname);
  if (!m) return null;
  const item: MediaItem = m[2] === undefined ? { kind: "poster" } : { kind: "shot", index: Number(m[2]) };
  // Held against the node's media cache bound until ffmpeg (fitWidth) has read the file.
  const release = d.files.holdVideo(m[1]!);
  try {
    // The link was signed a moment ago by the same search; open() checks it and finds the file.
    const file = await d.media.open(
      m[1],
      item,
      u.searchParams.get("expires") ?? undefined,
      u.searchParams.get("signature") ?? undefined,
    );
    const jpeg = await d.frames.fitWidth(accountId, readFileSync(file.path), file.path, S.THUMB_MAX_WIDTH, {
      videoId: m[1],
      signal: ctx.signal,
    });
    return jpeg ? Buffer.from(jpeg).toString("base64") : null;
  } catch (e) {
    if (e instanceof AppError && e.status === 404) return null;
    throw e;
  } finally {
    release();
  }
}

const MAX_IMAGES = 8;

export const TOOLS: AgentTool[] = [
  tool({
    name: "search_videos",
    title: "Search videos",
    description:
      "Find moments in the account's videos by what is seen (frames, shots) or said (transcript). Returns clips best first, each with a calibrated relevance_score, the matched text, a playback link and a small thumbnail. Give query and/or image_url.",
    input: S.searchVideosInput,
    output: S.searchVideosOutput,
    async run(d, accountId, i, ctx) {
      // The largest page (50 videos, ≤ 20 clips each), not just `limit` videos: clips are ranked
      // across videos, so the best `limit` clips may come from further down the video list.
      // min_score means what it means over REST (SPEC §6): it replaces the per-mode thresholds.
      const r = await d.search.search(accountId, {
        query: i.query,
        imageUrl: i.image_url,
        collectionId: i.collection_id,
        videoId: i.video_id,
        modes: i.modes,
        minScore: i.min_score,
        page: 1,
        perPage: 50,
        includeHidden: false,
        includeThumbnailBase64: false,
      });
      const all = r.videos.flatMap((v) => v.segments.map((s) => ({ v, s }))).sort((a, b) => a.s.rank - b.s.rank);
      const clips: S.Clip[] = [];
      for (const { v, s } of all.slice(0, i.limit))
        clips.push({ ...clipOf(v, s), thumbnail_base64: await clipThumbnail(d, accountId, s.thumbnail_url, ctx) });
      return {
        clips,
        total_videos: r.total,
        modes: r.modes,
        skipped_modes: r.skippedModes,
        suggestions: clips.length ? [] : suggestionsFor(i, r.modes, r.skippedModes),
      };
    },
    summary: (o) => searchSummary(o, MAX_IMAGES),
    images(o) {
      const images = o.clips
        .filter((c) => c.thumbnail_base64)
        .slice(0, MAX_IMAGES)
        .map((c) => ({ data: c.thumbnail_base64!, caption: cite(c.filename, c.start_secs, c.end_secs) }));
      return { structured: { ...o, clips: o.clips.map((c) => ({ ...c, thumbnail_base64: null })) }, images };
    },
  }),
  tool({
    name: "list_collections",
    title: "List collections",
    description: "The account's collections (folders of videos), newest first, with video counts.",
    input: S.listCollectionsInput,
    output: S.listCollectionsOutput,
    async run(d, accountId, i) {
      const { items, total } = await d.collections.list(accountId, { page: i.page, perPage: i.limit });
      return { collections: items, total, page: i.page, next_page: nextPage(i.page, i.limit, total) };
    },
    summary: (o) =>
      o.total
        ? `${o.total} collection${o.total === 1 ? "" : "s"}${o.next_page ? ` (page ${o.page}; more on page ${o.next_page})` : ""}:\n` +
          o.collections
            .map((c) => `- ${c.name} (${c.id}): ${c.video_count} video${c.video_count === 1 ? "" : "s"}`)
            .join("\n")
        : "This account has no collections yet.",
  }),
  tool({
    name: "get_collection",
    title: "Get a collection",
    description: "One collection with its video count, total duration and storage.",
    input: S.getCollectionInput,
    output: S.getCollectionOutput,
    async run(d, accountId, i) {
      return { collection: await d.collections.get(accountId, i.collection_id) };
    },
    summary: ({ collection: c }) =>
      `${c.name} (${c.id}): ${c.video_count} videos, ${clock(c.total_duration_secs)} in total.`,
  }),
  tool({
    name: "list_videos",
    title: "List videos",
    description:
      "The account's videos, newest first; filter by collection and status (queued, processing, ready, failed).",
    input: S.listVideosInput,
    output: S.listVideosOutput,
    async run(d, accountId, i) {
      const { items, total } = await d.videos.list(
        accountId,
        { collectionId: i.collection_id, statuses: i.status },
        { page: i.page, perPage: i.limit },
      );
      return { videos: items, total, page: i.page, next_page: nextPage(i.page, i.limit, total) };
    },
    summary: (o) =>
      o.total
        ? `${o.total} video${o.total === 1 ? "" : "s"}${o.next_page ? ` (page ${o.page}; more on page ${o.next_page})` : ""}:\n` +
          o.videos
            .map(
              (v) =>
                `- ${v.filename} (${v.id}): ${v.status}${v.duration_secs !== null ? `, ${clock(v.duration_secs)}` : ""}`,
            )
            .join("\n")
        : "No video matched.",
  }),
  tool({
    name: "get_video",
    title: "Get a video",
    description: "One video: status, duration, size, indexing stages (what ran or was skipped) and a playback link.",
    input: S.getVideoInput,
    output: S.getVideoOutput,
    async run(d, accountId, i) {
      return { video: await d.videos.get(accountId, i.video_id) };
    },
    summary: ({ video: v }) =>
      `${v.filename} (${v.id}): ${v.status}${v.duration_secs !== null ? `, ${clock(v.duration_secs)}` : ""}, ${v.segments_count} searchable segments` +
      (v.error ? `; failed: ${v.error.code} ${v.error.message}` : "."),
  }),
  tool({
    name: "get_job_status",
    title: "Get an indexing job",
    description:
      "Status, stage and percent of an indexing job (from an upload): poll until done before searching the video.",
    input: S.getJobStatusInput,
    output: S.getJobStatusOutput,
    async run(d, accountId, i) {
      return { job: await d.jobs.get(accountId, i.job_id) };
    },
    summary: ({ job: j }) =>
      `Job ${j.id} for ${j.video_id}: ${j.status}${j.stage ? ` (${j.stage})` : ""}, ${j.progress_pct}%` +
      (j.error ? `; ${j.error.code}: ${j.error.message}` : "."),
  }),
  tool({
    name: "get_moment",
    title: "What happens at a moment",
    description:
      "The shot covering a time in a video: caption, labels, what is said and what text is shown on screen during it, its span and thumbnail link.",
    input: S.getMomentInput,
    output: S.getMomentOutput,
    async run(d, accountId, i) {
      const video = await d.videos.require(accountId, i.video_id);
      const m = await d.moments.moment(accountId, i.video_id, i.timestamp);
      return {
        filename: video.filename,
        ...m,
        on_screen_text: m.on_screen_text.map(({ text, start, end, confidence }) => ({ text, start, end, confidence })),
      };
    },
    summary: (m) => {
      const span =
        m.scene_start !== null && m.scene_end !== null
          ? cite(m.filename, m.scene_start, m.scene_end)
          : `[${m.filename} ${clock(m.timestamp)}]`;
      const parts = [
        m.caption && `caption: ${m.caption}`,
        m.labels.length && `labels: ${m.labels.join(", ")}`,
        m.transcript && `said: "${snippet(m.transcript)}"`,
        m.on_screen_text.length && `on screen: ${m.on_screen_text.map((l) => `"${snippet(l.text)}"`).join(", ")}`,
      ].filter(Boolean);
      return `${span} ${parts.length ? parts.join("; ") : "nothing is known about this moment beyond its picture (try get_frame)"}`;
    },
  }),
  tool({
    name: "get_transcript",
    title: "Read the transcript",
    description: `What is said in a video, as timed segments; optionally only between start and end (seconds). At most ${S.MAX_TRANSCRIPT_SEGMENTS} segments per call.`,
    input: S.getTranscriptInput,
    output: S.getTranscriptOutput,
    async run(d, accountId, i) {
      const video = await d.videos.require(accountId, i.video_id);
      if (i.start !== undefined && i.end !== undefined && i.end < i.start) {
        throw new ValidationError([
          {
            loc: ["input", "end"],
            msg: "end must not be before start",
            type: "greater_than_equal",
            input: i.end,
            ctx: { min: i.start },
          },
        ]);
      }
      // The export's reading of the transcript, kept to the segments overlapping [start, end].
      const [from, to] = [i.start ?? -1, i.end ?? Number.MAX_VALUE];
      const rows = (await d.exports.segments(accountId, i.video_id)).filter(
        (r) => r.start_secs < to && r.end_secs > from,
      );
      const segments = rows
        .slice(0, S.MAX_TRANSCRIPT_SEGMENTS)
        .map((r) => ({ start_secs: secs(r.start_secs), end_secs: secs(r.end_secs), text: r.text }));
      return {
        video_id: video.id,
        filename: video.filename,
        segments,
        truncated: rows.length > S.MAX_TRANSCRIPT_SEGMENTS,
      };
    },
    summary: (o) =>
      o.segments.length
        ? `${o.segments.length} segment${o.segments.length === 1 ? "" : "s"}${o.truncated ? " (more follow; ask with start = the last end)" : ""}:\n` +
          o.segments.map((s) => `${cite(o.filename, s.start_secs, s.end_secs)} ${s.text.trim()}`).join("\n")
        : `Nothing is said in ${o.filename} in that span (or it has no transcript).`,
  }),
  tool({
    name: "get_frame",
    title: "Look at a frame",
    description: `One frame of a video at a time, as a JPEG at most ${S.FRAME_MAX_SIDE} px on its longer side: look at it to check a search hit.`,
    input: S.getFrameInput,
    output: S.getFrameOutput,
    async run(d, accountId, i, ctx) {
      const video = await d.videos.require(accountId, i.video_id);
      if (video.duration_secs === null)
        throw new AppError("VIDEO_NOT_READY", `Video ${video.id} has not been probed yet (status ${video.status})`);
      if (i.timestamp > video.duration_secs + 1e-3)
        throw timeIssue(i.timestamp, Math.round(video.duration_secs * 1000) / 1000);
      // Held against the node's media cache bound while ffmpeg reads it.
      const jpeg = await d.files.withLocal(video.source_path, (source) =>
        d.frames.frame(accountId, source, Math.min(i.timestamp, video.duration_secs!), S.FRAME_MAX_SIDE, {
          videoId: video.id,
          signal: ctx.signal,
        }),
      );
      const size = jpegSize(jpeg)!;
      return {
        video_id: video.id,
        filename: video.filename,
        timestamp: i.timestamp,
        ...size,
        mime_type: "image/jpeg" as const,
        image_base64: Buffer.from(jpeg).toString("base64"),
      };
    },
    summary: (f) => `Frame of [${f.filename} ${clock(f.timestamp)}] (${f.timestamp} s), ${f.width}×${f.height} JPEG.`,
    images: (f) => ({
      structured: { ...f, image_base64: null },
      images: f.image_base64 ? [{ data: f.image_base64, caption: `[${f.filename} ${clock(f.timestamp)}]` }] : [],
    }),
  }),
];

function clipOf(
  v: { video_id: string; filename: string; collection_id: string },
  s: SearchSegment,
): Omit<S.Clip, "thumbnail_base64"> {
  return {
    video_id: v.video_id,
    filename: v.filename,
    collection_id: v.collection_id,
    start_secs: s.timestamp_start,
    end_secs: s.timestamp_end,
    relevance_score: s.score,
    raw_score: s.raw_score,
    type: s.type,
    text_snippet: snippet(s.text_content),
    clip_url: s.video_url,
    thumbnail_url: s.thumbnail_url,
  };
}

export { asInputError, MAX_IMAGES };
