import { join } from "node:path";
import type { Logger } from "../core/logger.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { VideoFiles } from "../videos/files.ts";
import { QueryEncoder, type QueryEmbedder, type TranscriptSemanticSearch } from "./embedder.ts";
import { FeedbackService } from "./feedback-service.ts";
import { SearchIndexes } from "./indexes.ts";
import type { IndexWarmOptions } from "./index-warmer.ts";
import { type MemoryIndexOptions, MemoryVectorBackend } from "./memory-backend.ts";
import { ExactVectorCache } from "./vector-cache.ts";
import type { MediaLinks } from "./links.ts";
import { MomentService } from "./moment-service.ts";
import { type SearchCredits, SearchService } from "./service.ts";
import type { SearchStore } from "./store.ts";
import type { FeedbackStore } from "./feedback-store.ts";
import type { OcrSearchStore } from "./ocr-store.ts";
import type { VectorChangeStore } from "./vector-change-store.ts";

/** The search domain's stores, built on the open store by the composition root. */
export interface SearchStores {
  search: SearchStore;
  ocr: OcrSearchStore;
  feedback: FeedbackStore;
  /** The vector rows' change log (the index snapshot's watermark); absent: no snapshot. */
  changes?: VectorChangeStore;
}

export interface SearchDomainOptions {
  stores: SearchStores;
  /** Transactions (feedback moves a threshold with its row). */
  uow: UnitOfWork;
  /** Budget of the exact-vector cache used when rescoring (0 turns it off). */
  vectorCacheBytes?: number;
  /** In-memory vector index tuning (tests lower trainAt); defaults otherwise. */
  vectorIndex?: MemoryIndexOptions;
  /** `<data dir>/index`: the index's snapshot and memory-budget state (absent: neither). */
  indexDir?: string;
  /** vector_memory_budget in bytes (0 or absent: no limit). */
  vectorMemoryBudgetBytes?: number;
  /** The background warm-up of the in-memory index after the app starts (slice, page, a search's wait). */
  warm?: IndexWarmOptions;
  files: VideoFiles;
  videos: {
    require(
      accountId: string,
      id: string,
    ): Promise<{ id: string; collection_id: string; duration_secs: number | null; poster_path: string | null }>;
  };
  collections: { require(accountId: string, id: string): Promise<unknown> };
  links: MediaLinks;
  ffmpeg: string;
  allowNetworks: readonly string[];
  embedder: QueryEmbedder;
  semantic?: TranscriptSemanticSearch;
  /** Whether a speech model is installed (search says so when transcripts are missing for lack of one). */
  speechModel?: () => boolean;
  credits: SearchCredits;
  logger?: Logger;
  now?: () => number;
}

export interface SearchDomain {
  indexes: SearchIndexes;
  search: SearchService;
  feedback: FeedbackService;
  moments: MomentService;
  encoder: QueryEncoder;
}

/** Builds the search domain for the composition root. */
export function createSearchDomain(o: SearchDomainOptions): SearchDomain {
  const store = o.stores.search;
  const indexes = new SearchIndexes(
    store,
    new MemoryVectorBackend(store, new ExactVectorCache(o.vectorCacheBytes ?? 0), {
      index: o.vectorIndex,
      changes: o.stores.changes,
      snapshot: o.indexDir ? { path: join(o.indexDir, "vectors.snap") } : undefined,
      memoryBudgetBytes: o.vectorMemoryBudgetBytes,
      stateDir: o.indexDir,
      logger: o.logger,
    }),
    {
      ...o.warm,
      logger: o.logger,
    },
  );
  const encoder = new QueryEncoder(o.embedder);
  const ocr = o.stores.ocr;
  const feedbackStore = o.stores.feedback;
  const search = new SearchService({
    store,
    feedback: feedbackStore,
    ocr,
    indexes,
    encoder,
    semantic: o.semantic,
    speechModel: o.speechModel,
    collections: o.collections,
    videos: o.videos,
    links: o.links,
    files: o.files,
    ffmpeg: o.ffmpeg,
    allowNetworks: o.allowNetworks,
    credits: o.credits,
    logger: o.logger,
  });
  return {
    indexes,
    search,
    encoder,
    feedback: new FeedbackService(o.uow, store, feedbackStore, o.videos, o.now),
    moments: new MomentService(store, ocr, o.videos, o.links),
  };
}
