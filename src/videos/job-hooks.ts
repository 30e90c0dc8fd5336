import type { EventPublisher } from "../events/bus.ts";
import type { JobHooks } from "../jobs/service.ts";
import type { VideoFiles } from "./files.ts";
import type { VideoStore } from "./store.ts";

/**
 * What a job's end does to its video, inside the job's own transaction (jobs/service.ts): a retry
 * puts the video back to `queued`; completion makes it `ready` with its storage counted and charges
 * the indexing credits; failure records the error on the video; the moment it becomes searchable
 * queues what must follow it (the web rendition, SPEC §11). Named here so the flow is found by
 * name from JobService rather than read out of the composition root.
 */
export function videoJobHooks(d: {
  videos: VideoStore;
  files: VideoFiles;
  bus: EventPublisher;
  /** Credits for indexing `durationSecs` of video (credits/service.ts chargeIndexing). */
  charge: (accountId: string, durationSecs: number) => Promise<void>;
  /** The web rendition's queueing (playback/renditions.ts). */
  queueRendition: (videoId: string, accountId: string) => Promise<void>;
}): JobHooks {
  return {
    resetVideo: async (id) =>
      await d.videos.update(id, { status: "queued", progress_pct: 0, error_code: null, error_message: null }),
    bus: d.bus,
    videoDone: async (id) => {
      const v = await d.videos.getById(id);
      if (!v) return null;
      await d.videos.update(id, { status: "ready", progress_pct: 100, storage_bytes: d.files.bytesOf(id) });
      return { durationSecs: v.duration_secs ?? 0 };
    },
    videoFailed: async (id, error) =>
      await d.videos.update(id, { status: "failed", error_code: error.code, error_message: error.message }),
    charge: d.charge,
    searchable: d.queueRendition,
  };
}
