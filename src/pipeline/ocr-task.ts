import type { JobError } from "../jobs/failure.ts";
import type { TaskContext, TaskHandler } from "../jobs/lease-queue.ts";
import type { JobRow } from "../jobs/schema.ts";
import type { TaskRow } from "../jobs/task-store.ts";
import { type MediaInfo, probeMedia } from "../media/probe.ts";
import type { OcrLineInput } from "../indexing/store.ts";
import type { StageName, StageOutcome, VideoRow } from "../videos/schema.ts";
import type { PipelineDeps } from "./deps.ts";
import { type DecodePlan, planDecode } from "./decode-plan.ts";
import { isMediaStoreUnavailable } from "../core/errors.ts";
import { aborted, isKnownFailure, jobProgress, toFailure } from "./failures.ts";
import { ocrStage } from "./stage-ocr.ts";
import { StageRun } from "./stage-run.ts";

export const OCR_PENDING_REASON = "on-screen text is read after the video is searchable";
export const OCR_OFF_REASON = "on-screen text is turned off (ocr_threads = 0)";

/** What the ingest task hands the OCR task (its payload): the probe and the run's one decode plan. */
export interface OcrHandOver {
  info: MediaInfo;
  plan: DecodePlan;
}

/**
 * The OCR task (kind `ocr`, SPEC §12): on-screen text of a video that is already searchable,
 * queued by the transaction that made it so (ingest.ts). Its own kind of task, so another
 * account's upload does not wait behind a long read (the claim is fair across accounts), and a
 * worker elsewhere can run it. Its outcome (`ran`, `skipped` or `failed` with the reason) is the
 * video's `ocr` stage; either way the job ends with it (`done`, job.completed, credits). Run again
 * after a crash, it reads the text again (the lines are replaced in the same transaction).
 */
export class OcrTask implements TaskHandler {
  constructor(private readonly d: PipelineDeps) {}

  async run(task: TaskRow, ctx: TaskContext): Promise<() => Promise<void> | void> {
    const d = this.d;
    const video = await d.videos.getById(task.video_id);
    if (!video) return () => {};
    const job = task.job_id ? await d.jobs.row(task.job_id) : null;
    const stages = this.stagesOf(video, job, ctx.signal);
    await stages.report("ocr", 0);
    let lines: OcrLineInput[] | null = null;
    let outcome: StageOutcome;
    try {
      const read = await this.read(task, video, stages, ctx.signal);
      lines = read.lines;
      outcome = read.outcome;
    } catch (err) {
      if (ctx.signal.aborted) throw aborted();
      if (isMediaStoreUnavailable(err)) throw err; // the queue hands it back: it runs again once the bucket answers
      outcome = this.failedOutcome(video, err);
    }
    return async () => await this.end(video, job, stages, outcome, lines);
  }

  /** Its workers died too often (or something unexpected): the stage failed, the job still ends. */
  async fail(task: TaskRow, error: JobError): Promise<void> {
    const video = await this.d.videos.getById(task.video_id);
    if (!video) return;
    const job = task.job_id ? await this.d.jobs.row(task.job_id) : null;
    const stages = this.stagesOf(video, job, new AbortController().signal);
    const what = error.code === "CRASHED_REPEATEDLY" ? `reading the text ${error.message}` : error.message;
    await this.end(video, job, stages, { status: "failed", reason: `${error.code}: ${what}` }, null);
  }

  /** The stage's rows and outcome, and the job's end, in one transaction (the task's outcome). */
  private async end(
    video: VideoRow,
    job: JobRow | null,
    stages: StageRun,
    outcome: StageOutcome,
    lines: OcrLineInput[] | null,
  ): Promise<void> {
    const d = this.d;
    await d.content.commitStage(video.id, async () => {
      if (lines) {
        await d.content.replaceOcrLines(
          { videoId: video.id, accountId: video.account_id, collectionId: video.collection_id },
          lines,
        );
      }
      await stages.record("ocr", outcome);
      if (job) {
        await d.jobs.setPending(job.id, []);
        await d.jobs.complete(job);
      }
    });
  }

  private async read(
    task: TaskRow,
    video: VideoRow,
    stages: StageRun,
    signal: AbortSignal,
  ): Promise<{ outcome: StageOutcome; lines: OcrLineInput[] | null }> {
    const d = this.d;
    if (!d.ocr) return { outcome: { status: "skipped", reason: OCR_OFF_REASON }, lines: null };
    // Held against the node's media cache bound (media-cache.ts) while the engine reads it.
    return await d.files.withLocal(video.source_path, (source) => this.readSource(video, source, task, stages, signal));
  }

  private async readSource(
    video: VideoRow,
    source: string,
    task: TaskRow,
    stages: StageRun,
    signal: AbortSignal,
  ): Promise<{ outcome: StageOutcome; lines: OcrLineInput[] | null }> {
    const d = this.d;
    // Handed over by the ingest task; a task carried over from an older version probes again.
    const handOver = task.payload ? (JSON.parse(task.payload) as OcrHandOver) : null;
    const info = handOver?.info ?? (await probeMedia(d.bins, source, { decodeCheck: false }).catch(toFailure));
    if (!info.width || !info.height)
      return { outcome: { status: "skipped", reason: "the video stream has no picture size" }, lines: null };
    const plan = handOver?.plan ?? (await planDecode(d, source, info, null));
    const { outcome, lines } = await ocrStage(d, {
      videoId: video.id,
      source,
      info,
      shots: await d.content.shotSpans(video.id),
      decode: plan,
      signal,
      onProgress: async (f) => await stages.report("ocr", f),
    }).catch(toFailure);
    stages.check(); // stopped mid-way: write nothing
    return { lines, outcome };
  }

  private failedOutcome(video: VideoRow, err: unknown): StageOutcome {
    const known = isKnownFailure(err);
    if (!known)
      this.d.logger.error("OCR task failed", {
        video_id: video.id,
        err: err instanceof Error ? err.stack : String(err),
      });
    const code = known ? err.code : "INTERNAL_ERROR";
    return {
      status: "failed",
      reason: known ? `${code}: ${err.message}` : `${code}: the stage failed unexpectedly (see the server log)`,
    };
  }

  /** The video's stage record as the ingest task left it; progress continues from its share. */
  private stagesOf(video: VideoRow, job: JobRow | null, signal: AbortSignal): StageRun {
    const recorded = JSON.parse(video.stages || "{}") as Partial<Record<StageName, StageOutcome>>;
    const progress = job ? jobProgress(this.d.jobs, job.id) : () => {};
    return new StageRun(this.d.videos, video.id, progress, signal, recorded);
  }
}
