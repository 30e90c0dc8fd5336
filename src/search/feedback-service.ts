import { ValidationError } from "../core/errors.ts";
import { nowIso } from "../core/ids.ts";
import type { UnitOfWork } from "../store/unit-of-work.ts";
import type { FeedbackInput } from "./schema.ts";
import type { SearchStore } from "./store.ts";
import type { FeedbackRow, FeedbackStore } from "./feedback-store.ts";
import { clampThreshold, feedbackStep, THRESHOLDS, thresholdSpec } from "./thresholds.ts";

/**
 * Search feedback (SPEC §6). One row per segment (video + start within 0.01 s): `down` hides the
 * segment from the account's later searches; both signals move the threshold named by
 * `threshold_key` one bounded step (docs/SEARCH.md). Sending feedback again for the same segment
 * replaces it, and clearing it takes its step back out, so one segment moves a threshold by one
 * step at most.
 */
export class FeedbackService {
  constructor(
    private readonly uow: UnitOfWork,
    /** Index reads: whether a segment starts at the given time. */
    private readonly index: SearchStore,
    private readonly store: FeedbackStore,
    private readonly videos: { require(accountId: string, id: string): Promise<unknown> },
    private readonly now: () => number = Date.now,
  ) {}

  async submit(accountId: string, input: FeedbackInput): Promise<void> {
    await this.videos.require(accountId, input.video_id);
    if (input.threshold_key !== null && !thresholdSpec(input.threshold_key)) {
      throw new ValidationError([
        {
          loc: ["body", "threshold_key"],
          msg: `Unknown threshold key; known keys: ${THRESHOLDS.map((t) => t.key).join(", ")}`,
          type: "enum",
          input: input.threshold_key,
          ctx: { expected: THRESHOLDS.map((t) => t.key).join(", ") },
        },
      ]);
    }
    if (!(await this.index.segmentStartsAt(input.video_id, input.timestamp_start))) {
      throw new ValidationError([
        {
          loc: ["body", "timestamp_start"],
          msg: "No segment of this video starts at that time (within 0.01 s); send timestamp_start as search returned it",
          type: "value_error",
          input: input.timestamp_start,
        },
      ]);
    }
    const at = nowIso(this.now());
    await this.uow.run(async () => {
      // The account's lock first: two feedbacks moving one threshold run one after the other.
      await this.store.lockAccount(accountId);
      const existing = await this.store.findFeedback(accountId, input.video_id, input.timestamp_start);
      if (existing) await this.revert(accountId, existing, at);
      const delta = input.threshold_key ? await this.move(accountId, input.threshold_key, input.signal, at) : 0;
      const row = {
        signal: input.signal,
        query: input.query,
        raw_score: input.raw_score,
        threshold_key: input.threshold_key,
        threshold_delta: delta,
        updated_at: at,
      };
      if (existing) await this.store.updateFeedback(existing.id, row);
      else
        await this.store.insertFeedback({
          ...row,
          account_id: accountId,
          video_id: input.video_id,
          timestamp_start: input.timestamp_start,
          created_at: at,
        });
    });
  }

  /** Removes the feedback on a segment (and its threshold step); nothing to remove is fine. */
  async clear(accountId: string, videoId: string, timestampStart: number): Promise<void> {
    await this.videos.require(accountId, videoId);
    const at = nowIso(this.now());
    await this.uow.run(async () => {
      await this.store.lockAccount(accountId);
      const existing = await this.store.findFeedback(accountId, videoId, timestampStart);
      if (!existing) return;
      await this.revert(accountId, existing, at);
      await this.store.deleteFeedback(existing.id);
    });
  }

  /** Applies one step; returns what was actually applied (less at a bound). */
  private async move(accountId: string, key: string, signal: "up" | "down", at: string): Promise<number> {
    const spec = thresholdSpec(key)!;
    const row = (await this.store.thresholds(accountId)).get(key);
    const current = row?.value ?? spec.defaultValue;
    const next = round6(clampThreshold(spec, current + feedbackStep(spec, signal)));
    await this.store.upsertThreshold(
      accountId,
      key,
      next,
      (row?.ups ?? 0) + (signal === "up" ? 1 : 0),
      (row?.downs ?? 0) + (signal === "down" ? 1 : 0),
      at,
    );
    return round6(next - current);
  }

  private async revert(accountId: string, fb: FeedbackRow, at: string): Promise<void> {
    const spec = fb.threshold_key ? thresholdSpec(fb.threshold_key) : undefined;
    if (!spec) return;
    const row = (await this.store.thresholds(accountId)).get(spec.key);
    const current = row?.value ?? spec.defaultValue;
    const ups = Math.max(0, (row?.ups ?? 0) - (fb.signal === "up" ? 1 : 0));
    const downs = Math.max(0, (row?.downs ?? 0) - (fb.signal === "down" ? 1 : 0));
    await this.store.upsertThreshold(
      accountId,
      spec.key,
      round6(clampThreshold(spec, current - fb.threshold_delta)),
      ups,
      downs,
      at,
    );
  }
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
