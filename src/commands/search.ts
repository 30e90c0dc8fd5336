import type { Command } from "commander";
import { type CliContext, table } from "../cli/context.ts";
import { AppError } from "../core/errors.ts";
import { parseSearchRequest, type SearchResult } from "../search/schema.ts";
import { ACCOUNT_HELP } from "./accounts.ts";
import { emptySearchHints, type SearchHint, searchScope } from "../search/empty-hints.ts";

const list = (v: string, prev: string[] = []) => [
  ...prev,
  ...v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean),
];

/** `vsearch search "…" --account ID`: the same SearchService as POST /v1/search, printed as a table of moments. */
export function registerSearchCommands(program: Command, ctx: CliContext) {
  program
    .command("search <query>")
    .description("Search an account's videos for a moment (text query)")
    .option("--account <account>", ACCOUNT_HELP)
    .option("--collection <name>", "only this collection (by name)")
    .option("--video <id>", "only this video (vid_…)")
    .option("--modes <modes>", "video, scene, transcript, ocr (comma-separated or repeated; default all)", list)
    .option("--labels <labels>", "only shots with any of these scene labels (comma-separated or repeated)", list)
    .option("--page <n>", "page of videos", "1")
    .option("--per-page <n>", "videos per page (1-50)", "10")
    .option("--min-score <n>", "0-1: replaces the per-mode thresholds; 0 lists the best matches whatever their score")
    .option("--include-hidden", "also show segments hidden by feedback")
    .option(
      "--exact",
      "read every vector of the scope instead of the lists nearest the query (slower, full-scan recall)",
    )
    .action(
      async (
        query: string,
        opts: {
          account?: string;
          collection?: string;
          video?: string;
          modes?: string[];
          labels?: string[];
          page: string;
          perPage: string;
          minScore?: string;
          includeHidden?: boolean;
          exact?: boolean;
        },
        cmd: Command,
      ) => {
        const result = await ctx.withApp(cmd, async (app) => {
          const account = await app.services.accounts.resolve(opts.account);
          let collectionId: string | undefined;
          if (opts.collection !== undefined) {
            const c = await app.services.collections.findByName(account.id, opts.collection);
            if (!c)
              throw new AppError(
                "COLLECTION_NOT_FOUND",
                `No collection named "${opts.collection}" in account "${account.name}" (${account.id})`,
              );
            collectionId = c.id;
          }
          // The same one validation as the HTTP form: field names as in the form.
          const req = parseSearchRequest({
            query,
            collection_id: collectionId,
            video_id: opts.video,
            modes: opts.modes,
            labels: opts.labels,
            page: opts.page,
            per_page: opts.perPage,
            min_score: opts.minScore,
            include_hidden: opts.includeHidden ? "true" : undefined,
            exact: opts.exact ? "true" : undefined,
          });
          const r = await app.services.search.search(account.id, req);
          const hints =
            r.total === 0 ? emptySearchHints(req, r, await searchScope(app.services.videos, account.id, req)) : [];
          return { ...r, hints };
        });
        ctx.print(
          cmd,
          {
            data: result.videos,
            meta: {
              total: result.total,
              page: result.page,
              per_page: result.perPage,
              facets: result.facets,
              modes: result.modes,
              skipped_modes: result.skippedModes,
              ...(result.hints.length ? { hints: result.hints } : {}),
            },
          },
          () => human(result),
        );
      },
    );
}

function human(r: SearchResult & { hints: SearchHint[] }): string {
  const rows = r.videos.flatMap((v) =>
    v.segments.map((s) => ({
      rank: s.rank,
      video: v.filename.length > 28 ? `${v.filename.slice(0, 27)}…` : v.filename,
      type: s.type,
      start: s.timestamp_start.toFixed(2),
      end: s.timestamp_end.toFixed(2),
      score: s.score.toFixed(3),
      threshold: s.threshold_key,
      text: s.text_content ? (s.text_content.length > 48 ? `${s.text_content.slice(0, 47)}…` : s.text_content) : null,
      hidden: s.hidden ? "yes" : null,
    })),
  );
  const skipped = Object.entries(r.skippedModes).map(([m, why]) => `skipped ${m}: ${why}`);
  const head = `${r.total} matching video${r.total === 1 ? "" : "s"} (page ${r.page}, modes ${r.modes.join(", ") || "none"})`;
  return [
    head,
    ...skipped,
    rows.length
      ? table(rows, ["rank", "video", "type", "start", "end", "score", "threshold", "text", "hidden"])
      : "No moment matched.",
    ...r.hints.map((h) => `hint: ${h.message}`),
  ].join("\n");
}
