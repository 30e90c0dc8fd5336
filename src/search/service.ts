import { AppError, ValidationError, type ValidationIssue } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import { isInferenceError } from "../inference/errors.ts";
import { missingModel } from "../models/hints.ts";
import type { VideoFiles } from "../videos/files.ts";
import { meanNormalized, type QueryEncoder, type TranscriptSemanticSearch } from "./embedder.ts";
import { fuseModes, suppressDuplicates, type Fused } from "./fusion.ts";
import { checkImage, fetchImageUrl, QueryImageDecoder } from "./image-input.ts";
import type { SearchIndexes } from "./indexes.ts";
import { probeFor } from "./probe-policy.ts";
import { VectorModes } from "./vector-modes.ts";
import type { MediaLinks } from "./links.ts";
import { type Candidate, MIN_SCORE_BAND, sameStart } from "./moments.ts";
import type { SearchRequest, SearchResult, SearchVideo } from "./schema.ts";
import { labelsOf, type SearchScope, type SearchStore, type TranscriptHitRow } from "./store.ts";
import { LEXICAL_MODES, MODES, type Mode, THRESHOLDS } from "./thresholds.ts";
import type { FeedbackStore } from "./feedback-store.ts";
import { lexicalCandidates, LEXICAL_K, type LexicalHit, type LexicalSource } from "./lexical-mode.ts";
import type { OcrHitRow, OcrSearchStore } from "./ocr-store.ts";
import { responseLinks, shotOf, toSegment } from "./segments.ts";

/**
 * Credits hook (SPEC §3): when the account has a balance, a search must be affordable before it
 * runs and is charged after it succeeded. Provided by the credits domain.
 */
export interface SearchCredits {
  assertCanSpend(accountId: string): Promise<void>;
  chargeSearch(accountId: string): Promise<void>;
}

export interface SearchServiceDeps {
  store: SearchStore;
  /** Hidden segments and the account's tuned thresholds. */
  feedback: FeedbackStore;
  /** On-screen text lines (the `ocr` mode). */
  ocr: OcrSearchStore;
  indexes: SearchIndexes;
  encoder: QueryEncoder;
  /** Semantic transcript matching; absent until a `text` model and transcript vectors exist. */
  semantic?: TranscriptSemanticSearch;
  collections: { require(accountId: string, id: string): Promise<unknown> };
  videos: { require(accountId: string, id: string): Promise<{ collection_id: string }> };
  links: MediaLinks;
  files: VideoFiles;
  ffmpeg: string;
  allowNetworks: readonly string[];
  credits: SearchCredits;
  logger?: Logger;
  /** The pipeline's frame sampling interval (about one frame a second). */
  frameIntervalSecs?: number;
  /** Whether a speech model is installed; absent = assume so (transcripts then come from elsewhere). */
  speechModel?: () => boolean;
}

const TRANSCRIPT_K = LEXICAL_K;
/** Segments returned per video (the best ones, in fused order). */
export const MAX_SEGMENTS_PER_VIDEO = 20;

type ListName = Mode | "transcript-semantic";

interface Prepared {
  scope: SearchScope;
  modes: Mode[];
  skipped: Record<string, string>;
  text: string | null;
}

export class SearchService {
  /** The video and scene modes (vector-modes.ts). */
  private readonly vectorModes: VectorModes;
  /** Query vectors of image-only searches (they may probe the index's inverted lists). */

  /** The two lexical modes' full-text tables, reached through their stores. */
  private readonly transcripts: LexicalSource<TranscriptHitRow>;
  private readonly ocrLines: LexicalSource<OcrHitRow>;
  /** Query images (image / image_url), decoded per account in turn. */
  private readonly images: QueryImageDecoder;

  constructor(private readonly d: SearchServiceDeps) {
    this.vectorModes = new VectorModes(d, d.frameIntervalSecs ?? 1);
    this.images = new QueryImageDecoder(d.ffmpeg, () => d.files.ensureTmp());
    const st = d.store;
    this.transcripts = {
      mode: "transcript",
      memo: "transcript",
      search: async (sc, match, k, units) => await st.transcriptSearch(sc, match, k, units),
      matching: async (match, ids) => await st.transcriptMatching(match, ids),
      docFreq: async (a, match) => await st.transcriptDocFreq(a, match),
      count: async (a) => await st.transcriptCount(a),
    };
    const o = d.ocr;
    this.ocrLines = {
      mode: "ocr",
      memo: "ocr",
      cjkPairs: true,
      search: async (sc, match, k, units) => await o.search(sc, match, k, units),
      matching: async (match, ids) => await o.matching(match, ids),
      docFreq: async (a, match) => await o.docFreq(a, match),
      count: async (a) => await o.count(a),
    };
  }

