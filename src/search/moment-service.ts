import { ValidationError } from "../core/errors.ts";
import type { MediaLinks } from "./links.ts";
import { secs } from "./links.ts";
import type { Moment } from "./schema.ts";
import { labelsOf, type SearchStore } from "./store.ts";
import type { OcrSearchStore } from "./ocr-store.ts";

/** Without shots, the transcript around the time: this many seconds either side. */
const AROUND_SECS = 2.5;

/**
 * `GET /v1/videos/{id}/moment`: what is known about the shot covering a time — caption, labels,
 * what is said and what text is shown during it, its span and thumbnail. Missing parts are empty, never an error.
 */
export class MomentService {
  constructor(
    private readonly store: SearchStore,
    private readonly ocr: OcrSearchStore,
    private readonly videos: {
      require(
        accountId: string,
        id: string,
      ): Promise<{ id: string; duration_secs: number | null; poster_path: string | null }>;
    },
    private readonly links: MediaLinks,
  ) {}

  async moment(accountId: string, videoId: string, timestamp: number): Promise<Moment> {
    const video = await this.videos.require(accountId, videoId);
    if (!Number.isFinite(timestamp) || timestamp < 0) {
      throw new ValidationError([
        {
          loc: ["query", "timestamp"],
          msg: "timestamp is seconds ≥ 0",
          type: "greater_than_equal",
          input: timestamp,
          ctx: { min: 0 },
        },
      ]);
    }
    if (video.duration_secs !== null && timestamp > video.duration_secs + 1e-3) {
      throw new ValidationError([
        {
          loc: ["query", "timestamp"],
          msg: `timestamp is past the end of the video (${secs(video.duration_secs)} s)`,
          type: "less_than_equal",
          input: timestamp,
          ctx: { max: secs(video.duration_secs) },
        },
      ]);
    }
    const shot = await this.store.shotAt(videoId, timestamp);
    const [from, to] = shot ? [shot.start_secs, shot.end_secs] : [timestamp - AROUND_SECS, timestamp + AROUND_SECS];
    const said = (await this.store.transcriptOverlapping(videoId, from, Math.max(to, from + 1e-3)))
      .map((s) => s.text.trim())
      .filter(Boolean)
      .join(" ");
    // The same line read over several ranges of the shot (it left and came back) is listed once.
    const shown = new Map<string, Moment["on_screen_text"][number]>();
    for (const l of await this.ocr.overlapping(videoId, from, Math.max(to, from + 1e-3))) {
      if (shown.has(l.text)) continue;
      shown.set(l.text, {
        text: l.text,
        start: secs(l.start_secs),
        end: secs(l.end_secs),
        confidence: l.confidence,
        box: { x: round4(l.box_x), y: round4(l.box_y), w: round4(l.box_w), h: round4(l.box_h) },
      });
    }
    const thumbnail = shot?.thumbnail_path
      ? this.links.shotThumbnailUrl(videoId, shot.shot_index)
      : video.poster_path
        ? this.links.posterUrl(videoId)
        : null;
    return {
      video_id: videoId,
      timestamp,
      caption: shot?.caption ?? null,
      labels: labelsOf(shot),
      transcript: said || null,
      on_screen_text: [...shown.values()],
      scene_start: shot ? secs(shot.start_secs) : null,
      scene_end: shot ? secs(shot.end_secs) : null,
      thumbnail_url: thumbnail,
    };
  }
}

const round4 = (v: number) => Math.round(v * 1e4) / 1e4;
