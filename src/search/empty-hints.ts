import { MODES } from "./thresholds.ts";
import type { SearchRequest, SearchResult } from "./schema.ts";
import type { VideoService } from "../videos/service.ts";
import type { VideoStatus } from "../videos/schema.ts";

/** One thing to try after a search that found nothing, worded for people (CLI and dashboard alike). */
export interface SearchHint {
  code: "INDEXING" | "NOTHING_INDEXED" | "MIN_SCORE" | "MODES" | "MODE_SKIPPED" | "SCOPE" | "REPHRASE";
  message: string;
}

const MODE_WORDS: Record<string, string> = {
  video: "frames (what is seen)",
  scene: "scenes (shots, labels, captions)",
  transcript: "speech (what is said)",
  ocr: "on-screen text",
};

/**
 * What to try when a search matched no video (the agent tools say the same to agents, in their
 * own terms: agent/summary.ts). `scope` counts the videos the search could see: indexed ones, and
 * ones still queued or being indexed.
 */
export function emptySearchHints(
  req: Pick<SearchRequest, "query" | "minScore" | "modes" | "collectionId" | "videoId">,
  result: Pick<SearchResult, "total" | "modes" | "skippedModes">,
  scope: { ready: number; indexing: number },
): SearchHint[] {
  if (result.total > 0) return [];
  const where = req.videoId ? "this video" : req.collectionId ? "this collection" : "this account";
  const out: SearchHint[] = [];
  if (scope.ready === 0) {
    out.push(
      scope.indexing > 0
        ? {
            code: "INDEXING",
            message: `Nothing in ${where} is searchable yet: ${scope.indexing} video${scope.indexing === 1 ? " is" : "s are"} still being indexed.`,
          }
        : {
            code: "NOTHING_INDEXED",
            message: `There is no indexed video in ${where}: upload one (dashboard, POST /v1/upload or \`vsearch ingest\`) first.`,
          },
    );
    return out;
  }
  if (req.minScore !== undefined && req.minScore > 0)
    out.push({
      code: "MIN_SCORE",
      message: `Lower the minimum score (now ${req.minScore}); 0 lists the best matches whatever their score.`,
    });
  else if (req.minScore === undefined)
    out.push({
      code: "MIN_SCORE",
      message: "Set the minimum score to 0 to see the best matches even when none is a confident hit.",
    });
  const others = MODES.filter((m) => !result.modes.includes(m) && !result.skippedModes[m]);
  if (req.modes && others.length)
    out.push({
      code: "MODES",
      message: `Search more modes: also ${others.map((m) => MODE_WORDS[m] ?? m).join(", ")}.`,
    });
  for (const [m, why] of Object.entries(result.skippedModes))
    out.push({ code: "MODE_SKIPPED", message: `The ${MODE_WORDS[m] ?? m} mode could not run: ${why}` });
  if (req.videoId) out.push({ code: "SCOPE", message: "Search every video, not just this one." });
  else if (req.collectionId) out.push({ code: "SCOPE", message: "Search every collection, not just this one." });
  if (req.query)
    out.push({
      code: "REPHRASE",
      message:
        'Rephrase: describe what is visible in concrete words ("a red car on a wet road"), or quote words that were said.',
    });
  return out;
}

/** The videos a search could see, for `emptySearchHints`: indexed, and queued or being indexed. */
export async function searchScope(
  videos: Pick<VideoService, "list" | "get">,
  accountId: string,
  req: Pick<SearchRequest, "collectionId" | "videoId">,
): Promise<{ ready: number; indexing: number }> {
  if (req.videoId) {
    const status = (await videos.get(accountId, req.videoId)).status;
    return { ready: status === "ready" ? 1 : 0, indexing: status === "queued" || status === "processing" ? 1 : 0 };
  }
  const count = async (statuses: VideoStatus[]) =>
    (await videos.list(accountId, { collectionId: req.collectionId, statuses }, { page: 1, perPage: 1 })).total;
  return { ready: await count(["ready"]), indexing: await count(["queued", "processing"]) };
}