  /** Effective thresholds of an account (the documented defaults where feedback never moved one). */
  async thresholds(accountId: string): Promise<Record<string, number>> {
    const rows = await this.d.feedback.thresholds(accountId);
    return Object.fromEntries(THRESHOLDS.map((t) => [t.key, rows.get(t.key)?.value ?? t.defaultValue]));
  }

  async search(accountId: string, req: SearchRequest): Promise<SearchResult> {
    const p = await this.prepare(accountId, req);
    const credits = this.d.credits;
    await credits.assertCanSpend(accountId);
    // Vector modes rank in the in-memory index: while it loads after a restart, wait (bounded), then 503.
    const vectorModes = p.modes.some((m) => !LEXICAL_MODES.includes(m));
    const modelId = this.d.encoder.embedder.modelId();
    if (vectorModes) await this.d.indexes.assertSearchable(accountId, modelId);

    // min_score replaces every per-mode cut for this request (SPEC §6); 0 keeps whatever matched.
    const thresholds =
      req.minScore === undefined
        ? await this.thresholds(accountId)
        : Object.fromEntries(THRESHOLDS.map((t) => [t.key, req.minScore!]));
    const allowShots = req.labels?.length ? await this.d.store.shotsWithLabels(p.scope, req.labels) : undefined;
    const vector = vectorModes ? await this.queryVector(accountId, req, p.text) : null;
    // How much of the index the vector modes read (probe-policy.ts): the lists nearest the query, or every row.
    const probe = vector
      ? probeFor({
          hasText: !!p.text,
          hasImage: !!req.image || req.imageUrl !== undefined,
          filtered: !!p.scope.collectionId || !!allowShots,
          exact: !!req.exact,
        })
      : undefined;

    // The lexical modes' look-ups run on the store's reader threads (store/sqlite/read-threads.ts)
    // or in PostgreSQL: started first, they proceed while the vector modes rank on this thread.
    const started = new Map<ListName, Promise<Candidate[]>>();
    if (p.modes.includes("transcript")) {
      started.set(
        "transcript",
        this.lexicalMode("transcript", p.scope, p.text!, thresholds["transcript:default"], allowShots),
      );
      if (this.d.semantic?.available())
        started.set("transcript-semantic", this.semanticTranscript(p.scope, p.text!, thresholds, allowShots));
    }
    if (p.modes.includes("ocr"))
      started.set("ocr", this.lexicalMode("ocr", p.scope, p.text!, thresholds["ocr:default"], allowShots));
    // Each is awaited below; if a vector mode throws first, their failures must not go unhandled.
    for (const pending of started.values()) pending.catch(() => {});

    const ranked = new Map<ListName, Candidate[]>();
    for (const mode of p.modes) {
      if (mode === "video")
        ranked.set(
          "video",
          await this.vectorModes.video(
            p.scope,
            modelId!,
            vector!,
            thresholds,
            allowShots,
            req.minScore === undefined ? undefined : MIN_SCORE_BAND,
            probe,
          ),
        );
      if (mode === "scene")
        ranked.set(
          "scene",
          await this.vectorModes.scene(p.scope, modelId!, vector!, p.text, thresholds, allowShots, probe),
        );
    }
    for (const [name, pending] of started) ranked.set(name, await pending);
    // Fusion sees the lists in the request's mode order, as when they ran one after another.
    const order: ListName[] = p.modes.flatMap((m): ListName[] =>
      m === "transcript" ? ["transcript", "transcript-semantic"] : [m as ListName],
    );
    const lists = new Map<ListName, Candidate[]>();
    for (const name of order) if (ranked.has(name)) lists.set(name, ranked.get(name)!);

    // Fuse, drop near-duplicates (hidden segments still suppress theirs), then hide.
    const fused = suppressDuplicates(fuseModes(lists));
    const hiddenStarts = await this.d.feedback.hiddenStarts(accountId, [...new Set(fused.map((f) => f.videoId))]);
    const isHidden = (c: Fused) => (hiddenStarts.get(c.videoId) ?? []).some((t) => sameStart(t, c.start));
    const visible = fused.map((c) => ({ c, hidden: isHidden(c) })).filter((x) => req.includeHidden || !x.hidden);

    // Group by video, best first; rank is the position in the fused list.
    const groups = new Map<string, { c: Fused; hidden: boolean; rank: number }[]>();
    visible.forEach((x, i) => {
      let g = groups.get(x.c.videoId);
      if (!g) groups.set(x.c.videoId, (g = []));
      if (g.length < MAX_SEGMENTS_PER_VIDEO) g.push({ ...x, rank: i + 1 });
    });
    const videoIds = [...groups.keys()];
    const pageIds = videoIds.slice((req.page - 1) * req.perPage, req.page * req.perPage);
    // Only the page's videos are rendered: their rows are the only ones read (a query can match
    // hundreds of videos; `total` counts them all without their rows).
    const infos = await this.d.store.videos(accountId, pageIds);
    const shots = await this.d.indexes.shotsOfVideos(accountId, videoIds);

    // Facets count every matching clip (all pages, past the per-video cap too).
    const facets = { scene_labels: {} as Record<string, number>, types: {} as Record<string, number> };
    for (const { c } of visible) {
      facets.types[c.type] = (facets.types[c.type] ?? 0) + 1;
      for (const label of labelsOf(shotOf(shots.get(c.videoId) ?? [], c)))
        facets.scene_labels[label] = (facets.scene_labels[label] ?? 0) + 1;
    }

    const videos: SearchVideo[] = [];
    const playback = await this.d.links.playbackUrls(pageIds.filter((id) => infos.has(id)));
    const render = { links: responseLinks(this.d.links, playback), files: this.d.files };
    for (const videoId of pageIds) {
      const info = infos.get(videoId);
      if (!info) continue;
      videos.push({
        video_id: videoId,
        filename: info.filename,
        collection_id: info.collection_id,
        status: info.status,
        segments: await Promise.all(
          groups.get(videoId)!.map(
            async (x) =>
              await toSegment(render, info, shots.get(videoId) ?? [], x.c, {
                hidden: x.hidden,
                rank: x.rank,
                withBase64: req.includeThumbnailBase64,
              }),
          ),
        ),
      });
    }

    await credits.chargeSearch(accountId);
    return {
      videos,
      total: videoIds.length,
      page: req.page,
      perPage: req.perPage,
      facets,
      modes: p.modes,
      skippedModes: p.skipped,
    };
  }

