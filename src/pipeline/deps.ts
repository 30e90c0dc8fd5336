import type { Logger } from "../core/logger.ts";
import type { InferencePool } from "../inference/pool.ts";
import type { VideoContent } from "../indexing/content.ts";
import type { LeaseQueue } from "../jobs/lease-queue.ts";
import type { JobService } from "../jobs/service.ts";
import type { LoopFilterPolicy } from "../media/decode.ts";
import type { MediaBins } from "../media/process.ts";
import type { VideoFiles } from "../videos/files.ts";
import type { VideoStore } from "../videos/store.ts";
import type { ActiveModel, ModelCatalog } from "../models/roles.ts";
import type { TextEngine } from "../ocr/video-text.ts";

export interface PipelineDeps {
  videos: VideoStore;
  /** The job records the tasks report to, and the job's end (jobs/service.ts owns those transactions). */
  jobs: Pick<
    JobService,
    "row" | "started" | "requeued" | "progress" | "setPending" | "searchable" | "complete" | "fail"
  >;
  /** Where the ingest task queues the OCR task that follows it. */
  tasks: Pick<LeaseQueue, "enqueue">;
  /** Writes the stages' rows (frames, shots, transcript, OCR lines): the one owner of a video's derived content. */
  content: VideoContent;
  files: VideoFiles;
  bins: MediaBins;
  models: ModelCatalog;
  /** Created on first use: a server with no models never starts worker threads. */
  pool: () => Promise<InferencePool>;
  /** Reads on-screen text (bounded worker threads, started on first use); null turns the stage off. */
  ocr: TextEngine | null;
  /** Whether this node claims OCR tasks: then ingest warms the engine while the frames decode. */
  ocrRunsHere?: boolean;
  /** Bounds on one video's OCR (config ocr_max_frames_per_minute, ocr_budget_secs_per_minute). */
  ocrLimits: { framesPerMinute: number; budgetSecsPerMinute: number };
  batchSize: number;
  /** Seconds between sampled frames (config frame_interval_secs); default 1. */
  frameIntervalSecs?: number;
  /** Loop filter in a full visual decode (config frame_loop_filter; decode.ts loopFilterFor); default "auto". */
  frameLoopFilter?: LoopFilterPolicy;
  /** ffmpeg processes a full visual decode may be split into (media/split-decode.ts); default 1. */
  frameDecodeProcesses?: number;
  /** Whisper's per-window token cap (config speech_max_tokens). */
  speechMaxTokens: number;
  logger: Logger;
}
