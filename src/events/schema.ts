export const EVENT_TYPES = [
  "video.created",
  "video.deleted",
  "job.completed",
  "job.failed",
  "credits.low",
  "credits.exhausted",
  "account.deleted",
  "webhook.ping",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventRecord {
  seq: number;
  id: string;
  account_id: string;
  type: EventType;
  payload: string;
  created_at: string;
  dispatched_at: string | null;
  /** The dispatcher fanning it out now, and until when (database clock, epoch ms). */
  claimed_by?: string | null;
  claim_expires_at?: number | null;
}
