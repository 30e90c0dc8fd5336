import { JobFailure } from "../jobs/failure.ts";
import type { StageName, StageOutcome } from "../videos/schema.ts";
import type { VideoStore } from "../videos/store.ts";

/** Share of progress_pct each stage accounts for (they add up to 100). */
const WEIGHT: Record<StageName, number> = {
  probe: 2,
  shots: 8,
  frames: 5,
  embeddings: 40,
  scenes: 5,
  audio: 2,
  transcript: 23,
  thumbnails: 5,
  ocr: 10,
};

/**
 * Bookkeeping for one run of the pipeline over one video: each stage's outcome (ran / skipped with
 * the reason) recorded on the video as it happens, progress_pct as stages advance, timing, and the
 * abort check between stages.
 */
export class StageRun {
  private readonly stages: Partial<Record<StageName, StageOutcome>> = {};
  private done = 0;
  /** Stages under way (some run side by side) and how far each is, 0..1. */
  private readonly partial = new Map<StageName, number>();
  private shown = 0;

  constructor(
    private readonly videos: VideoStore,
    private readonly videoId: string,
    private readonly progress: (stage: string, pct: number) => void,
    private readonly signal: AbortSignal,
    /** Outcomes a resumed run starts from (the first stages of an interrupted job). */
    resumed?: Partial<Record<StageName, StageOutcome>>,
  ) {
    for (const [stage, outcome] of Object.entries(resumed ?? {}) as [StageName, StageOutcome][]) {
      if (!(stage in WEIGHT)) continue;
      this.stages[stage] = outcome;
      if (outcome.status !== "pending") this.done += WEIGHT[stage];
    }
  }

  isPending(stage: StageName): boolean {
    return this.stages[stage]?.status === "pending";
  }

  /** Progress inside a stage (`within` 0..1 of its share). */
  async report(stage: StageName, within = 1): Promise<void> {
    this.partial.set(stage, Math.min(1, Math.max(0, within)));
    const pct = this.pct();
    this.progress(stage, pct);
    await this.videos.update(this.videoId, { progress_pct: pct });
  }

  /** A stage that will run after the video is searchable: listed as `pending` until it does. */
  async pending(stage: StageName, reason: string): Promise<void> {
    this.stages[stage] = { status: "pending", reason };
    await this.videos.setStage(this.videoId, stage, this.stages[stage]);
  }

  async record(stage: StageName, outcome: StageOutcome): Promise<void> {
    this.stages[stage] = outcome;
    this.partial.delete(stage);
    this.done += WEIGHT[stage];
    const pct = this.pct();
    // This stage's key only: another run's StageRun on the same video (the OCR task beside a
    // re-index) writes its own stages, and neither overwrites the other's.
    await this.videos.setStage(this.videoId, stage, outcome, pct);
    this.progress(stage, pct);
  }

  /** Finished shares plus the parts of those under way; never goes back, never says 100 early. */
  private pct(): number {
    let p = this.done;
    for (const [stage, within] of this.partial) p += WEIGHT[stage] * within;
    this.shown = Math.max(this.shown, Math.min(99, Math.round(p * 10) / 10));
    return this.shown;
  }

  async timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
    const t0 = performance.now();
    const v = await fn();
    return [v, Math.round(performance.now() - t0)];
  }

  check(): void {
    if (this.signal.aborted) throw new JobFailure("ABORTED", "Indexing was interrupted");
  }
}