  // ---- request checks ------------------------------------------------------------------------

  /**
   * Each field of `req` was validated once by its caller's schema (searchFormSchema for HTTP and
   * the CLI, the agent tool's input schema); here, once for every caller, the rules across fields,
   * then what needs the store or the models.
   */
  private async prepare(accountId: string, req: SearchRequest): Promise<Prepared> {
    const issues: ValidationIssue[] = [];
    const text = req.query ?? null;
    if (req.image && req.imageUrl)
      issues.push({ loc: ["body", "image_url"], msg: "Send either image or image_url, not both", type: "value_error" });
    if (req.query === undefined && !req.image && req.imageUrl === undefined) {
      issues.push({ loc: ["body", "query"], msg: "One of query, image or image_url is required", type: "missing" });
    }
    const requested = req.modes ? [...new Set(req.modes)] : null;
    if (requested?.includes("transcript") && !text && !issues.length) {
      issues.push({
        loc: ["body", "modes"],
        msg: "transcript mode searches what was said: it needs a text query",
        type: "value_error",
        input: "transcript",
      });
    }
    if (requested?.includes("ocr") && !text && !issues.length) {
      issues.push({
        loc: ["body", "modes"],
        msg: "ocr mode searches text shown on screen: it needs a text query",
        type: "value_error",
        input: "ocr",
      });
    }
    if (issues.length) throw new ValidationError(issues);

    const scope: SearchScope = { accountId };
    if (req.collectionId) {
      await this.d.collections.require(accountId, req.collectionId);
      scope.collectionId = req.collectionId;
    }
    if (req.videoId) {
      await this.d.videos.require(accountId, req.videoId);
      scope.videoId = req.videoId;
    }

    const embedder = this.d.encoder.embedder;
    // Transcripts are searchable without a speech model when some were made earlier; with neither,
    // the mode could only answer [] — it says why instead.
    const noSpeech =
      this.d.speechModel &&
      !this.d.speechModel() &&
      (await this.d.indexes.memo(
        accountId,
        "transcript-n",
        async () => await this.d.store.transcriptCount(accountId),
      )) === 0;
    const modes: Mode[] = [];
    const skipped: Record<string, string> = {};
    for (const mode of requested ?? MODES) {
      if (LEXICAL_MODES.includes(mode)) {
        if (!text) skipped[mode] = "needs a text query";
        else if (mode !== "transcript" || !noSpeech) modes.push(mode);
        else if (requested)
          throw new AppError(
            "MODEL_NOT_INSTALLED",
            `The transcript mode needs transcripts and there are none: ${missingModel("speech")}; then vsearch reindex`,
          );
        else skipped[mode] = `MODEL_NOT_INSTALLED: ${missingModel("speech")}`;
      } else if (embedder.available()) {
        modes.push(mode);
      } else if (requested) {
        throw new AppError(
          "MODEL_NOT_INSTALLED",
          `The ${mode} mode needs an image-text model: ${missingModel("image-text")}`,
        );
      } else {
        skipped[mode] = `MODEL_NOT_INSTALLED: ${missingModel("image-text")}`;
      }
    }
    if (!modes.length && (req.image || req.imageUrl !== undefined)) {
      throw new AppError(
        "MODEL_NOT_INSTALLED",
        `An image query needs an image-text model: ${missingModel("image-text")}`,
      );
    }
    return { scope, modes, skipped, text };
  }

