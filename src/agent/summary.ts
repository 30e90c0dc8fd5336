import type { z } from "@hono/zod-openapi";
import { MODES } from "../search/thresholds.ts";
import type { searchVideosInput, SearchVideosOutput } from "./schema.ts";

/** mm:ss (h:mm:ss past an hour): how clips are cited in summaries. */
export function clock(t: number): string {
  const s = Math.max(0, Math.floor(t));
  const h = Math.floor(s / 3600);
  const rest = `${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
  return h ? `${h}:${rest}` : rest;
}
export const cite = (filename: string, start: number, end: number) => `[${filename} ${clock(start)}–${clock(end)}]`;

/**
 * The text an agent reads first: one line per clip, cited as `[filename mm:ss–mm:ss]` so its
 * answer can quote them; the images that follow are numbered in the same order.
 */
export function searchSummary(o: SearchVideosOutput, maxImages: number): string {
  if (!o.clips.length) {
    return ["No clip matched.", ...o.suggestions.map((s) => `- ${s}`)].join("\n");
  }
  let image = 0;
  const lines = o.clips.map((c, k) => {
    const pic = c.thumbnail_base64 && image < maxImages ? ` (image ${++image})` : "";
    const text = c.text_snippet
      ? ` — "${c.text_snippet.length > 120 ? `${c.text_snippet.slice(0, 119)}…` : c.text_snippet}"`
      : "";
    return `${k + 1}. ${cite(c.filename, c.start_secs, c.end_secs)} ${c.type}, score ${c.relevance_score.toFixed(2)}${text}${pic}`;
  });
  const skipped = Object.entries(o.skipped_modes).map(([m, why]) => `(${m} mode skipped: ${why})`);
  return [
    `${o.clips.length} clip${o.clips.length === 1 ? "" : "s"} from ${o.total_videos} matching video${o.total_videos === 1 ? "" : "s"} (modes: ${o.modes.join(", ")}):`,
    ...lines,
    ...skipped,
  ].join("\n");
}

/** What to try after an empty search: another mode, a lower min_score, a wider scope, other words. */
export function suggestionsFor(
  i: z.output<typeof searchVideosInput>,
  ran: readonly string[],
  skipped: Record<string, string>,
): string[] {
  const out: string[] = [];
  if (i.min_score !== undefined && i.min_score > 0) {
    out.push(
      `Lower min_score (now ${i.min_score}): try ${Math.max(0, Math.round((i.min_score - 0.2) * 10) / 10)}; 0 returns the best matches whatever their score.`,
    );
  } else if (i.min_score === undefined) {
    out.push("Pass min_score 0 to see the best matches even when none is a confident hit.");
  }
  const other = MODES.filter((m) => !ran.includes(m) && !skipped[m]);
  if (i.modes && other.length)
    out.push(
      `Search other modes too: modes ${JSON.stringify([...ran, ...other])} (video = what frames show, scene = shots, transcript = what is said).`,
    );
  for (const [m, why] of Object.entries(skipped)) out.push(`The ${m} mode could not run: ${why}.`);
  if (i.video_id) out.push("Widen the scope: leave out video_id to search every video.");
  else if (i.collection_id) out.push("Widen the scope: leave out collection_id to search every collection.");
  if (i.query)
    out.push(
      'Rephrase: describe what is visible in concrete words ("a red car on a wet road"), or quote words likely spoken.',
    );
  out.push('Check there is something to find: list_videos with status ["ready"] shows what is indexed.');
  return out;
}
