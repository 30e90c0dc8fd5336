import { isStorageError } from "../core/storage.ts";
import { isInferenceError } from "../inference/errors.ts";
import { JobFailure } from "../jobs/failure.ts";
import { isMediaError } from "../media/errors.ts";
import { OcrError } from "../ocr/engine.ts";
import type { JobService } from "../jobs/service.ts";

/** Media and model errors become the job's `{code, message}`; anything else stays unexpected. */
export function toFailure(e: unknown): never {
  if (e instanceof JobFailure) throw e;
  if (isMediaError(e)) throw new JobFailure(e.code, e.message);
  if (isInferenceError(e)) throw new JobFailure(e.code, e.message);
  throw e;
}

/** An error whose code and message may be shown (anything else is logged and shown as INTERNAL_ERROR). */
export const isKnownFailure = (e: unknown): e is Error & { code: string } =>
  e instanceof JobFailure || e instanceof OcrError || isMediaError(e) || isInferenceError(e);

/** The error that made a run fail: a stage's own, not the ABORTED of the stage stopped because of it. */
export function firstCause(results: PromiseSettledResult<unknown>[]): unknown {
  const errors = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason);
  return errors.find((e) => !(e instanceof JobFailure && e.code === "ABORTED")) ?? errors[0];
}

export const aborted = () => new JobFailure("ABORTED", "Indexing was interrupted");

/**
 * The job's stage and progress as a task reports them: a new stage is written at once, progress
 * within a stage at most every 500 ms (the video's own progress is written by StageRun).
 */
export function jobProgress(jobs: Pick<JobService, "progress">, jobId: string): (stage: string, pct: number) => void {
  let last = 0;
  let lastStage = "";
  // One write in flight at a time; a report arriving meanwhile replaces the one waiting (the
  // latest wins), so a fast stage never piles up writes. A write's failure other than a full disk
  // surfaces at the next report (the stage then fails, as when the write was synchronous).
  let inflight = false;
  let waiting: [string, number] | null = null;
  let failure: unknown = null;
  const flush = () => {
    const next = waiting;
    if (!next) return;
    waiting = null;
    inflight = true;
    // Runs on while the stage goes on (the stage's own writes decide); its failure is kept above.
    void jobs
      .progress(jobId, next[0], next[1])
      .catch((e: unknown) => {
        // Advisory: the stage's own writes decide whether the task can go on.
        if (!isStorageError(e)) failure ??= e;
      })
      .finally(() => {
        inflight = false;
        flush();
      });
  };
  return (stage, pct) => {
    if (failure) throw failure;
    const t = Date.now();
    if (t - last < 500 && stage === lastStage) return;
    last = t;
    lastStage = stage;
    waiting = [stage, pct];
    if (!inflight) flush();
  };
}