  /** Text and/or image → one unit vector (both: their normalised mean). */
  private async queryVector(accountId: string, req: SearchRequest, text: string | null): Promise<Float32Array> {
    try {
      const parts: Float32Array[] = [];
      if (req.image || req.imageUrl !== undefined) {
        const loc = req.image ? "image" : "image_url";
        const bytes = req.image ?? (await fetchImageUrl(req.imageUrl!, this.d.allowNetworks));
        checkImage(bytes, loc);
        const rgb = await this.images.decode(accountId, bytes, loc);
        parts.push(await this.d.encoder.image(rgb));
      }
      if (text) parts.push(await this.d.encoder.text(text));
      return parts.length === 1 ? parts[0] : meanNormalized(parts);
    } catch (e) {
      if (isInferenceError(e)) {
        if (e.code === "MODEL_NOT_INSTALLED") throw new AppError("MODEL_NOT_INSTALLED", e.message);
        this.d.logger?.error("query embedding failed", { code: e.code, err: e.message });
        throw new AppError("SEARCH_UNAVAILABLE", "The model could not encode the query; try again");
      }
      throw e;
    }
  }

  // ---- modes ---------------------------------------------------------------------------------

  /** A lexical mode (what was said, what was shown): lexical-mode.ts finds and scores it. */
  private async lexicalMode(
    mode: "transcript" | "ocr",
    scope: SearchScope,
    text: string,
    cut: number,
    allowShots?: Map<string, Set<number>>,
  ): Promise<Candidate[]> {
    const source: LexicalSource<LexicalHit> = mode === "transcript" ? this.transcripts : this.ocrLines;
    return await lexicalCandidates(
      source,
      this.d.indexes,
      scope,
      text,
      cut,
      allowShots ? async (hits) => await this.insideShots(hits, allowShots) : undefined,
    );
  }

  private async semanticTranscript(
    scope: SearchScope,
    text: string,
    th: Record<string, number>,
    allowShots?: Map<string, Set<number>>,
  ): Promise<Candidate[]> {
    const hits = await this.d.semantic!.search(scope, text, TRANSCRIPT_K);
    const kept = allowShots
      ? await this.insideShots(
          hits.map((h) => ({ ...h, video_id: h.videoId, start_secs: h.start, end_secs: h.end })),
          allowShots,
        )
      : hits;
    return kept
      .filter((h) => h.score >= th["transcript:default"])
      .map((h) => ({
        videoId: h.videoId,
        type: "transcript" as const,
        mode: "transcript" as const,
        start: h.start,
        end: h.end,
        score: h.score,
        raw: h.similarity,
        thresholdKey: "transcript:default",
        text: h.text,
        shotIndex: null,
      }));
  }

  /** Transcript hits overlapping an allowed shot (label filter). */
  private async insideShots<T extends { video_id: string; start_secs: number; end_secs: number }>(
    hits: T[],
    allow: Map<string, Set<number>>,
  ): Promise<T[]> {
    const shots = await this.d.store.shotsOfVideos([...allow.keys()]);
    return hits.filter((h) =>
      (shots.get(h.video_id) ?? []).some(
        (s) => allow.get(h.video_id)!.has(s.shot_index) && s.start_secs < h.end_secs && s.end_secs > h.start_secs,
      ),
    );
  }
}
